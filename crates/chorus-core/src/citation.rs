//! Citations and in-text anchors (seed 000, A.4).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// Evidence keyed by anchor id (`cit_01`), in the order given.
pub type CitationMap = IndexMap<String, Citation>;

/// One piece of evidence behind a statement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Citation {
    /// Kind of source, e.g. `pdf_document` or `web_search`.
    pub source_type: String,
    /// Stable id of the source document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Human-readable name of the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_name: Option<String>,
    /// Where the source can be found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// When the source was read (a date).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_date: Option<String>,
    /// Where in the source the evidence is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<CitationLocation>,
    /// Retrieval relevance score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<Number>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The place of a citation inside its source.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CitationLocation {
    /// Page number in a paged document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_number: Option<u64>,
    /// Box on the page as `[x1, y1, x2, y2]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bbox: Option<[Number; 4]>,
    /// The quoted text, for checking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_snippet: Option<String>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Anchors written `[cit_xx]` in `text`, in order of appearance, with their byte offsets.
pub(crate) fn anchors(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.match_indices("[cit_").filter_map(move |(start, _)| {
        let rest = &text[start + 1..];
        let end = rest.find(']')?;
        let id = &rest[..end];
        let well_formed = id.len() > 4
            && id[4..]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        well_formed.then_some((start, id))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_anchors_and_skips_malformed_ones() {
        let text = "Revenue grew [cit_01], driven by cloud [cit_02][cit_x y] and [cit_].";
        let found: Vec<_> = anchors(text).map(|(_, id)| id).collect();
        assert_eq!(found, ["cit_01", "cit_02"]);
    }
}
