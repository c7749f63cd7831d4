//! Harmony chat format of gpt-oss: tokens, rendering, parsing and streaming.
