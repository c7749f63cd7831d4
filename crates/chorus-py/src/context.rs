//! Token counting and trimming for `chorus.context` (chorus-context), JSON in and out.

use chorus_context::data::{data_parts, merge_parts, render_all};
use chorus_context::trim::trim_chorus;
use chorus_context::{CostTable, TokenCounter};
use chorus_core::{Conversation, Message};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::formats::format;

create_exception!(
    chorus.context,
    ContextError,
    PyValueError,
    "A conversation, model or tokenizer that cannot be counted or trimmed."
);

fn error(e: impl std::fmt::Display) -> PyErr {
    ContextError::new_err(e.to_string())
}

/// The counter for `model`, with the text counted by a tokenizer.json when one is given.
fn counter(
    model: &str,
    tokenizer: Option<&str>,
) -> Result<TokenCounter, chorus_context::ContextError> {
    let table = CostTable::default();
    match tokenizer {
        None => TokenCounter::with_table(model, &table),
        #[cfg(feature = "hf")]
        Some(path) => TokenCounter::with_tokenizer(loaded(path)?, model, &table),
        #[cfg(not(feature = "hf"))]
        Some(path) => Err(chorus_context::ContextError::Tokenizer {
            path: path.into(),
            message: "this build of chorus reads no tokenizer.json (built without the `hf` \
                      feature of chorus-py)"
                .into(),
        }),
    }
}

/// The tokenizer.json at `path`, read once per process (a large file takes a while to load).
#[cfg(feature = "hf")]
fn loaded(
    path: &str,
) -> Result<std::sync::Arc<chorus_context::HfTokenizer>, chorus_context::ContextError> {
    use std::collections::HashMap;
    use std::path::Path;
    use std::sync::{Arc, LazyLock, Mutex};

    use chorus_context::HfTokenizer;

    static LOADED: LazyLock<Mutex<HashMap<String, Arc<HfTokenizer>>>> =
        LazyLock::new(Default::default);
    if let Some(found) = LOADED.lock().ok().and_then(|map| map.get(path).cloned()) {
        return Ok(found);
    }
    let tokenizer = Arc::new(HfTokenizer::from_file(Path::new(path))?);
    if let Ok(mut map) = LOADED.lock() {
        map.insert(path.to_string(), tokenizer.clone());
    }
    Ok(tokenizer)
}

fn read(input: &str, from_: &str) -> PyResult<Conversation> {
    format(from_)?.decode(input).map_err(error)
}

/// Counts a conversation (JSON in format `from_`): the count's JSON.
#[pyfunction]
#[pyo3(signature = (conversation, model, tokenizer, from_))]
fn count(
    py: Python<'_>,
    conversation: &str,
    model: &str,
    tokenizer: Option<&str>,
    from_: &str,
) -> PyResult<String> {
    let conversation = read(conversation, from_)?;
    py.detach(|| {
        let counted = counter(model, tokenizer)
            .and_then(|c| c.count_conversation(&conversation))
            .map_err(error)?;
        serde_json::to_string(&counted).map_err(error)
    })
}

/// Counts one text (with a tokenizer.json when given).
#[pyfunction]
#[pyo3(signature = (text, model, tokenizer=None))]
fn count_text(py: Python<'_>, text: &str, model: &str, tokenizer: Option<&str>) -> PyResult<usize> {
    let counter = counter(model, tokenizer).map_err(error)?;
    Ok(py.detach(|| counter.count_text(text)))
}

/// Trims a chorus conversation to `max_tokens`: the kept conversation's JSON and the report's.
#[pyfunction]
#[pyo3(signature = (conversation, max_tokens, model, tokenizer, summary))]
fn trim(
    py: Python<'_>,
    conversation: &str,
    max_tokens: usize,
    model: &str,
    tokenizer: Option<&str>,
    summary: Option<&str>,
) -> PyResult<(String, String)> {
    let mut conversation = read(conversation, "chorus")?;
    let summary: Option<Message> = summary
        .map(|text| {
            serde_json::from_str(text)
                .map_err(|e| error(format!("summary: expected one chorus message; {e}")))
        })
        .transpose()?;
    py.detach(|| {
        let counter = counter(model, tokenizer).map_err(error)?;
        let tools = conversation.tools.clone().unwrap_or_default();
        let trimmed = trim_chorus(
            &conversation.messages,
            &tools,
            &counter,
            max_tokens,
            summary.as_ref(),
        )
        .map_err(error)?;
        conversation.messages = trimmed.messages;
        Ok((
            serde_json::to_string(&conversation).map_err(error)?,
            serde_json::to_string(&trimmed.report).map_err(error)?,
        ))
    })
}

/// The data parts of a chorus conversation merged by identity (seed 004), as a JSON list of
/// `{kind, instance, data, description, schema}`.
#[pyfunction]
fn merge_data(conversation: &str) -> PyResult<String> {
    let conversation = read(conversation, "chorus")?;
    let merged: Vec<serde_json::Value> = merge_parts(data_parts(&conversation.messages))
        .into_iter()
        .map(|m| {
            serde_json::json!({
                "kind": m.kind,
                "instance": m.instance,
                "data": m.data,
                "description": m.description,
                "schema": m.schema,
            })
        })
        .collect();
    serde_json::to_string(&merged).map_err(error)
}

/// The text a model is shown for the merged data parts of a chorus conversation.
#[pyfunction]
fn render_data(conversation: &str) -> PyResult<String> {
    let conversation = read(conversation, "chorus")?;
    Ok(render_all(&merge_parts(data_parts(&conversation.messages))))
}

/// Adds `count`, `count_text`, `trim`, `merge_data`, `render_data` and `ContextError` to the
/// module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add("ContextError", module.py().get_type::<ContextError>())?;
    module.add_function(wrap_pyfunction!(count, module)?)?;
    module.add_function(wrap_pyfunction!(count_text, module)?)?;
    module.add_function(wrap_pyfunction!(trim, module)?)?;
    module.add_function(wrap_pyfunction!(merge_data, module)?)?;
    module.add_function(wrap_pyfunction!(render_data, module)?)?;
    Ok(())
}
