//! Constant tensors in the text: inline value lists, exact hex blobs and elided sha256 digests.

use super::error::Fault;
use super::grammar::Rule;
use crate::ir::data::DType;
use crate::ir::scalar::FloatFormat;
use crate::ir::tensor::{Buffer, Tensor};
use crate::ir::texpr::format_float;
use pest::iterators::Pair;

/// Constants with at most this many elements are printed inline in the human form.
pub const INLINE_LIMIT: usize = 16;

/// Prints an `f32` so that parsing it as `f32` gives the same value (shortest form).
pub fn format_f32(v: f32) -> String {
    if v.is_finite() {
        let s = format!("{v:?}");
        if s.contains(['.', 'e', 'E']) {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        format_float(f64::from(v))
    }
}

/// Each element as printed in an inline list.
fn element_texts(t: &Tensor) -> Vec<String> {
    match &t.data {
        Buffer::F32(v) => v.iter().map(|x| format_f32(*x)).collect(),
        Buffer::F64(v) => v.iter().map(|x| format_float(*x)).collect(),
        Buffer::I64(v) => v.iter().map(ToString::to_string).collect(),
        Buffer::I32(v) => v.iter().map(ToString::to_string).collect(),
        Buffer::Bool(v) => v.iter().map(ToString::to_string).collect(),
        Buffer::Int(DType::U64, v) => v.iter().map(|x| (*x as u64).to_string()).collect(),
        Buffer::Int(_, v) => v.iter().map(ToString::to_string).collect(),
        Buffer::Narrow(..) => (0..t.len())
            .map(|i| format_f32(t.get_f64(i) as f32))
            .collect(),
    }
}

/// `[1.0, 2.0]`
pub fn inline(t: &Tensor) -> String {
    format!("[{}]", element_texts(t).join(", "))
}

/// True when the inline list reads back bit for bit (NaN payloads and signs do not survive
/// the text `nan`).
pub fn inline_is_exact(t: &Tensor) -> bool {
    match &t.data {
        Buffer::F32(v) => v
            .iter()
            .all(|x| !x.is_nan() || x.to_bits() == f32::NAN.to_bits()),
        Buffer::F64(v) => v
            .iter()
            .all(|x| !x.is_nan() || x.to_bits() == f64::NAN.to_bits()),
        Buffer::Narrow(d, v) => {
            let f = FloatFormat::of(*d).expect("narrow float dtype");
            v.iter()
                .all(|x| !f.decode(*x).is_nan() || *x == f.encode(f32::NAN))
        }
        Buffer::I64(_) | Buffer::I32(_) | Buffer::Bool(_) | Buffer::Int(..) => true,
    }
}

/// `hex:<little-endian bytes>`. Written into one buffer with `hex::encode_to_slice`: every
/// program hash prints the weights this way, and `hex::encode`'s char-by-char collection made
/// hashing the larger part of a recipe run's time.
pub fn hex_blob(t: &Tensor) -> String {
    let bytes = t.to_le_bytes();
    let mut out = vec![0u8; 4 + 2 * bytes.len()];
    out[..4].copy_from_slice(b"hex:");
    hex::encode_to_slice(&bytes, &mut out[4..]).expect("the buffer holds two digits per byte");
    String::from_utf8(out).expect("hex digits are ASCII")
}

/// Builds a tensor from an inline `value_list` pair.
pub fn from_list(dtype: DType, shape: Vec<usize>, list: Pair<Rule>) -> Result<Tensor, Fault> {
    let items: Vec<Pair<Rule>> = list.clone().into_inner().collect();
    check_count(&shape, items.len(), &list)?;
    let data = match dtype {
        DType::F32 => Buffer::F32(parse_all(&items, "f32 value")?),
        DType::F64 => Buffer::F64(parse_all(&items, "f64 value")?),
        DType::I64 => Buffer::I64(parse_all(&items, "i64 value")?),
        DType::I32 => Buffer::I32(parse_all(&items, "i32 value")?),
        DType::Bool => Buffer::Bool(
            items
                .iter()
                .map(|p| match p.as_str() {
                    "true" => Ok(true),
                    "false" => Ok(false),
                    _ => Err(Fault::invalid(
                        "bool value",
                        p.as_span(),
                        "expected `true` or `false`",
                    )),
                })
                .collect::<Result<_, _>>()?,
        ),
        DType::U64 => Buffer::Int(
            dtype,
            parse_all::<u64>(&items, "u64 value")?
                .into_iter()
                .map(|x| x as i64)
                .collect(),
        ),
        d if d.is_narrow_float() => {
            let f = FloatFormat::of(d).expect("narrow float dtype");
            let values: Vec<f32> = parse_all(&items, "float value")?;
            Buffer::Narrow(d, values.into_iter().map(|x| f.encode(x)).collect())
        }
        d => Buffer::Int(d, parse_all(&items, "integer value")?),
    };
    let t = Tensor { shape, data };
    check_int_range(&t, &list)?;
    Ok(t)
}

/// Integer constants of the narrow types must lie in their type's range.
fn check_int_range(t: &Tensor, at: &Pair<Rule>) -> Result<(), Fault> {
    let Buffer::Int(d, v) = &t.data else {
        return Ok(());
    };
    let (lo, hi) = d.int_range().expect("integer dtype");
    match v
        .iter()
        .find(|x| *d != DType::U64 && !(lo..=hi).contains(&(**x as f64)))
    {
        Some(x) => Err(Fault::invalid(
            "constant",
            at.as_span(),
            format!("{x} is outside the range of {d}"),
        )),
        None => Ok(()),
    }
}

fn parse_all<T: std::str::FromStr>(
    items: &[Pair<Rule>],
    what: &'static str,
) -> Result<Vec<T>, Fault> {
    items
        .iter()
        .map(|p| {
            p.as_str()
                .parse()
                .map_err(|_| Fault::invalid(what, p.as_span(), format!("not a valid {what}")))
        })
        .collect()
}

/// Builds a tensor from a `blob_hex` pair.
pub fn from_hex(dtype: DType, shape: Vec<usize>, blob: Pair<Rule>) -> Result<Tensor, Fault> {
    let digits = blob
        .clone()
        .into_inner()
        .next()
        .unwrap_or_else(|| blob.clone());
    let bytes = hex::decode(digits.as_str())
        .map_err(|e| Fault::invalid("hex blob", digits.as_span(), e.to_string()))?;
    let size = dtype.size_bytes();
    if bytes.len() % size != 0 {
        return Err(Fault::invalid(
            "hex blob",
            digits.as_span(),
            format!(
                "{} bytes is not a whole number of {dtype} elements",
                bytes.len()
            ),
        ));
    }
    check_count(&shape, bytes.len() / size, &blob)?;
    if dtype == DType::Bool && bytes.iter().any(|b| *b > 1) {
        return Err(Fault::invalid(
            "hex blob",
            digits.as_span(),
            "bool bytes must be 00 or 01",
        ));
    }
    let data = Buffer::from_le_bytes(dtype, &bytes).expect("length is a multiple of the width");
    let t = Tensor { shape, data };
    check_int_range(&t, &blob)?;
    Ok(t)
}

/// Number of elements of `shape`, refusing overflow.
pub fn element_count(shape: &[usize], at: &Pair<Rule>) -> Result<usize, Fault> {
    shape
        .iter()
        .try_fold(1usize, |acc, d| acc.checked_mul(*d))
        .ok_or_else(|| Fault::invalid("shape", at.as_span(), "element count overflows"))
}

fn check_count(shape: &[usize], found: usize, at: &Pair<Rule>) -> Result<(), Fault> {
    let want = element_count(shape, at)?;
    if want == found {
        Ok(())
    } else {
        Err(Fault::invalid(
            "constant",
            at.as_span(),
            format!("shape {shape:?} has {want} elements but {found} values are given"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_text_is_shortest_and_exact() {
        for v in [
            0.1f32,
            1.0,
            -0.0,
            1e-40,
            f32::MAX,
            f32::MIN_POSITIVE,
            3.4028235e38,
        ] {
            let s = format_f32(v);
            assert_eq!(s.parse::<f32>().map(f32::to_bits), Ok(v.to_bits()), "{s}");
        }
        assert_eq!(format_f32(0.1), "0.1");
        assert_eq!(format_f32(2.0), "2.0");
        assert_eq!(format_f32(f32::NEG_INFINITY), "-inf");
    }
}
