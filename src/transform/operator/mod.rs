//! Operator level: rewrites of library nodes before expansion (folding, fusing operators).

pub(super) mod batchnorm_into_conv;
pub(super) mod constant_folding;
pub(super) mod constant_map_folding;
pub(super) mod matmul_add_to_gemm;
pub(super) mod pad_into_conv;
pub(super) mod reshape_elimination;
pub(super) mod transpose_folding;
