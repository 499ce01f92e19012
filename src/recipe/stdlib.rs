//! The standard library, embedded in the binary so `dmove` works from any directory:
//! `use std::NAME` reads `stdlib/NAME.recipe` as it was when dmove was built.

/// `(module name, source)` of every standard module, alphabetically.
const MODULES: &[(&str, &str)] = &[
    ("cpu", include_str!("../../stdlib/cpu.recipe")),
    ("fusion", include_str!("../../stdlib/fusion.recipe")),
    ("loops", include_str!("../../stdlib/loops.recipe")),
];

/// The source of `std::NAME`.
pub fn source(name: &str) -> Option<&'static str> {
    MODULES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Names of the standard modules, for "did you mean".
pub fn names() -> impl Iterator<Item = &'static str> {
    MODULES.iter().map(|(n, _)| *n)
}
