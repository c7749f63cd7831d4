//! `chorus._native`: the native half of the `chorus` Python package (built with maturin).
//!
//! The Python modules (`python/chorus/*.py`) hold the public API and its pydantic models; this
//! extension does the work: Harmony rendering, parsing and tokenizing ([`harmony`]), format
//! conversion ([`formats`]), counting and trimming ([`context`]), validation ([`validate`]).

mod context;
mod formats;
mod harmony;
mod repairs;
mod validate;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    harmony::register(module)?;
    formats::register(module)?;
    context::register(module)?;
    validate::register(module)
}
