//! dmove: make neural networks fast by moving less data.
//!
//! The pipeline: ONNX → [`ir`] (library nodes) → expansion and transformations → C → benchmark.
//! See ARCHITECTURE.md for the map of modules.

pub mod analysis;
pub mod bench;
pub mod check;
pub mod cli;
pub mod codegen;
pub mod conformance;
pub mod demo;

pub mod fsutil;
pub mod interp;
pub mod ir;
pub mod numerics;
pub mod onnx;
pub mod ops;
pub mod pattern;
pub mod transform;
