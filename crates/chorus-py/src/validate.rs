//! Validation for `chorus.validate` (chorus-core's validator), JSON in, problems out.

use std::str::FromStr;

use chorus_core::{Kind, Validator};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A problem: JSON pointer, message, hint, severity.
type ProblemTuple = (String, String, Option<String>, &'static str);

fn kind(name: &str) -> PyResult<Option<Kind>> {
    if name == "auto" {
        return Ok(None);
    }
    Kind::from_str(name).map(Some).map_err(|_| {
        let names: Vec<_> = Kind::ALL.iter().map(|k| k.name()).collect();
        PyValueError::new_err(format!(
            "kind={name:?}: expected \"auto\" or one of {}",
            names.join(", ")
        ))
    })
}

/// Validates a document (JSON text): the kind it was read as and its problems.
#[pyfunction]
fn validate(
    py: Python<'_>,
    document: &[u8],
    kind: &str,
) -> PyResult<(Option<&'static str>, Vec<ProblemTuple>)> {
    let kind = self::kind(kind)?;
    let report = py.detach(|| Validator::standard().validate_bytes(document, kind));
    let problems = report
        .problems
        .into_iter()
        .map(|p| {
            let severity = match p.severity {
                chorus_core::Severity::Error => "error",
                chorus_core::Severity::Warning => "warning",
            };
            (p.pointer, p.message, p.hint, severity)
        })
        .collect();
    Ok((report.kind.map(Kind::name), problems))
}

/// The JSON Schema of a kind (JSON text).
#[pyfunction]
fn schema(kind: &str) -> PyResult<String> {
    let kind = self::kind(kind)?
        .ok_or_else(|| PyValueError::new_err("schema(): name a kind, not \"auto\""))?;
    Ok(kind.schema().to_string())
}

/// The names of the kinds.
#[pyfunction]
fn kinds() -> Vec<&'static str> {
    Kind::ALL.iter().map(|k| k.name()).collect()
}

/// Adds `validate`, `schema` and `kinds` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(validate, module)?)?;
    module.add_function(wrap_pyfunction!(schema, module)?)?;
    module.add_function(wrap_pyfunction!(kinds, module)?)?;
    Ok(())
}
