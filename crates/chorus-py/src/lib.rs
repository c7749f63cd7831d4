//! `chorus._native`: the native half of the `chorus` Python package (built with maturin).
//!
//! The Python modules (`python/chorus/*.py`) hold the public API and its pydantic models; this
//! extension does the work: Harmony rendering, parsing and tokenizing ([`harmony`]).

mod harmony;
mod repairs;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    harmony::register(module)
}
