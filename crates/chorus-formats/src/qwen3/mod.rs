//! Qwen3.
