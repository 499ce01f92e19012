//! A constant's value as a program holds it: shared between copies of the program and never
//! changed in place.
//!
//! Every checked step copies the program (the snapshot it rolls back to) and hashes it twice;
//! with the weights inline, both cost the size of the model. Shared, a copy of the weights is a
//! pointer; immutable, the digest the program hash reads ([`Constant::digest`]) is computed
//! once per value, however many steps and snapshots see it. A changed constant is a new value
//! ([`Constant::new`]), with a digest of its own.

use super::tensor::Tensor;
use sha2::{Digest, Sha256};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

/// A shared, immutable constant value (see the module documentation). Dereferences to its
/// [`Tensor`].
#[derive(Clone, Debug)]
pub struct Constant(Arc<Shared>);

#[derive(Debug)]
struct Shared {
    tensor: Tensor,
    /// SHA-256 of the little-endian element bytes, in lowercase hex, once asked for.
    digest: OnceLock<String>,
}

impl Constant {
    pub fn new(tensor: Tensor) -> Constant {
        Constant(Arc::new(Shared {
            tensor,
            digest: OnceLock::new(),
        }))
    }

    pub fn tensor(&self) -> &Tensor {
        &self.0.tensor
    }

    /// The SHA-256 of the value's little-endian bytes, in lowercase hex (how the human text form
    /// names an elided constant, and what the program hash reads), computed on first use.
    pub fn digest(&self) -> &str {
        self.0
            .digest
            .get_or_init(|| hex::encode(Sha256::digest(self.0.tensor.to_le_bytes())))
    }
}

impl Deref for Constant {
    type Target = Tensor;

    fn deref(&self) -> &Tensor {
        &self.0.tensor
    }
}

impl From<Tensor> for Constant {
    fn from(tensor: Tensor) -> Constant {
        Constant::new(tensor)
    }
}

impl PartialEq for Constant {
    fn eq(&self, other: &Constant) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.tensor == other.0.tensor
    }
}

impl PartialEq<Tensor> for Constant {
    fn eq(&self, other: &Tensor) -> bool {
        self.0.tensor == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_share_the_value_and_its_digest() {
        let c = Constant::new(Tensor::f32(vec![2], vec![1.0, 2.0]));
        let copy = c.clone();
        assert!(std::ptr::eq(c.digest(), copy.digest()), "computed once");
        assert_eq!(c.digest(), hex::encode(Sha256::digest(c.to_le_bytes())));
        assert_eq!(copy, Tensor::f32(vec![2], vec![1.0, 2.0]));
        assert_ne!(c, Constant::new(Tensor::f32(vec![2], vec![1.0, 3.0])));
    }

    #[test]
    fn the_digest_is_sha256_of_the_little_endian_bytes() {
        // sha256 of the 4 bytes 00 00 80 3f (1.0f32), computed independently with sha256sum.
        let c = Constant::new(Tensor::f32(vec![1], vec![1.0]));
        assert_eq!(
            c.digest(),
            "e00e5eb9444182f352323374ef4e08ebcb784725fdd4fd612d7730540b3e0c8c"
        );
    }
}
