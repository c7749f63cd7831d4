//! Reading JSON the way openai-harmony's Python package does, so tool schemas print the same
//! numbers.
//!
//! The package reads a conversation with Python's `json` module, writes it back with `json.dumps`
//! and hands that text to its Rust core, whose `serde_json` is built without `float_roundtrip`:
//! there a decimal number is its significand times or divided by one power of ten, which can be
//! a bit off the nearest double. So the numbers the reference holds are not always the numbers
//! written: `-0` becomes `0`, and some long integers and floats change in their last digits.
//! [`from_str`] rewrites each number literal into the number the reference holds, then parses.
//!
//! The reference's `serde_json` also prints floats in ryu's shortest form (`1e30`, `0.000025`),
//! where newer `serde_json` versions write `1e+30`; [`to_string`] prints as the reference does.

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::Serialize;
use serde::de::{DeserializeOwned, Error as _};
use serde_json::Value;
use serde_json::ser::Formatter;

/// Parses `text` into the numbers openai-harmony's Python package ends up with.
pub fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    match rewrite_numbers(text) {
        Ok(Cow::Borrowed(_)) => serde_json::from_str(text),
        Ok(Cow::Owned(rewritten)) => {
            serde_json::from_str(&rewritten).or_else(|_| serde_json::from_str(text))
        }
        Err(at) => {
            // Report the input's own error first, with its position, if it has one.
            serde_json::from_str::<T>(text)?;
            let line = text[..at].matches('\n').count() + 1;
            let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
            Err(serde_json::Error::custom(format!(
                "number at line {line} column {column} is out of range: the reference reads it as infinity"
            )))
        }
    }
}

/// Compact JSON text of `value` as the reference prints it (floats in ryu's shortest form).
pub fn to_string(value: &Value) -> String {
    let mut out = Vec::with_capacity(64);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, RyuFloats);
    // Writing a `Value` to memory cannot fail, and keeps the text UTF-8.
    if value.serialize(&mut serializer).is_err() {
        return value.to_string();
    }
    String::from_utf8(out).unwrap_or_else(|_| value.to_string())
}

/// serde_json's compact format with floats written by ryu.
struct RyuFloats;

impl Formatter for RyuFloats {
    fn write_f64<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        value: f64,
    ) -> std::io::Result<()> {
        writer.write_all(ryu::Buffer::new().format_finite(value).as_bytes())
    }
}

/// Rewrites every number literal whose value the reference changes; `Err` holds the byte offset
/// of a number the reference cannot read (it overflows to infinity).
fn rewrite_numbers(text: &str) -> Result<Cow<'_, str>, usize> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    let mut in_string = false;
    while at < bytes.len() {
        let byte = bytes[at];
        if in_string {
            match byte {
                b'\\' => at += 1,
                b'"' => in_string = false,
                _ => {}
            }
            at += 1;
            continue;
        }
        if byte == b'"' {
            in_string = true;
            at += 1;
            continue;
        }
        if byte != b'-' && !byte.is_ascii_digit() {
            at += 1;
            continue;
        }
        let end = bytes[at..]
            .iter()
            .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
            .map_or(bytes.len(), |len| at + len);
        let literal = &text[at..end];
        if let Some(replacement) = reference_literal(literal).ok_or(at)? {
            let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
            out.push_str(&text[copied..at]);
            out.push_str(&replacement);
            copied = end;
        }
        at = end;
    }
    Ok(match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    })
}

/// The literal to write instead of `literal` (`Some(None)`: keep it), or `None` when the
/// reference cannot read it. Literals that are not JSON numbers are kept for the parser to refuse.
fn reference_literal(literal: &str) -> Option<Option<String>> {
    let (negative, digits) = match literal.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, literal),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return float_literal(literal);
    }
    integer_literal(negative, digits)
}

/// A JSON integer: Python keeps it exact and writes it back (`-0` as `0`); the reference's JSON
/// reader keeps it when it fits 64 bits and otherwise reads its leading digits times a power of ten.
fn integer_literal(negative: bool, digits: &str) -> Option<Option<String>> {
    if digits.bytes().all(|b| b == b'0') {
        return Some(negative.then(|| "0".to_string()));
    }
    let mut significand: u64 = 0;
    for (i, digit) in digits.bytes().enumerate() {
        let digit = u64::from(digit - b'0');
        match significand
            .checked_mul(10)
            .and_then(|s| s.checked_add(digit))
        {
            Some(next) => significand = next,
            None => {
                let exponent = (digits.len() - i) as i32;
                let correct: f64 = digits.parse().ok()?;
                let reference = approximate(significand, exponent)?;
                let reference = if negative { -reference } else { reference };
                let correct = if negative { -correct } else { correct };
                return Some(
                    (reference.to_bits() != correct.to_bits()).then(|| format!("{reference:e}")),
                );
            }
        }
    }
    Some(None)
}

/// A JSON float: Python reads it exactly and writes its shortest form (`repr`); the reference's
/// JSON reader reads that form approximately.
fn float_literal(literal: &str) -> Option<Option<String>> {
    let Ok(value) = literal.parse::<f64>() else {
        return Some(None);
    };
    if value.is_infinite() {
        return None;
    }
    let (significand, exponent) = python_repr_parts(value.abs());
    let reference = approximate(significand, exponent)?;
    let reference = if value.is_sign_negative() {
        -reference
    } else {
        reference
    };
    Some((reference.to_bits() != value.to_bits()).then(|| format!("{reference:e}")))
}

/// The significand and power of ten that serde_json reads from Python's `repr` of `value`.
///
/// `repr` writes the shortest digits that read back as `value`: in exponent form when the
/// decimal point would be more than 16 places right or 4 left of the first digit
/// (`1e+16`, `1e-05`), else in positional form with `.0` after whole numbers.
fn python_repr_parts(value: f64) -> (u64, i32) {
    let shortest = format!("{value:e}");
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let point = exponent.parse::<i32>().unwrap_or(0) + 1;
    let count = digits.len() as i32;
    let significand: u64 = digits.parse().unwrap_or(0);
    if (-3..=16).contains(&point) && point >= count {
        // "123000.0": the zeros and the ".0" digit are part of the significand.
        (significand * 10u64.pow((point - count + 1) as u32), -1)
    } else {
        (significand, point - count)
    }
}

/// Powers of ten as serde_json's table holds them (each the nearest double).
static POW10: LazyLock<Vec<f64>> = LazyLock::new(|| {
    (0..=308)
        .map(|i| format!("1e{i}").parse().unwrap_or(f64::INFINITY))
        .collect()
});

/// serde_json's reading without `float_roundtrip`: `significand` times (or divided by) one power
/// of ten, in floating point; `None` when it overflows.
fn approximate(significand: u64, mut exponent: i32) -> Option<f64> {
    let mut value = significand as f64;
    loop {
        match POW10.get(exponent.unsigned_abs() as usize) {
            Some(&power) => {
                if exponent >= 0 {
                    value *= power;
                    if value.is_infinite() {
                        return None;
                    }
                } else {
                    value /= power;
                }
                return Some(value);
            }
            None if value == 0.0 => return Some(value),
            None if exponent >= 0 => return None,
            None => {
                value /= 1e308;
                exponent += 308;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(literal: &str) -> String {
        to_string(&from_str::<Value>(literal).unwrap())
    }

    #[test]
    fn numbers_read_as_the_reference_holds_them() {
        // Values printed by openai-harmony 0.0.8 (Python package) for these defaults.
        let cases = [
            ("1e30", "1e30"),
            ("1.0", "1.0"),
            ("-0", "0"),
            ("-0.0", "-0.0"),
            ("1E+2", "100.0"),
            ("123456789012345678901234567890", "1.2345678901234568e29"),
            ("18446744073709551616", "1.8446744073709552e19"),
            ("-9223372036854775809", "-9.223372036854776e18"),
            ("2.5e-5", "0.000025"),
            ("123.456e10", "1234560000000.0"),
            ("2.7715077941825975e-163", "2.7715077941825978e-163"),
            ("2.2790121708605243e+274", "2.2790121708605247e274"),
            ("-2.9205048131065683e-196", "-2.9205048131065687e-196"),
            (
                "[1e30, -0, {\"a\": -1.5e-300}]",
                "[1e30,0,{\"a\":-1.4999999999999998e-300}]",
            ),
        ];
        for (literal, printed) in cases {
            assert_eq!(read(literal), printed, "{literal}");
        }
    }

    #[test]
    fn strings_and_other_text_are_left_alone() {
        let text = r#"{"a": "-0 1e400 \" 12", "b": [-0, 1.5], "c\\": 7}"#;
        let rewritten = rewrite_numbers(text).unwrap();
        assert_eq!(
            rewritten,
            r#"{"a": "-0 1e400 \" 12", "b": [0, 1.5], "c\\": 7}"#
        );
        assert!(matches!(
            rewrite_numbers("[1, 2.5, -3]"),
            Ok(Cow::Borrowed(_))
        ));
    }

    #[test]
    fn numbers_the_reference_cannot_read_are_refused_with_their_place() {
        // Read exactly it is the largest double; read as the reference reads it, infinity.
        let big = format!("17976931348623157{}", "0".repeat(292));
        assert!(big.parse::<f64>().unwrap().is_finite());
        let error = from_str::<Value>(&format!("[1,\n {big}]"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 2 column 2"), "{error}");
        // Invalid JSON reports the parser's own error.
        assert!(from_str::<Value>("[1e400,").is_err());
        assert!(from_str::<Value>("[-]").is_err());
    }
}
