//! Fuzzes heartbeat record decoding. Input: 2 bytes big-endian key length, the key, then the
//! value. Decoding must never panic, and whatever decodes must encode back to a prefix of the
//! bytes it was read from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::mm2::heartbeat;

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (key, value) = rest.split_at(usize::from(u16::from_be_bytes(*len)).min(rest.len()));
    if let Ok(k) = heartbeat::decode_key(key) {
        let encoded = heartbeat::encode_key(&k).expect("decoded aliases fit an int16 length");
        assert!(key.starts_with(&encoded), "key does not round-trip");
    }
    if let Ok(v) = heartbeat::decode_value(value) {
        assert!(
            value.starts_with(&heartbeat::encode_value(&v)),
            "value does not round-trip"
        );
    }
});
