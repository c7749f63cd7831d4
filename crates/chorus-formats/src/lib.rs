//! Codecs between chorus messages and provider formats.
