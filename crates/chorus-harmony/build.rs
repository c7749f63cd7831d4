//! Writes the o200k_base byte-pair ranks into a compact table embedded in the library.
//!
//! The ranks come from the `tiktoken-rs` crate (which ships OpenAI's `o200k_base.tiktoken`);
//! the table is `ranks.bin`: for every rank in order, a little-endian `u32` end offset, followed
//! by the concatenated token bytes. Loading it at run time needs no parsing.

use std::io::Write as _;

/// Number of ordinary (non-special) tokens of o200k_base.
const ORDINARY_TOKENS: u32 = 199_998;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let bpe = tiktoken_rs::o200k_base().expect("tiktoken-rs ships o200k_base");
    let mut offsets = Vec::with_capacity(ORDINARY_TOKENS as usize * 4);
    let mut bytes = Vec::with_capacity(2_000_000);
    for rank in 0..ORDINARY_TOKENS {
        let token = bpe
            .decode_bytes(&[rank])
            .unwrap_or_else(|_| panic!("o200k_base has no rank {rank}"));
        bytes.extend_from_slice(&token);
        offsets.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    }
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut file = std::fs::File::create(out.join("ranks.bin")).expect("create ranks.bin");
    file.write_all(&offsets).expect("write offsets");
    file.write_all(&bytes).expect("write bytes");
}
