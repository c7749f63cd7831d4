//! Rendering merged data as the text the model reads, in seed 004's layout:
//!
//! ```text
//!
//! ## Data: ¶user
//! {
//!   "name": "John Doe",
//!   "age": 30
//! }
//! Represents the current user.
//! Schema for ¶user:
//! { …the schema… }
//! ```
//!
//! Each block starts with a newline (the seed's template literal opens with one), so blocks of
//! several identities concatenate into one text. JSON is pretty-printed with two-space indents
//! (the seed's copy lost its indentation). A block with an `_instance` names it in the heading:
//! `## Data: ¶state (_instance "a")`. A part without `kind` is shown as `¶data`.

use chorus_core::DataPart;

use super::merge::MergedData;

/// The text of one merged identity.
pub fn render_block(data: &MergedData) -> String {
    let name = data.kind.as_deref().unwrap_or("data");
    let mut out = format!("\n## Data: ¶{name}");
    if let Some(instance) = &data.instance {
        out.push_str(&format!(" (_instance {instance})"));
    }
    out.push('\n');
    out.push_str(&pretty(&data.data));
    if let Some(description) = &data.description {
        out.push('\n');
        out.push_str(description);
    }
    if let Some(schema) = &data.schema {
        out.push_str(&format!("\nSchema for ¶{name}:\n"));
        out.push_str(&pretty(schema));
    }
    out
}

/// The text of a single, unmerged data part.
pub fn render_part(part: &DataPart) -> String {
    render_block(&MergedData {
        kind: part.kind.clone(),
        instance: part.instance.clone(),
        data: part.data.clone(),
        description: part.description.clone(),
        schema: part.schema.clone(),
    })
}

/// The text of all merged identities, in order.
pub fn render_all(merged: &[MergedData]) -> String {
    merged.iter().map(render_block).collect()
}

fn pretty(value: &serde_json::Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}
