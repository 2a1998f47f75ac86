//! Fuzzes the SCRAM client's handling of broker messages. Input: one byte choosing the message,
//! then its bytes: even = a server-first message (answered by the RFC 7677 client), odd = a
//! server-final message (checked after the RFC 7677 server-first). Neither may panic; a
//! client-final message is only produced for a nonce that extends ours.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mm2_offsets::wire::fuzzing::{SCRAM_CLIENT_NONCE, scram_server_final, scram_server_first};

fuzz_target!(|data: &[u8]| {
    let Some((&which, message)) = data.split_first() else {
        return;
    };
    if which % 2 == 0 {
        if let Ok(client_final) = scram_server_first(message) {
            let text = String::from_utf8(client_final).expect("client-final is ASCII");
            let nonce = text
                .strip_prefix("c=biws,r=")
                .and_then(|rest| rest.split(',').next())
                .expect("client-final starts with the channel binding and nonce");
            assert!(
                nonce.starts_with(SCRAM_CLIENT_NONCE) && nonce.len() > SCRAM_CLIENT_NONCE.len()
            );
        }
    } else {
        let _ = scram_server_final(message);
    }
});
