//! Data messages (seed 004): merge by identity, render for the model, resolve `†` variables,
//! store `_outputPath` results.

mod assemble;
mod merge;
mod output;
mod render;
mod variables;

pub use assemble::{assemble, has_data};
pub use merge::{MergedData, current, data_parts, deep_merge, merge_parts};
pub use output::{OUTPUT_PATH, output_data};
pub use render::{render_all, render_block, render_part};
pub use variables::{SIGIL, lookup, resolve_call};
