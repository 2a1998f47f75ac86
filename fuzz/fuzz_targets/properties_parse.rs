//! Fuzzes `.properties` parsing and the client settings read from it. Input: the file's text
//! (invalid UTF-8 is decoded lossily first). Neither step may panic; a parsed file must give
//! back what it holds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::config::{ClientConfig, Properties};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(mut props) = Properties::parse(&text) else {
        return;
    };
    let keys: Vec<String> = props.keys().map(str::to_string).collect();
    assert_eq!(keys.len(), props.len());
    for key in &keys {
        assert!(
            props.get(key).is_some(),
            "listed key {key:?} cannot be read back"
        );
    }
    // The only setting read from a file the input names; the fuzzer could name /dev/zero.
    props.remove("sasl.password.file");
    if let Ok((config, _warnings)) = ClientConfig::from_properties(&props) {
        // Debug output must never show a secret; exercise it.
        let _ = format!("{config:?}");
    }
});
