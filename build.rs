//! Generates the ONNX protobuf types from `proto/onnx.proto`.
//!
//! The `.proto` is compiled by `protox` (a pure-Rust protobuf compiler) rather than a system
//! `protoc`, so a fresh machine builds the crate with cargo alone.

use std::error::Error;

const PROTO: &str = "proto/onnx.proto";

fn main() -> Result<(), Box<dyn Error>> {
    // Rerun only when the schema changes, not on every source edit.
    println!("cargo:rerun-if-changed={PROTO}");
    println!("cargo:rerun-if-changed=build.rs");
    let descriptors = protox::compile([PROTO], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
