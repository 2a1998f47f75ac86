//! Decompresses arbitrary bytes with the codec picked by the first byte, with a small limit,
//! and checks the limit holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::records::{Compression, Scratch};

const LIMIT: usize = 4 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let codec = Compression::ALL[usize::from(pick) % Compression::ALL.len()];
    let mut scratch = Scratch::with_limit(LIMIT);
    if let Ok(out) = scratch.decompress(codec, input) {
        assert!(out.len() <= LIMIT);
    }
    // A reused scratch must give the same answer as a fresh one.
    let again = scratch.decompress(codec, input).map(<[u8]>::to_vec);
    let fresh = Scratch::with_limit(LIMIT)
        .decompress(codec, input)
        .map(<[u8]>::to_vec);
    assert_eq!(again, fresh);
});
