//! Shared test support: the fake OpenAI-compatible server.
//!
//! Each test file that needs it declares `mod support;` and uses `support::fake_openai`.
//! Not every test file uses every helper, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod fake_openai;
