//! The standard library, embedded in the binary so `dmove` works from any directory:
//! `use std::NAME` reads `stdlib/NAME.recipe` as it was when dmove was built.

/// `(module name, source)` of every standard module, alphabetically.
const MODULES: &[(&str, &str)] = &[
    ("cpu", include_str!("../../stdlib/cpu.recipe")),
    ("fusion", include_str!("../../stdlib/fusion.recipe")),
    ("gemm", include_str!("../../stdlib/gemm.recipe")),
    ("loops", include_str!("../../stdlib/loops.recipe")),
];

/// `(module name, source)` of every standard script, alphabetically (`use std::NAME` loads
/// `stdlib/NAME.rhai`).
const SCRIPTS: &[(&str, &str)] = &[
    ("interchange", include_str!("../../stdlib/interchange.rhai")),
    ("tiles", include_str!("../../stdlib/tiles.rhai")),
];

/// The source of the standard script `std::NAME`.
pub fn script(name: &str) -> Option<&'static str> {
    SCRIPTS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// The source of `std::NAME`.
pub fn source(name: &str) -> Option<&'static str> {
    MODULES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Names of the standard modules, for "did you mean".
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = MODULES.iter().chain(SCRIPTS).map(|(n, _)| *n).collect();
    names.sort_unstable();
    names
}
