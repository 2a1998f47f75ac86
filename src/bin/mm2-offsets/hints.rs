//! What the user can do about an error, in terms of this command's flags. The library's errors
//! say what failed; only the command line knows which flag changes it.

use std::error::Error;

use mm2_offsets::client::ClientError;
use mm2_offsets::translate::TranslateError;

/// The error's message followed by a hint naming the flags that help, when one does.
pub fn explain(error: &(dyn Error + 'static)) -> String {
    match hint(error) {
        Some(hint) => format!("{error}; {hint}"),
        None => error.to_string(),
    }
}

fn hint(error: &(dyn Error + 'static)) -> Option<&'static str> {
    // The most specific cause decides: walk the chain from the outside in and keep the last hint.
    let mut found = None;
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(h) = own_hint(e) {
            found = Some(h);
        }
        next = e.source();
    }
    found
}

fn own_hint(error: &(dyn Error + 'static)) -> Option<&'static str> {
    if let Some(e) = error.downcast_ref::<TranslateError>() {
        return match e {
            TranslateError::Incomplete { .. } => {
                Some("raise --timeout, or pass --allow-partial to accept an incomplete result")
            }
            TranslateError::MissingCheckpointsTopic { .. } => {
                Some("check --source and the replication policy settings")
            }
            TranslateError::UntrustedFailbackHistory { .. } => Some(
                "failback reverses the offset-sync history of the flow from this primary to this backup: check --target, --syncs-topic and --from-bootstrap-server",
            ),
            _ => None,
        };
    }
    match error.downcast_ref::<ClientError>()? {
        ClientError::Bootstrap { .. } => {
            Some("check --bootstrap-server and that the brokers are running and reachable")
        }
        ClientError::NoBootstrapServers => {
            Some("pass --bootstrap-server HOST:PORT or set bootstrap.servers")
        }
        ClientError::DeadlineExceeded { .. } => Some("raise --timeout if the cluster is slow"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_innermost_cause_picks_the_hint() {
        let error = ClientError::NoBootstrapServers;
        assert!(
            explain(&error).ends_with("pass --bootstrap-server HOST:PORT or set bootstrap.servers")
        );
        let incomplete = TranslateError::Incomplete {
            timeout: std::time::Duration::from_secs(1),
            partitions: Vec::new(),
        };
        assert!(explain(&incomplete).contains("--allow-partial"));
    }
}
