//! Anthropic text-block citations ⇄ chorus `[cit_..]` anchors and `metadata.citation_map`.

use chorus_core::{Citation, CitationLocation, CitationMap};
use serde_json::{Map, Value};

/// Anthropic citation location types; other chorus citations cannot be sent.
pub const LOCATION_TYPES: [&str; 5] = [
    "char_location",
    "page_location",
    "content_block_location",
    "web_search_result_location",
    "search_result_location",
];

/// Appends one anchor per citation to `text` and records the citations in `map`.
pub fn anchor(text: &mut String, citations: &[Value], map: &mut CitationMap) {
    for cited in citations {
        let Some(fields) = cited.as_object() else {
            continue;
        };
        let id = format!("cit_{:02}", map.len() + 1);
        text.push_str(&format!("[{id}]"));
        let mut extra = fields.clone();
        let take = |extra: &mut Map<String, Value>, key: &str| {
            extra
                .remove(key)
                .and_then(|v| v.as_str().map(str::to_owned))
        };
        let source_type = take(&mut extra, "type").unwrap_or_default();
        let snippet = take(&mut extra, "cited_text");
        let citation = Citation {
            source_type,
            source_name: take(&mut extra, "document_title"),
            url: take(&mut extra, "url"),
            location: snippet.map(|text_snippet| CitationLocation {
                text_snippet: Some(text_snippet),
                ..CitationLocation::default()
            }),
            extra,
            ..Citation::default()
        };
        map.insert(id, citation);
    }
}

/// Splits trailing anchors that name Anthropic citations off `text`: the text to send and the
/// citations, plus the ids of anchors that stay in the text because they cannot be sent.
pub fn unanchor<'a>(text: &'a str, map: Option<&CitationMap>) -> (&'a str, Vec<Value>) {
    let Some(map) = map else {
        return (text, Vec::new());
    };
    let mut end = text.len();
    let mut found = Vec::new();
    while let Some(open) = text[..end].strip_suffix(']').and_then(|t| t.rfind("[cit_")) {
        let id = &text[open + 1..end - 1];
        let Some(citation) = map
            .get(id)
            .filter(|c| LOCATION_TYPES.contains(&c.source_type.as_str()))
        else {
            break;
        };
        found.push(to_block(citation));
        end = open;
    }
    found.reverse();
    (&text[..end], found)
}

fn to_block(citation: &Citation) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::String(citation.source_type.clone()));
    if let Some(snippet) = citation
        .location
        .as_ref()
        .and_then(|l| l.text_snippet.clone())
    {
        out.insert("cited_text".into(), Value::String(snippet));
    }
    if let Some(title) = &citation.source_name {
        out.insert("document_title".into(), Value::String(title.clone()));
    }
    if let Some(url) = &citation.url {
        out.insert("url".into(), Value::String(url.clone()));
    }
    out.extend(citation.extra.clone());
    Value::Object(out)
}

/// Whether a citation survives as an Anthropic citation (the others are reported as lost).
pub fn sendable(citation: &Citation) -> bool {
    LOCATION_TYPES.contains(&citation.source_type.as_str())
        && citation.source_id.is_none()
        && citation.access_date.is_none()
        && citation.score.is_none()
        && citation
            .location
            .as_ref()
            .is_none_or(|l| l.page_number.is_none() && l.bbox.is_none() && l.extra.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anchors_round_trip_to_the_same_citations() {
        let cited = vec![
            json!({"type": "char_location", "cited_text": "grass is green",
            "document_index": 0, "document_title": "Facts", "start_char_index": 0, "end_char_index": 14}),
        ];
        let mut text = "The grass is green.".to_owned();
        let mut map = CitationMap::new();
        anchor(&mut text, &cited, &mut map);
        assert_eq!(text, "The grass is green.[cit_01]");
        let (plain, back) = unanchor(&text, Some(&map));
        assert_eq!(plain, "The grass is green.");
        assert_eq!(back, cited);
    }
}
