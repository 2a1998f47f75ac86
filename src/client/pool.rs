//! Connections kept per broker. Each broker gets up to `connections_per_broker` connections
//! ("lanes"), so fetch workers for different partition ranges do not queue behind each other on
//! one socket. Connections open lazily and a broken one is replaced on next use.
//!
//! Every connection comes from one [`Connector`], built with the pool, so TLS settings and the CA
//! store are loaded once per client. Addresses are kept as `host:port` and resolved at each
//! connect, so a broker whose DNS name moved to another IP is found again after a reconnect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::config::ClientConfig;
use crate::wire::{BrokerConnection, Connector, WireError};

type Slot = Arc<tokio::sync::Mutex<Option<BrokerConnection>>>;

/// The pool. Cheap to share behind an `Arc`.
pub(crate) struct ConnectionPool {
    config: ClientConfig,
    connector: Connector,
    slots: Mutex<HashMap<(String, usize), Slot>>,
}

impl ConnectionPool {
    /// Checks the settings and loads the TLS material once.
    pub(crate) fn new(config: ClientConfig) -> Result<Self, WireError> {
        Ok(ConnectionPool {
            connector: Connector::new(&config)?,
            config,
            slots: Mutex::new(HashMap::new()),
        })
    }

    /// [`new`](Self::new) on a blocking thread: the TLS material (PEM files, key and trust
    /// stores) is read with `std::fs`, which must not stall the caller's async worker.
    pub(crate) async fn load(config: ClientConfig) -> Result<Self, WireError> {
        let fallback = config.clone();
        match tokio::task::spawn_blocking(move || ConnectionPool::new(config)).await {
            Ok(pool) => pool,
            // Loading panicked (a bug): resume the panic in the caller, as a direct call would.
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // The runtime is shutting down: load on this thread.
                Err(_) => ConnectionPool::new(fallback),
            },
        }
    }

    pub(crate) fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// A live connection to `address` on lane `lane` (taken modulo the lanes configured).
    pub(crate) async fn get(
        &self,
        address: &str,
        lane: usize,
    ) -> Result<BrokerConnection, WireError> {
        let lane = lane % self.config.connections_per_broker.max(1);
        let slot = {
            // A poisoned lock only means another task panicked while inserting; the map is
            // still usable.
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots
                .entry((address.to_string(), lane))
                .or_default()
                .clone()
        };
        // Holding the slot's async lock while connecting makes concurrent callers share one
        // connection attempt instead of racing to open several.
        let mut guard = slot.lock().await;
        if let Some(conn) = guard.as_ref().filter(|c| !c.is_broken()) {
            return Ok(conn.clone());
        }
        // Drop a broken connection before opening its replacement, so its socket closes now.
        *guard = None;
        let conn = self.connector.connect(address).await?;
        *guard = Some(conn.clone());
        Ok(conn)
    }
}
