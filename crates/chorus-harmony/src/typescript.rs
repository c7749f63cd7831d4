//! JSON Schema to the TypeScript-like tool signatures of Harmony's `namespace` sections.
//!
//! [`TypeScriptStyle::Reference`] reproduces openai-harmony 0.0.8 byte for byte, including its
//! quirks (nested objects lose their indentation, `anyOf`/`allOf`/`$ref`/`const` become `any`,
//! non-string enums are dropped). [`TypeScriptStyle::Correct`] prints valid TypeScript for those.

use serde_json::Value;

use crate::reference_json;

/// Which JSON-Schema-to-TypeScript printer to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TypeScriptStyle {
    /// Byte-exact with openai-harmony 0.0.8 (what gpt-oss was trained on).
    #[default]
    Reference,
    /// Valid TypeScript for nested objects, unions, intersections, `$ref`, `const` and enums.
    Correct,
}

/// Prints the parameter type of a tool whose parameters follow `schema`.
pub(crate) fn schema_to_typescript(schema: &Value, style: TypeScriptStyle) -> String {
    match style {
        TypeScriptStyle::Reference => reference_type(schema, ""),
        TypeScriptStyle::Correct => Correct { root: schema }.ty(schema, "", 0),
    }
}

fn text<'a>(schema: &'a Value, key: &str) -> Option<&'a str> {
    schema.get(key).and_then(Value::as_str)
}

fn has_enum(schema: &Value) -> bool {
    schema
        .get("enum")
        .and_then(Value::as_array)
        .is_some_and(|values| !values.is_empty())
}

fn is_nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// Appends ` | null` when the schema is `nullable` and the type does not already say `null`.
fn with_null(mut ty: String, schema: &Value) -> String {
    if is_nullable(schema) && !ty.contains("null") {
        ty.push_str(" | null");
    }
    ty
}

/// How the reference writes a default: strings quoted unless the schema is an enum (then raw,
/// or JSON-quoted in trailing variant comments when `json_for_enum` is set).
fn reference_default(default: &Value, schema: &Value, json_for_enum: bool) -> String {
    match default.as_str() {
        Some(s) if !has_enum(schema) => format!("default: \"{s}\""),
        Some(s) if !json_for_enum => format!("default: {s}"),
        _ => format!("default: {}", reference_json::to_string(default)),
    }
}

/// The reference printer.
fn reference_type(schema: &Value, indent: &str) -> String {
    if let Some(variants) = schema.get("oneOf").and_then(Value::as_array) {
        let mut out = String::new();
        for variant in variants {
            out.push_str(&format!("\n{indent} | "));
            out.push_str(&with_null(
                reference_type(variant, &format!("{indent}   ")),
                variant,
            ));
            let mut comments = Vec::new();
            if let Some(description) = text(variant, "description") {
                comments.push(description.to_string());
            }
            if let Some(default) = variant.get("default") {
                comments.push(reference_default(default, variant, true));
            }
            if !comments.is_empty() {
                out.push_str(&format!(" // {}", comments.join(" ")));
            }
        }
        return out;
    }
    if let Some(types) = schema.get("type").and_then(Value::as_array) {
        let names: Vec<&str> = types
            .iter()
            .filter_map(Value::as_str)
            .map(|t| if t == "integer" { "number" } else { t })
            .collect();
        if !names.is_empty() {
            return names.join(" | ");
        }
    }
    match text(schema, "type") {
        Some("object") => reference_object(schema, indent),
        Some("string") => {
            let literals: Vec<String> = schema
                .get("enum")
                .and_then(Value::as_array)
                .map(|values| {
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| format!("\"{s}\""))
                        .collect()
                })
                .unwrap_or_default();
            if literals.is_empty() {
                "string".to_string()
            } else {
                literals.join(" | ")
            }
        }
        Some("number" | "integer") => "number".to_string(),
        Some("boolean") => "boolean".to_string(),
        Some("array") => match schema.get("items") {
            Some(items) => format!("{}[]", reference_type(items, indent)),
            None => "Array<any>".to_string(),
        },
        _ => "any".to_string(),
    }
}

/// The reference printer for `"type": "object"`.
fn reference_object(schema: &Value, indent: &str) -> String {
    let mut out = String::new();
    if let Some(description) = text(schema, "description") {
        out.push_str(&format!("{indent}// {description}\n"));
    }
    out.push_str("{\n");
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (key, property) in properties {
            let optional = if required.contains(&key.as_str()) {
                ""
            } else {
                "?"
            };
            if let Some(title) = text(property, "title") {
                out.push_str(&format!("{indent}// {title}\n{indent}//\n"));
            }
            let one_of = property.get("oneOf");
            if one_of.is_none()
                && let Some(description) = text(property, "description")
            {
                out.push_str(&format!("{indent}// {description}\n"));
            }
            if let Some(examples) = property.get("examples").and_then(Value::as_array)
                && !examples.is_empty()
            {
                out.push_str(&format!("{indent}// Examples:\n"));
                for example in examples.iter().filter_map(Value::as_str) {
                    out.push_str(&format!("{indent}// - \"{example}\"\n"));
                }
            }
            if let Some(variants) = one_of.and_then(Value::as_array) {
                reference_one_of_property(&mut out, key, optional, property, variants, indent);
                continue;
            }
            out.push_str(&format!("{indent}{key}{optional}: "));
            let ty = reference_type(property, &format!("{indent}    "));
            out.push_str(&with_null(ty, property));
            out.push(',');
            if one_of.is_none()
                && let Some(default) = property.get("default")
            {
                out.push_str(&format!(
                    " // {}",
                    reference_default(default, property, false)
                ));
            }
            out.push('\n');
        }
    }
    out.push_str(&format!("{indent}}}"));
    out
}

/// The reference printer for a property whose schema is a `oneOf`.
fn reference_one_of_property(
    out: &mut String,
    key: &str,
    optional: &str,
    property: &Value,
    variants: &[Value],
    indent: &str,
) {
    let description = text(property, "description");
    let first_variant_says_it = variants
        .first()
        .and_then(|v| text(v, "description"))
        .is_some_and(|d| Some(d) == description);
    let described_above = description.is_some() && !first_variant_says_it;
    if described_above {
        out.push_str(&format!("{indent}// {}\n", description.unwrap_or_default()));
    }
    if let Some(default) = property.get("default") {
        out.push_str(&format!(
            "{indent}// {}\n",
            reference_default(default, property, false)
        ));
    }
    out.push_str(&format!("{indent}{key}{optional}:\n"));
    for (i, variant) in variants.iter().enumerate() {
        out.push_str(&format!("{indent} | "));
        out.push_str(&with_null(
            reference_type(variant, &format!("{indent}   ")),
            variant,
        ));
        let mut comments = Vec::new();
        if !(i == 0 && described_above)
            && let Some(d) = text(variant, "description").filter(|d| Some(*d) != description)
        {
            comments.push(d.to_string());
        }
        if let Some(default) = variant.get("default") {
            comments.push(reference_default(default, variant, false));
        }
        if !comments.is_empty() {
            out.push_str(&format!(" // {}", comments.join(" ")));
        }
        out.push('\n');
    }
    out.push_str(&format!("{indent},\n"));
}

/// The correct printer; `root` resolves local `$ref`s.
struct Correct<'a> {
    root: &'a Value,
}

/// How deep `$ref`s are followed before printing `any` (guards recursive schemas).
const MAX_REF_DEPTH: usize = 8;

impl Correct<'_> {
    fn ty(&self, schema: &Value, indent: &str, depth: usize) -> String {
        with_null(self.bare(schema, indent, depth), schema)
    }

    fn bare(&self, schema: &Value, indent: &str, depth: usize) -> String {
        if let Some(reference) = text(schema, "$ref") {
            return match self.resolve(reference) {
                Some(target) if depth < MAX_REF_DEPTH => self.ty(target, indent, depth + 1),
                _ => "any".to_string(),
            };
        }
        if let Some(value) = schema.get("const") {
            return reference_json::to_string(value);
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array)
            && !values.is_empty()
        {
            return values
                .iter()
                .map(reference_json::to_string)
                .collect::<Vec<_>>()
                .join(" | ");
        }
        for (key, separator) in [("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")] {
            if let Some(parts) = schema.get(key).and_then(Value::as_array)
                && !parts.is_empty()
            {
                let printed: Vec<String> = parts
                    .iter()
                    .map(|p| self.ty(p, indent, depth))
                    .map(|t| parenthesize_compound(&t))
                    .collect();
                return printed.join(separator);
            }
        }
        if let Some(types) = schema.get("type").and_then(Value::as_array) {
            let printed: Vec<String> = types
                .iter()
                .filter_map(Value::as_str)
                .map(|t| self.of_type(t, schema, indent, depth))
                .collect();
            if !printed.is_empty() {
                return printed.join(" | ");
            }
        }
        match text(schema, "type") {
            Some(t) => self.of_type(t, schema, indent, depth),
            None if schema.get("properties").is_some() => self.object(schema, indent, depth),
            None => "any".to_string(),
        }
    }

    fn of_type(&self, ty: &str, schema: &Value, indent: &str, depth: usize) -> String {
        match ty {
            "object" => self.object(schema, indent, depth),
            "array" => match schema.get("items") {
                Some(items) => {
                    let item = self.ty(items, indent, depth);
                    format!("{}[]", parenthesize_compound(&item))
                }
                None => "any[]".to_string(),
            },
            "integer" | "number" => "number".to_string(),
            "string" | "boolean" | "null" => ty.to_string(),
            _ => "any".to_string(),
        }
    }

    fn object(&self, schema: &Value, indent: &str, depth: usize) -> String {
        let properties = schema.get("properties").and_then(Value::as_object);
        let extra = schema.get("additionalProperties").filter(|v| v.is_object());
        let Some(properties) = properties.filter(|p| !p.is_empty()) else {
            return match extra {
                Some(values) => format!("Record<string, {}>", self.ty(values, indent, depth)),
                None => "object".to_string(),
            };
        };
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let inner = format!("{indent}  ");
        let mut out = String::from("{\n");
        for (key, property) in properties {
            for line in text(property, "title")
                .into_iter()
                .chain(text(property, "description"))
            {
                for part in line.lines() {
                    out.push_str(&format!("{inner}// {part}\n"));
                }
            }
            let optional = if required.contains(&key.as_str()) {
                ""
            } else {
                "?"
            };
            let name = if is_identifier(key) {
                key.clone()
            } else {
                Value::from(key.as_str()).to_string()
            };
            out.push_str(&format!(
                "{inner}{name}{optional}: {},",
                self.ty(property, &inner, depth)
            ));
            if let Some(default) = property.get("default") {
                out.push_str(&format!(
                    " // default: {}",
                    reference_json::to_string(default)
                ));
            }
            out.push('\n');
        }
        out.push_str(&format!("{indent}}}"));
        out
    }

    /// Resolves `#/$defs/Name`, `#/definitions/Name` or any other local JSON pointer.
    fn resolve(&self, reference: &str) -> Option<&Value> {
        self.root.pointer(reference.strip_prefix('#')?)
    }
}

/// Wraps `ty` in parentheses when it is a union or intersection at its top level.
fn parenthesize_compound(ty: &str) -> String {
    let mut depth = 0i32;
    let mut compound = false;
    let bytes = ty.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' | b'>' => depth -= 1,
            b'|' | b'&' if depth == 0 && i > 0 && bytes[i - 1] == b' ' => compound = true,
            _ => {}
        }
    }
    if compound {
        format!("({ty})")
    } else {
        ty.to_string()
    }
}

/// Whether `key` can be written as a bare TypeScript property name.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reference_style_keeps_the_reference_quirks() {
        let schema = json!({"type": "object", "properties": {
            "inner": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "pick": {"anyOf": [{"type": "string"}, {"type": "number"}]}
        }});
        let printed = schema_to_typescript(&schema, TypeScriptStyle::Reference);
        assert_eq!(
            printed,
            "{\ninner?: {\n    a?: number,\n    },\npick?: any,\n}"
        );
    }

    #[test]
    fn correct_style_prints_valid_typescript() {
        let schema = json!({
            "type": "object",
            "$defs": {"Unit": {"enum": [1, 2]}},
            "properties": {
                "inner": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                "pick": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": ["string", "null"]}}]},
                "both": {"allOf": [{"$ref": "#/$defs/Unit"}, {"const": "x"}]},
                "map": {"type": "object", "additionalProperties": {"type": "boolean"}},
                "dash-key": {"type": "string", "description": "d", "default": "v"}
            },
            "required": ["inner"]
        });
        let printed = schema_to_typescript(&schema, TypeScriptStyle::Correct);
        let expected = "{\n  inner: {\n    a: number,\n  },\n  pick?: string | (string | null)[],\n  both?: (1 | 2) & \"x\",\n  map?: Record<string, boolean>,\n  // d\n  \"dash-key\"?: string, // default: \"v\"\n}";
        assert_eq!(printed, expected);
    }

    #[test]
    fn recursive_refs_stop() {
        let schema = json!({"$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}, "$ref": "#/$defs/N"});
        let printed = schema_to_typescript(&schema, TypeScriptStyle::Correct);
        assert!(printed.contains("next?: any"), "{printed}");
    }
}
