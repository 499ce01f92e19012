//! Parts of a program shared between copies until one of them changes them.

use super::constant::Constant;
use super::data::DataDesc;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A value shared between copies of a program until one of them changes it (copy on write),
/// so a rollback snapshot shares it and "did the step change it" is a pointer comparison when
/// it did not. Reads and writes go through the value's own API (`Deref`/`DerefMut`); a write
/// copies the value only while another program shares it.
#[derive(Clone, Debug, Default)]
pub struct Shared<T>(Arc<T>);

/// A program's data descriptors by name.
pub type Decls = Shared<BTreeMap<String, DataDesc>>;

/// A program's constant values by name.
pub type Constants = Shared<BTreeMap<String, Constant>>;

/// A program's inputs or outputs, in signature order.
pub type Names = Shared<Vec<String>>;

impl<T> Shared<T> {
    /// Whether `self` and `other` are the same value, not copies: then they are equal.
    pub fn shared_with(&self, other: &Shared<T>) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Shared<T>) -> bool {
        self.shared_with(other) || self.0 == other.0
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone> std::ops::DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        Arc::make_mut(&mut self.0)
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Shared<T> {
        Shared(Arc::new(value))
    }
}

impl<T> FromIterator<T> for Shared<Vec<T>> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Shared(Arc::new(iter.into_iter().collect()))
    }
}

impl<'a, T> IntoIterator for &'a Shared<T>
where
    &'a T: IntoIterator,
{
    type Item = <&'a T as IntoIterator>::Item;
    type IntoIter = <&'a T as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        (&*self.0).into_iter()
    }
}
