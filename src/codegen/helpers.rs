//! The C helper functions generated code may call, and the choice of those one program needs.
//!
//! The printers (`expr`, `scope`, `harness`) write calls such as `dm_floordiv(…)` or
//! `dm_atomic_max_f32(…)` wherever the IR asks for them; a program needs only the helpers its
//! text calls. [`used_by`] reads the finished code for `dm_` identifiers (outside comments and
//! string literals), adds the helpers those helpers call, and returns their definitions in
//! [`all`]'s order, in which every helper follows the helpers it calls. Reading the printed
//! text, rather than having every printer report what it wrote, means no printer can forget
//! to declare a use: whatever the code calls is defined, and nothing else is. Model names
//! never start with `dm_` in C (they are rebuilt behind `d_`, `p_` or `c_`), so they cannot
//! pull a helper in.

use super::expr::{ctype, double_literal, tag};
use super::harness::IO_HELPERS;
use crate::ir::scalar::{FloatFormat, Special};
use crate::ir::DType;
use std::collections::BTreeSet;

/// Integer arithmetic with the IR's semantics: floor division and modulo round towards −∞
/// (C's `/` and `%` truncate towards zero); min, max and clamp for index expressions.
const INT_HELPERS: &[(&str, &str)] = &[
    (
        "dm_floordiv",
        "static inline int64_t dm_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
",
    ),
    (
        "dm_mod",
        "static inline int64_t dm_mod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
",
    ),
    (
        "dm_min",
        "static inline int64_t dm_min(int64_t a, int64_t b) { return a < b ? a : b; }\n",
    ),
    (
        "dm_max",
        "static inline int64_t dm_max(int64_t a, int64_t b) { return a > b ? a : b; }\n",
    ),
    (
        "dm_clamp",
        "static inline int64_t dm_clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }\n",
    ),
];

/// Narrow float formats are stored as bit patterns and computed in `float` through `dm_fdec`
/// and `dm_fenc`, which implement exactly `ir::scalar::FloatFormat::{decode, encode}` (the
/// format is given by its exponent and mantissa widths, bias, special-value kind and largest
/// finite value); `dm_to_i64` and `dm_to_u64` are the integer stores of `ir::scalar::to_int`:
/// saturating like Rust's `as` (NaN to 0) where a plain C cast would be undefined.
const NARROW_HELPERS: &[(&str, &str)] = &[
    (
        "dm_fdec",
        r#"static inline float dm_fdec(uint32_t b, int eb, int mb, int bias, int special) {
    uint32_t sign = 1u << (eb + mb), top = (1u << eb) - 1, mones = (1u << mb) - 1;
    uint32_t field = (b >> mb) & top, man = b & mones;
    int nan = special == 0 ? (field == top && man != 0)
            : special == 1 ? (field == top && man == mones) : b == sign;
    if (nan) return NAN;
    double mag;
    if (special == 0 && field == top) mag = INFINITY;
    else if (field == 0) mag = ldexp((double)man, 1 - bias - mb);
    else mag = ldexp((double)((1u << mb) | man), (int)field - bias - mb);
    return (float)((b & sign) ? -mag : mag);
}
"#,
    ),
    (
        "dm_fenc",
        r#"static inline uint32_t dm_fenc(float x, int eb, int mb, int bias, int special, double maxf) {
    uint32_t sign = signbit(x) ? 1u << (eb + mb) : 0, top = (1u << eb) - 1, mones = (1u << mb) - 1;
    uint32_t nanv = special == 0 ? (sign | (top << mb) | (1u << (mb - 1)))
                  : special == 1 ? (sign | (top << mb) | mones) : 1u << (eb + mb);
    if (isnan(x)) return nanv;
    uint32_t over = special == 0 ? (sign | (top << mb)) : nanv;
    uint32_t zero = special == 2 ? 0 : sign;
    double a = fabs((double)x);
    if (isinf(a)) return over;
    if (a == 0.0) return zero;
    int e = ilogb(a);
    if (e < 1 - bias) e = 1 - bias;
    double r = ldexp(nearbyint(ldexp(a, mb - e)), e - mb);
    if (r > maxf) return over;
    if (r == 0.0) return zero;
    e = ilogb(r);
    if (e < 1 - bias) return sign | (uint32_t)ldexp(r, mb - 1 + bias);
    return sign | ((uint32_t)(e + bias) << mb) | ((uint32_t)ldexp(r, mb - e) - (1u << mb));
}
"#,
    ),
    (
        "dm_to_i64",
        r#"static inline int64_t dm_to_i64(double x) {
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}
"#,
    ),
    (
        "dm_to_u64",
        r#"static inline uint64_t dm_to_u64(double x) {
    if (x >= 18446744073709551615.0) return UINT64_MAX;
    return x >= 9223372036854775808.0 ? (uint64_t)x : (uint64_t)dm_to_i64(x);
}
"#,
    ),
];

/// `exp` of a float in a form `omp simd` vectorizes (libm's `expf` is one call per element, which
/// left Softmax and Sigmoid scalar). Cody–Waite reduction `x = n·ln 2 + r` with ln 2 split in two
/// so `r` is exact, Cephes' degree-6 polynomial for `exp(r)` on `|r| ≤ ln 2 / 2`, and `2ⁿ` as two
/// exponent-field factors so neither overflows before the product does: overflow gives +inf,
/// underflow rounds through the subnormals to 0, NaN stays NaN. Measured against `exp` in
/// double precision over every 64th float in [−110, 90]: at most 1.4 ulp.
const MATH_HELPERS: &[(&str, &str)] = &[(
    "dm_expf",
    r#"static inline float dm_expf(float x) {
    float c = x != x ? 0.0f : (x > 88.8f ? 88.8f : (x < -104.0f ? -104.0f : x));
    float n = nearbyintf(c * 1.44269504088896341f);
    float r = fmaf(n, -0.693359375f, c);
    r = fmaf(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    float y = fmaf(p, r * r, r) + 1.0f;
    int32_t k = (int32_t)n, h = k >> 1;
    union { int32_t i; float f; } a = { .i = (h + 127) << 23 }, b = { .i = (k - h + 127) << 23 };
    float out = (y * a.f) * b.f;
    return x != x ? x : out;
}
"#,
)];

/// One helper: the identifier it defines and its definition.
struct Helper {
    name: String,
    text: String,
}

impl Helper {
    fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Helper {
            name: name.into(),
            text: text.into(),
        }
    }
}

/// Every helper, each after the helpers it calls.
fn all() -> Vec<Helper> {
    let fixed = |list: &[(&str, &str)]| -> Vec<Helper> {
        list.iter().map(|(n, t)| Helper::new(*n, *t)).collect()
    };
    let mut out = fixed(INT_HELPERS);
    out.extend(fixed(NARROW_HELPERS));
    out.extend(narrow_format_helpers());
    out.extend(reduction_helpers());
    out.extend(fixed(MATH_HELPERS));
    out.extend(fixed(IO_HELPERS));
    out
}

/// `dm_dec_<t>` / `dm_enc_<t>` for every narrow float dtype, over `dm_fdec` / `dm_fenc`.
fn narrow_format_helpers() -> Vec<Helper> {
    let mut out = Vec::new();
    for d in DType::ALL {
        let Some(f) = FloatFormat::of(d) else {
            continue;
        };
        let special = match f.special {
            Special::Ieee => 0,
            Special::Finite => 1,
            Special::FiniteUnsignedZero => 2,
        };
        let (t, tag) = (ctype(d), tag(d));
        let args = format!("{}, {}, {}, {special}", f.exp_bits, f.man_bits, f.bias);
        out.push(Helper::new(
            format!("dm_dec_{tag}"),
            format!("static inline float dm_dec_{tag}({t} b) {{ return dm_fdec(b, {args}); }}\n"),
        ));
        out.push(Helper::new(
            format!("dm_enc_{tag}"),
            format!(
                "static inline {t} dm_enc_{tag}(float x) {{ return ({t})dm_fenc(x, {args}, {}); }}\n",
                double_literal(f.max_finite())
            ),
        ));
    }
    out
}

/// `dm_max_<t>` / `dm_min_<t>` and their atomic compare-exchange versions for every dtype, plus
/// `dm_sum_<t>` / `dm_prod_<t>` for narrow floats, whose bit patterns C cannot add directly
/// (they combine in `float`, like the interpreter). Comparing bit patterns ends the loop even
/// when the stored value is NaN.
fn reduction_helpers() -> Vec<Helper> {
    let mut out = Vec::new();
    for d in DType::ALL {
        let (t, tag) = (ctype(d), tag(d));
        let ops: Vec<(&str, String)> = if d.is_narrow_float() {
            let dec = |x: &str| format!("dm_dec_{tag}({x})");
            let (a, b) = (dec("a"), dec("b"));
            [
                ("max", format!("fmaxf({a}, {b})")),
                ("min", format!("fminf({a}, {b})")),
                ("sum", format!("{a} + {b}")),
                ("prod", format!("{a} * {b}")),
            ]
            .into_iter()
            .map(|(op, v)| (op, format!("dm_enc_{tag}({v})")))
            .collect()
        } else {
            // Floats: `fmax`'s result (a NaN operand is ignored) as a compare and select,
            // which vectorizes where the libm call does not.
            let (max, min) = match d {
                DType::F32 | DType::F64 => {
                    ("(b > a || a != a) ? b : a", "(b < a || a != a) ? b : a")
                }
                _ => ("a > b ? a : b", "a < b ? a : b"),
            };
            vec![("max", max.to_string()), ("min", min.to_string())]
        };
        for (op, body) in ops {
            out.push(Helper::new(
                format!("dm_{op}_{tag}"),
                format!("static inline {t} dm_{op}_{tag}({t} a, {t} b) {{ return {body}; }}\n"),
            ));
            out.push(Helper::new(
                format!("dm_atomic_{op}_{tag}"),
                format!(
                    "static inline void dm_atomic_{op}_{tag}({t}* p, {t} v) {{\n\
                     \x20   {t} old, want;\n\
                     \x20   __atomic_load(p, &old, __ATOMIC_RELAXED);\n\
                     \x20   do {{\n\
                     \x20       want = dm_{op}_{tag}(old, v);\n\
                     \x20       if (memcmp(&want, &old, sizeof want) == 0) return;\n\
                     \x20   }} while (!__atomic_compare_exchange(p, &old, &want, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));\n\
                     }}\n"
                ),
            ));
        }
    }
    out
}

/// The definitions of every helper `code` calls, directly or through other helpers, in
/// definition order (each after the helpers it calls).
pub(crate) fn used_by(code: &str) -> String {
    let helpers = all();
    let mut needed: BTreeSet<&str> = BTreeSet::new();
    let mut pending: Vec<&str> = identifiers(code).collect();
    while let Some(id) = pending.pop() {
        if needed.contains(id) {
            continue;
        }
        if let Some(h) = helpers.iter().find(|h| h.name == id) {
            needed.insert(&h.name);
            pending.extend(identifiers(&h.text));
        }
    }
    helpers
        .iter()
        .filter(|h| needed.contains(h.name.as_str()))
        .map(|h| h.text.as_str())
        .collect()
}

/// The `dm_` identifiers of C text, skipping comments and string and character literals.
fn identifiers(code: &str) -> impl Iterator<Item = &str> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let rest = &code[i..];
        if rest.starts_with("/*") {
            i += rest.find("*/").map_or(rest.len(), |e| e + 2);
        } else if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if c == b'"' || c == b'\'' {
            i += literal_len(&bytes[i..]);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let len = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            let id = &rest[..len];
            if id.starts_with("dm_") {
                found.push(id);
            }
            i += len;
        } else {
            i += 1;
        }
    }
    found.into_iter()
}

/// Length of the string or character literal at the start of `b` (quote to closing quote,
/// backslash escapes skipped; to the end of the text when it is not closed).
fn literal_len(b: &[u8]) -> usize {
    let quote = b[0];
    let mut i = 1;
    while i < b.len() && b[i] != quote {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_helper_calls_only_earlier_helpers() {
        let helpers = all();
        for (k, h) in helpers.iter().enumerate() {
            for id in identifiers(&h.text).filter(|id| *id != h.name) {
                let at = helpers.iter().position(|g| g.name == id);
                assert!(
                    at.is_none_or(|at| at < k),
                    "{} calls {id}, defined after it",
                    h.name
                );
            }
        }
    }

    #[test]
    fn helpers_are_unique() {
        let helpers = all();
        let names: BTreeSet<&str> = helpers.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names.len(), helpers.len());
    }

    #[test]
    fn dependencies_come_along_and_comments_do_not_count() {
        let code = "/* dm_fdec */ x = dm_atomic_max_f8e4m3fn(&y, z); s = \"dm_mod\";";
        let text = used_by(code);
        for name in [
            "dm_fdec",
            "dm_fenc",
            "dm_dec_",
            "dm_enc_",
            "dm_max_f8e4m3fn",
        ] {
            assert!(text.contains(name), "{name} missing:\n{text}");
        }
        assert!(!text.contains("dm_mod") && !text.contains("dm_floordiv"));
        let order = |name: &str| text.find(&format!(" {name}(")).expect(name);
        assert!(order("dm_fenc") < order("dm_enc_f8e4m3fn"));
        assert!(order("dm_max_f8e4m3fn") < order("dm_atomic_max_f8e4m3fn"));
        assert_eq!(used_by("int main(void) { return 0; }"), "");
    }
}
