//! The structural layer after a rewrite: the whole program when nothing is known about the
//! original, otherwise only what the step changed (see [`crate::ir::validate::validate_since`]).

use super::{Engine, Rewrite};
use crate::ir::validate::{validate, validate_since, Fresh, InvalidIr, Since};
use crate::ir::{Constant, NodeId, Program};
use std::collections::{BTreeSet, HashMap};

impl Engine {
    /// Validates `p` after a rewrite of `after.original`: only what the step changed when the
    /// original is known valid (the last program this engine validated, or checked whole now)
    /// and the step kept every declaration and symbol; the whole program otherwise. Debug
    /// builds (every test) also validate the whole program and require the same verdict.
    pub(super) fn validate(&mut self, after: &Rewrite, p: &Program) -> Result<(), InvalidIr> {
        let original = after.original;
        let changes = after.changes;
        if self.valid.as_deref() != Some(after.original_hash) && validate(original).is_ok() {
            self.valid = Some(after.original_hash.to_string());
        }
        let known = self.valid.as_deref() == Some(after.original_hash);
        if !known || changes.symbols {
            return validate(p);
        }
        // The declarations and constant values the step added, changed or removed.
        let same_value =
            |(name, c): &(&String, &Constant), q: &Program| q.constants.get(*name) == Some(*c);
        let names: BTreeSet<String> = (changes.declared.iter())
            .chain((p.constants.iter().filter(|c| !same_value(c, original))).map(|(k, _)| k))
            .chain((original.constants.iter().filter(|c| !same_value(c, p))).map(|(k, _)| k))
            .cloned()
            .collect();
        // One hash lookup per node the validator passes (it asks every node of the scopes it
        // enters): new and modified nodes whole, maps around changes for their changed parts.
        let mut fresh: HashMap<NodeId, Fresh> = (changes.bodies.iter())
            .map(|&id| (id, Fresh::Changed))
            .collect();
        fresh.extend((changes.added.iter().chain(&changes.modified)).map(|&id| (id, Fresh::Whole)));
        let is = |ids: &[NodeId], id: NodeId| ids.binary_search(&id).is_ok();
        let since = Since {
            node: &|n| fresh.get(&n.id).copied().unwrap_or(Fresh::No),
            taken_elsewhere: &|id| {
                is(&changes.added, id) && id.0 < original.next_id() && original.node(id).is_some()
            },
            names: Some(&names),
            signature: !p.inputs.shared_with(&original.inputs)
                || !p.outputs.shared_with(&original.outputs),
        };
        let valid = validate_since(p, &since);
        if cfg!(debug_assertions) {
            assert_eq!(
                valid.is_ok(),
                validate(p).is_ok(),
                "validating what the step changed disagrees with validating the whole program: {valid:?}"
            );
        }
        valid
    }
}
