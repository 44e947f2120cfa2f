//! Idle connections to other brokers' inter-broker listeners, kept for the short requests
//! coordinators send (transaction markers, transaction verification): a transaction's
//! first write to a partition led away from its coordinator would otherwise pay a TCP
//! (and TLS, SASL) handshake each time.
//!
//! A connection is taken out while one request uses it and put back after an answer; one
//! that failed is dropped. A pooled connection the peer closed while it sat idle (the
//! peer restarted) fails on first use: the request is then sent once more on a new one.
//! Coordinators' requests are safe to repeat (a verification reads, a repeated marker
//! finds no open transaction and changes nothing).

use std::collections::HashMap;
use std::time::Duration;

use kafka_protocol::protocol::Request;
use oxbow_kafka_client::{Connection, WireError};
use parking_lot::Mutex;

use super::PeerClient;
use crate::metadata::records::Endpoint;

/// Idle connections kept per peer and client id.
const IDLE_PER_PEER: usize = 4;

type PeerKey = (String, String, u16);

#[derive(Default)]
pub(super) struct PeerPool {
    idle: Mutex<HashMap<PeerKey, Vec<Connection>>>,
}

impl std::fmt::Debug for PeerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let idle: usize = self.idle.lock().values().map(Vec::len).sum();
        f.debug_struct("PeerPool").field("idle", &idle).finish()
    }
}

impl PeerPool {
    fn take(&self, key: &PeerKey) -> Option<Connection> {
        self.idle.lock().get_mut(key)?.pop()
    }

    fn put(&self, key: PeerKey, connection: Connection) {
        let mut idle = self.idle.lock();
        let kept = idle.entry(key).or_default();
        if kept.len() < IDLE_PER_PEER {
            kept.push(connection);
        }
    }
}

impl PeerClient {
    /// Sends `request` at `version` to the broker at `endpoint` on a pooled connection
    /// (made with `client_id` when none is idle) and reads its answer within `timeout`.
    pub async fn call<R: Request>(
        &self,
        endpoint: &Endpoint,
        client_id: &str,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, WireError> {
        let key = (client_id.to_string(), endpoint.host.clone(), endpoint.port);
        if let Some(mut connection) = self.pool.take(&key) {
            match connection.call_version(request, version, timeout).await {
                Ok(response) => {
                    self.pool.put(key, connection);
                    return Ok(response);
                }
                // Closed while idle: once more on a new connection.
                Err(WireError::Io { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        let mut connection = self.connect(endpoint, client_id).await?;
        let response = connection.call_version(request, version, timeout).await?;
        self.pool.put(key, connection);
        Ok(response)
    }
}
