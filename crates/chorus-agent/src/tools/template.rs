//! `{name}` placeholders in URL, header and argument templates, filled from tool arguments.

use serde_json::Value;

/// A template could not be filled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template names an argument the call did not give.
    #[error("the template needs argument `{0}`, which the call did not give")]
    Missing(String),
    /// The argument is an object or array, which has no text form in a template.
    #[error(
        "argument `{0}` is an object or array; a template placeholder needs a string, number or boolean"
    )]
    NotScalar(String),
    /// A `{` without its `}`.
    #[error("unclosed `{{` in template {0:?}")]
    Unclosed(String),
}

impl From<TemplateError> for super::ToolOutput {
    /// The error result a model sees when its arguments cannot fill a template.
    fn from(e: TemplateError) -> Self {
        super::ToolOutput::error(
            "InvalidArguments",
            format!("{e}. Hint: give that argument."),
        )
    }
}

/// Fills `{name}` with the argument `name` (percent-encoded when `encode`); `{{` and `}}` are
/// literal braces.
pub fn render(template: &str, arguments: &Value, encode: bool) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            continue;
        }
        if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
            continue;
        }
        let end = tail
            .find('}')
            .ok_or_else(|| TemplateError::Unclosed(template.to_owned()))?;
        let name = &tail[1..end];
        let text = scalar_text(name, arguments.get(name))?;
        if encode {
            out.push_str(&percent_encode(&text));
        } else {
            out.push_str(&text);
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn scalar_text(name: &str, value: Option<&Value>) -> Result<String, TemplateError> {
    match value {
        None | Some(Value::Null) => Err(TemplateError::Missing(name.to_owned())),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        Some(_) => Err(TemplateError::NotScalar(name.to_owned())),
    }
}

/// Percent-encodes everything except RFC 3986 unreserved characters.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fills_and_encodes_placeholders() {
        let args = json!({"city": "São Paulo/x", "days": 3});
        assert_eq!(
            render("/w/{city}?d={days}&l={{x}}", &args, true).unwrap(),
            "/w/S%C3%A3o%20Paulo%2Fx?d=3&l={x}"
        );
        assert_eq!(render("{city}", &args, false).unwrap(), "São Paulo/x");
    }

    #[test]
    fn reports_missing_and_non_scalar_arguments() {
        let args = json!({"a": [1]});
        assert_eq!(
            render("{b}", &args, false),
            Err(TemplateError::Missing("b".into()))
        );
        assert_eq!(
            render("{a}", &args, false),
            Err(TemplateError::NotScalar("a".into()))
        );
        assert!(matches!(
            render("{a", &args, false),
            Err(TemplateError::Unclosed(_))
        ));
    }
}
