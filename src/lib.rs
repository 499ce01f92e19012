//! dmove: make neural networks fast by moving less data.
//!
//! The pipeline: ONNX → [`ir`] (library nodes) → expansion and transformations → C → benchmark.
//! See ARCHITECTURE.md for the map of modules.
//!
//! # The front-door API
//!
//! The items re-exported at the crate root are what a front door (the command line, and next
//! the recipe language, Rhai scripts and the REPL) needs: load a model, lower it, find and
//! explain transformations, apply them through the checked [`Engine`], record and replay a
//! [`Trace`], generate C. The modules stay reachable for tools and tests that need the details.
//!
//! Applying a transformation by name, with typed parameters validated before it runs:
//!
//! ```
//! use dmove::{find, Checks, Engine, Layer, ParamValue, Params};
//!
//! // C = A·B as an init map and an accumulation map over (i, j, k).
//! let mut p = dmove::check::fixtures::matmul(8.into(), 4.into(), 6.into(), dmove::ir::Schedule::Sequential);
//! let acc = dmove::transform::explain(find("Parallelize")?, &p, &Params::new())[1].site[0];
//!
//! let tiling = find("MapTiling")?;
//! let mut engine = Engine::new(Checks::default());
//! let tiles = Params::from([("tiles".to_string(), ParamValue::Ints(vec![4, 0, 0]))]);
//! let step = engine.apply(&mut p, tiling, &[acc], &tiles)?;
//! assert_eq!(step.summary(), format!("MapTiling at {acc} (tiles=4,0,0)"));
//! assert!(step.passed(Layer::Numerics).is_some());
//!
//! // A misspelt key is refused before anything runs, naming the closest accepted one.
//! let typo = Params::from([("tile".to_string(), ParamValue::Ints(vec![4, 0, 0]))]);
//! let refused = engine.apply(&mut p, tiling, &[acc], &typo).unwrap_err();
//! assert_eq!(refused.to_string(), "MapTiling has no parameter `tile`");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Asking where a transformation applies, and why not elsewhere:
//!
//! ```
//! use dmove::{explain, find, Params, Verdict};
//!
//! let p = dmove::check::fixtures::matmul(8.into(), 4.into(), 6.into(), dmove::ir::Schedule::Sequential);
//! for e in explain(find("Vectorize")?, &p, &Params::new()) {
//!     match e.verdict {
//!         Verdict::Applies => println!("applies at {:?}", e.site),
//!         Verdict::Refused(why) => println!("{why}"),
//!     }
//! }
//! # Ok::<(), dmove::UnknownTransformation>(())
//! ```

pub mod analysis;
pub mod bench;
pub mod check;
pub mod cli;
pub mod codegen;
pub mod conformance;
pub mod demo;

mod fsutil;
pub mod interp;
pub mod interrupt;
pub mod ir;
pub mod lsp;
pub mod numerics;
pub mod onnx;
pub mod ops;
pub mod pattern;
pub mod plot;
pub mod progress;
pub mod recipe;
pub mod repl;
pub mod script;
pub mod transform;
pub mod view;
pub mod zoo;

pub use codegen::{emit, Compiled};
pub use ir::{NodeId, Program};
pub use onnx::{import_file, ImportOptions};
pub use ops::expand::expand_all;
pub use transform::engine::{
    program_hash, replay, Budget, CheckRecord, Checks, Engine, Layer, Outcome, Refusal, Step, Trace,
};
pub use transform::{
    all as transformations, explain, find, nearest, ParamDecl, ParamKind, ParamValue, Params,
    Schema, Transformation, UnknownTransformation, Verdict,
};
