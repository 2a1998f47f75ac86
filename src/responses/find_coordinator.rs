//! FindCoordinator response (API key 10): which broker coordinates a group.
//!
//! v0-v3 answer for one key; v4+ (KIP-699) answer for a batch of keys, one entry each. Both are
//! decoded into the batched shape, with `key: None` for the single answer.
//!
//! # References
//! - <https://kafka.apache.org/protocol#The_Messages_FindCoordinator>
//! - KIP-699 (batched lookups, v4+), KIP-482 (flexible versions, v3+)

use bytes::Bytes;

use super::{array, finish, start, string_len_size};
use crate::wire::decode::DecodeError;

/// First flexible (compact, tagged) version.
const FIRST_FLEXIBLE: i16 = 3;
/// First version that batches keys.
pub const FIRST_BATCHED: i16 = 4;

/// A decoded FindCoordinator response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindCoordinatorResponse {
    /// How long the broker throttled the request (v1+; else 0).
    pub throttle_time_ms: i32,
    /// One entry per key asked about (exactly one below v4).
    pub coordinators: Vec<Coordinator>,
}

/// The coordinator of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coordinator {
    /// The key (group id) this answers for (v4+; `None` in the single-key versions).
    pub key: Option<String>,
    /// The coordinator's broker id.
    pub node_id: i32,
    /// The coordinator's host.
    pub host: String,
    /// The coordinator's port.
    pub port: i32,
    /// Error, e.g. COORDINATOR_NOT_AVAILABLE or GROUP_AUTHORIZATION_FAILED.
    pub error_code: i16,
    /// The broker's message for the error (v1+), if any.
    pub error_message: Option<String>,
}

impl FindCoordinatorResponse {
    /// Decodes a FindCoordinator response body sent in answer to a request at `version`.
    ///
    /// Fails on versions outside [`super::FIND_COORDINATOR_VERSIONS`], on any malformed or
    /// truncated field, and on trailing bytes.
    pub fn decode(body: Bytes, version: i16) -> Result<Self, DecodeError> {
        let mut d = start(
            body,
            "FindCoordinator",
            version,
            &super::FIND_COORDINATOR_VERSIONS,
        )?;
        let flexible = version >= FIRST_FLEXIBLE;
        let throttle_time_ms = if version >= 1 { d.i32()? } else { 0 };
        let coordinators = if version >= FIRST_BATCHED {
            let min = string_len_size(true) + 4 + string_len_size(true) + 4 + 2 + 1 + 1;
            array(&mut d, true, min, |d| {
                let key = Some(d.string(true)?);
                let node_id = d.i32()?;
                let host = d.string(true)?;
                let port = d.i32()?;
                let error_code = d.i16()?;
                let error_message = d.nullable_string(true)?;
                d.tagged_fields()?;
                Ok(Coordinator {
                    key,
                    node_id,
                    host,
                    port,
                    error_code,
                    error_message,
                })
            })?
        } else {
            let error_code = d.i16()?;
            let error_message = if version >= 1 {
                d.nullable_string(flexible)?
            } else {
                None
            };
            let node_id = d.i32()?;
            let host = d.string(flexible)?;
            let port = d.i32()?;
            vec![Coordinator {
                key: None,
                node_id,
                host,
                port,
                error_code,
                error_message,
            }]
        };
        if flexible {
            d.tagged_fields()?;
        }
        finish(&d)?;
        Ok(FindCoordinatorResponse {
            throttle_time_ms,
            coordinators,
        })
    }
}

#[cfg(test)]
mod tests;
