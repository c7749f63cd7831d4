//! Format conversion for `chorus.formats`: JSON (or template text) in, JSON out, losses listed.

use chorus_formats::{EncodeOptions, Error, Format, NamePolicy};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

create_exception!(
    chorus.formats,
    ConversionError,
    PyValueError,
    "A document that cannot be read in its format or written in the target format."
);
create_exception!(
    chorus.formats,
    LossError,
    ConversionError,
    "strict=True: the target format cannot carry everything (args[1]: the losses' JSON)."
);

/// The format with id `id`, or a ConversionError naming the ids there are.
pub(crate) fn format(id: &str) -> PyResult<Format> {
    Format::from_id(id).ok_or_else(|| {
        ConversionError::new_err(format!(
            "unknown format {id:?}; expected one of {}",
            Format::ids().join(", ")
        ))
    })
}

/// Converts `input` (JSON text, or the template text of a text format); returns the output
/// text and the losses' JSON.
#[pyfunction]
#[pyo3(signature = (input, from_, to, strict, names, add_generation_prompt, enable_thinking))]
#[allow(clippy::too_many_arguments)]
fn convert(
    py: Python<'_>,
    input: &str,
    from_: &str,
    to: &str,
    strict: bool,
    names: &str,
    add_generation_prompt: bool,
    enable_thinking: Option<bool>,
) -> PyResult<(String, String)> {
    let (from, to) = (format(from_)?, format(to)?);
    let names = match names {
        "prefix" => NamePolicy::Prefix,
        "history" => NamePolicy::History,
        other => {
            return Err(PyValueError::new_err(format!(
                "names={other:?}: expected \"prefix\" or \"history\""
            )));
        }
    };
    let options = EncodeOptions {
        names,
        add_generation_prompt,
        enable_thinking,
    };
    let result = py.detach(|| chorus_formats::convert(from, to, input, &options, strict));
    match result {
        Ok(encoded) => Ok((encoded.value, losses_json(&encoded.losses))),
        Err(Error::Lossy(losses)) => Err(LossError::new_err((
            format!(
                "strict: {} cannot carry {} item(s) of the input",
                to.id(),
                losses.len()
            ),
            losses_json(&losses),
        ))),
        Err(other) => Err(ConversionError::new_err(format!("{from_}: {other}"))),
    }
}

fn losses_json(losses: &[chorus_formats::Loss]) -> String {
    serde_json::to_string(losses).unwrap_or_else(|_| "[]".to_string())
}

/// The capability table of every format (JSON).
#[pyfunction]
fn formats() -> String {
    let tables: Vec<_> = Format::ALL.iter().map(|f| f.capabilities()).collect();
    serde_json::to_string(&tables).unwrap_or_else(|_| "[]".to_string())
}

/// Adds `convert`, `formats` and the errors to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("ConversionError", py.get_type::<ConversionError>())?;
    module.add("LossError", py.get_type::<LossError>())?;
    module.add_function(wrap_pyfunction!(convert, module)?)?;
    module.add_function(wrap_pyfunction!(formats, module)?)?;
    Ok(())
}
