//! Properties over random expressions and randomly damaged programs.

use super::sample;
use dmove::ir::text::{parse, print};
use dmove::ir::{BinOp, SymExpr, TExpr, UnOp};
use proptest::prelude::{any, prop_oneof, proptest, Just, ProptestConfig, Strategy};

fn arb_sym() -> impl Strategy<Value = SymExpr> {
    let leaf = prop_oneof![
        (-40i64..40).prop_map(SymExpr::Int),
        prop_oneof![Just("i"), Just("j"), Just("n_1"), Just("min"), Just("x.y")]
            .prop_map(SymExpr::sym),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        let pair = (inner.clone(), inner.clone());
        prop_oneof![
            proptest::collection::vec(inner.clone(), 2..4).prop_map(SymExpr::Add),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(SymExpr::Mul),
            pair.clone()
                .prop_map(|(a, b)| SymExpr::FloorDiv(Box::new(a), Box::new(b))),
            pair.clone()
                .prop_map(|(a, b)| SymExpr::Mod(Box::new(a), Box::new(b))),
            pair.clone()
                .prop_map(|(a, b)| SymExpr::Min(Box::new(a), Box::new(b))),
            pair.prop_map(|(a, b)| SymExpr::Max(Box::new(a), Box::new(b))),
        ]
    })
}

fn arb_texpr() -> impl Strategy<Value = TExpr> {
    let leaf = prop_oneof![
        prop_oneof![
            (-1e6f64..1e6),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0),
            Just(1e-300),
            any::<f64>()
        ]
        .prop_map(TExpr::Const),
        prop_oneof![Just("a"), Just("b"), Just("exp"), Just("x_1")].prop_map(TExpr::input),
        arb_sym().prop_map(TExpr::Index),
    ];
    let unops = proptest::sample::select(UnOp::ALL.to_vec());
    let binops = proptest::sample::select(vec![
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Pow,
        BinOp::Max,
        BinOp::Min,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::And,
        BinOp::Or,
    ]);
    leaf.prop_recursive(5, 40, 3, move |inner| {
        prop_oneof![
            (unops.clone(), inner.clone()).prop_map(|(op, x)| TExpr::unary(op, x)),
            (binops.clone(), inner.clone(), inner.clone())
                .prop_map(|(op, a, b)| TExpr::binary(op, a, b)),
            (inner.clone(), inner.clone(), inner).prop_map(|(c, a, b)| TExpr::select(c, a, b)),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn symbolic_expressions_print_parse_print(e in arb_sym()) {
        let text = e.to_string();
        let back: SymExpr = text.parse().map_err(|err| proptest::test_runner::TestCaseError::fail(format!("{text}: {err}")))?;
        proptest::prop_assert_eq!(back.to_string(), text);
    }

    #[test]
    fn tasklet_expressions_print_parse_print(e in arb_texpr()) {
        let text = e.to_string();
        let back: TExpr = text.parse().map_err(|err| proptest::test_runner::TestCaseError::fail(format!("{text}: {err}")))?;
        proptest::prop_assert_eq!(back.to_string(), text);
    }

    /// Damaged programs give errors (or parse), never panics, and errors point inside the text.
    #[test]
    fn damaged_text_never_panics(cut in 0usize..2000, at in 0usize..2000, junk in "[\\[\\](){}\"\\\\:,n0-9a-z>=-]{0,3}") {
        let text = print(&sample());
        let mut damaged = text.clone();
        let at = floor_char_boundary(&damaged, at % (damaged.len() + 1));
        damaged.insert_str(at, &junk);
        let cut = floor_char_boundary(&damaged, cut % (damaged.len() + 1));
        damaged.truncate(damaged.len() - cut.min(damaged.len()) / 8);
        if let Err(e) = parse(&damaged) {
            proptest::prop_assert!(e.byte_range().end <= damaged.len());
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
