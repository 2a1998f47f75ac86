//! Fuzzes checkpoint record decoding. Input: 2 bytes big-endian key length, the key, then the
//! value. Decoding must never panic, and whatever decodes must encode back to the bytes it was
//! read from (trailing bytes are ignored, so to a prefix of them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::mm2::checkpoint;

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (key, value) = rest.split_at(usize::from(u16::from_be_bytes(*len)).min(rest.len()));
    let decoded_key = checkpoint::decode_key(key);
    let decoded_value = checkpoint::decode_value(value);
    if let Ok(k) = &decoded_key {
        let encoded = checkpoint::encode_key(k).expect("decoded strings fit an int16 length");
        assert!(key.starts_with(&encoded), "key does not round-trip");
    }
    if let Ok(v) = &decoded_value {
        let encoded = checkpoint::encode_value(v).expect("decoded metadata fits an int16 length");
        assert!(value.starts_with(&encoded), "value does not round-trip");
    }
    // The whole-record decode fails exactly when one half does, naming the value first.
    match checkpoint::decode(key, value) {
        Ok((k, v)) => {
            assert_eq!(Ok(k), decoded_key);
            assert_eq!(Ok(v), decoded_value);
        }
        Err(e) => match &decoded_value {
            Err(value_error) => assert_eq!(&e, value_error),
            Ok(_) => assert_eq!(Err(e), decoded_key),
        },
    }
});
