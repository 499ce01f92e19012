//! The built-in functions a recipe expression can call: their names, arities, named filters and
//! docs. The checker validates calls against this table before anything runs; the interpreter
//! evaluates them (`run::functions`), and a test keeps the two in step.

/// One built-in function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builtin {
    pub name: &'static str,
    /// Positional argument names, in order.
    pub args: &'static [&'static str],
    /// How many positional arguments are required (the rest are optional).
    pub required: usize,
    /// Named arguments (filters) the function accepts.
    pub named: &'static [&'static str],
    pub doc: &'static str,
}

const fn f(
    name: &'static str,
    args: &'static [&'static str],
    required: usize,
    named: &'static [&'static str],
    doc: &'static str,
) -> Builtin {
    Builtin {
        name,
        args,
        required,
        named,
        doc,
    }
}

/// Every built-in function, alphabetically.
pub const BUILTINS: &[Builtin] = &[
    f("bytes", &[], 0, &[], "bytes moved by the current program"),
    f(
        "contraction",
        &["map"],
        1,
        &[],
        "whether a map sums products of two operands over a reduction, as a matrix product does (`A[i, k] · B[k, j]`)",
    ),
    f(
        "dmd",
        &[],
        0,
        &[],
        "data-movement distance of the current program",
    ),
    f(
        "estimate",
        &[],
        0,
        &[],
        "the cost model's time for the current program on this machine, in ms (`dmove analyze --machine`)",
    ),
    f(
        "exists",
        &["node"],
        1,
        &[],
        "whether a handle's node is still in the program",
    ),
    f(
        "extent",
        &["map", "param", "if_symbolic"],
        2,
        &[],
        "the constant length of a map parameter; a symbolic length is an error, or `if_symbolic` when given",
    ),
    f(
        "innermost",
        &["map"],
        1,
        &[],
        "the innermost map nested in `map` (following the first nested map), or `map`",
    ),
    f("len", &["list"], 1, &[], "the length of a list"),
    f(
        "longest",
        &["map"],
        1,
        &[],
        "index of the longest constant-length parameter of a map (first on ties), -1 when none has a constant length",
    ),
    f(
        "loop_order",
        &["map"],
        1,
        &[],
        "the parameter order that keeps accesses contiguous: outputs, reductions, innermost",
    ),
    f(
        "maps",
        &[],
        0,
        &["depth", "params", "schedule", "in"],
        "every map, outer scopes first, in program order",
    ),
    f(
        "matches",
        &["pattern"],
        1,
        &[],
        "the current matches of a pattern",
    ),
    f("max", &["a", "b"], 2, &[], "the larger of two numbers"),
    f("min", &["a", "b"], 2, &[], "the smaller of two numbers"),
    f(
        "name",
        &["node"],
        1,
        &[],
        "the node in IR terms, e.g. `map \"proj_acc\"`",
    ),
    f(
        "node",
        &["id"],
        1,
        &[],
        "the node with this id as the IR prints it, e.g. `node(\"n12\")` (ids are stable across rewrites)",
    ),
    f(
        "ops",
        &["operator"],
        0,
        &[],
        "library nodes, of one operator when given",
    ),
    f(
        "outermost",
        &["map"],
        1,
        &[],
        "the top-level map enclosing `map`, or `map`",
    ),
    f(
        "output_params",
        &["map"],
        1,
        &[],
        "how many parameters of `loop_order(map)` index written elements",
    ),
    f("params", &["map"], 1, &[], "a map's parameter count"),
    f("range", &["n"], 1, &[], "the list 0, 1, …, n - 1"),
    f(
        "reads",
        &["map"],
        1,
        &[],
        "the containers a map reads, by name (an accumulation's own output, read only to add to it, excluded)",
    ),
    f(
        "reductions",
        &["map"],
        1,
        &[],
        "how many of a map's parameters index no element it writes (a contraction's k)",
    ),
    f(
        "set",
        &["list", "index", "value"],
        3,
        &[],
        "a copy of a list with one entry replaced",
    ),
    f(
        "tasklets",
        &[],
        0,
        &["in"],
        "tasklets, of one map's body when `in` is given",
    ),
    f(
        "time",
        &[],
        0,
        &[],
        "measured time of the current program in ms (not measured by `dmove check`, which replays without timing)",
    ),
    f("uses", &["node"], 1, &[], "readers of what a node writes"),
    f(
        "writes",
        &["map"],
        1,
        &[],
        "the containers a map writes, by name",
    ),
    f("zeros", &["n"], 1, &[], "a list of n zeros"),
];

/// The built-in called `name`.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn table_is_sorted_and_unique() {
        let names: Vec<&str> = super::BUILTINS.iter().map(|b| b.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names, sorted);
    }
}
