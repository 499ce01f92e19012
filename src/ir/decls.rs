//! A program's declarations, shared between copies until one changes them.

use super::data::DataDesc;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A program's data descriptors by name: a map shared between copies of the program until one
/// of them changes it (copy on write), so a rollback snapshot shares them and "did the step
/// change any declaration" is a pointer comparison when it did not. Reads and writes go
/// through `BTreeMap`'s own API (`Deref`/`DerefMut`); a write copies the map only while
/// another program shares it.
#[derive(Clone, Debug, Default)]
pub struct Decls(Arc<BTreeMap<String, DataDesc>>);

impl Decls {
    /// Whether `self` and `other` are the same map, not copies: then they are equal.
    pub fn shared_with(&self, other: &Decls) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl PartialEq for Decls {
    fn eq(&self, other: &Decls) -> bool {
        self.shared_with(other) || self.0 == other.0
    }
}

impl std::ops::Deref for Decls {
    type Target = BTreeMap<String, DataDesc>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Decls {
    fn deref_mut(&mut self) -> &mut Self::Target {
        Arc::make_mut(&mut self.0)
    }
}

impl From<BTreeMap<String, DataDesc>> for Decls {
    fn from(map: BTreeMap<String, DataDesc>) -> Decls {
        Decls(Arc::new(map))
    }
}

impl<'a> IntoIterator for &'a Decls {
    type Item = (&'a String, &'a DataDesc);
    type IntoIter = std::collections::btree_map::Iter<'a, String, DataDesc>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
