//! JSON written as Python's `json.dumps(x, ensure_ascii=False)` writes it: `, ` and `: `
//! separators, keys in the given order, raw non-ASCII text and floats as Python's `repr`.

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};
use std::io::{self, Write};

struct PythonFormatter;

/// Python's item separator, `, `, before every item but the first.
fn separator<W: ?Sized + Write>(writer: &mut W, first: bool) -> io::Result<()> {
    if first {
        Ok(())
    } else {
        writer.write_all(b", ")
    }
}

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        separator(writer, first)
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        separator(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(float_repr(value).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(float_repr(f64::from(value)).as_bytes())
    }
}

/// `value` as Python's `json.dumps` writes it: keys in order, raw non-ASCII, `, ` and `: `.
pub fn dumps<T: Serialize>(value: &T) -> String {
    let mut out = Vec::new();
    let mut serializer = Serializer::with_formatter(&mut out, PythonFormatter);
    // Serializing a serde_json-compatible value into memory cannot fail.
    let _ = value.serialize(&mut serializer);
    String::from_utf8(out).unwrap_or_default()
}

/// A finite float as Python's `repr(float)`: the shortest digits that read back to the same
/// value, in positional notation when the decimal point falls within -4 < point <= 16, else
/// as `d.ddde+XX` (`1e+16`, `1e-05`, `0.0001`, `1000000000000000.0`).
pub fn float_repr(value: f64) -> String {
    if !value.is_finite() {
        // JSON has no such numbers; Python would write these words.
        return if value.is_nan() {
            "NaN".into()
        } else if value > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let sign = if value.is_sign_negative() { "-" } else { "" };
    if value == 0.0 {
        return format!("{sign}0.0");
    }
    // Rust's `{:e}` prints the shortest round-trip digits: `d.ddde-X`.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let point = exponent + 1;
    let body = if !(-4 < point && point <= 16) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { "" } else { "." };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{first}{dot}{rest}e{exp_sign}{:02}",
            exponent.unsigned_abs()
        )
    } else if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else {
        let point = point as usize;
        if point >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point - digits.len()))
        } else {
            format!("{}.{}", &digits[..point], &digits[point..])
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_python_separators_and_raw_unicode() {
        let value = json!({"name": "météo", "a": [1, 2.5, null, true], "s": "<b>\"q\"\n\u{1}"});
        assert_eq!(
            dumps(&value),
            r#"{"name": "météo", "a": [1, 2.5, null, true], "s": "<b>\"q\"\n\u0001"}"#
        );
    }

    #[test]
    fn floats_print_as_python_repr() {
        // Pairs checked against CPython 3's repr().
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e30, "1e+30"),
            (-2.5e-7, "-2.5e-07"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.1, "0.1"),
            (2.0, "2.0"),
            (-0.0, "-0.0"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (12345.678, "12345.678"),
        ];
        for (value, python) in cases {
            assert_eq!(float_repr(value), python, "{value:e}");
        }
    }
}
