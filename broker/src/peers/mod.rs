//! The one client a broker uses to reach the other brokers' inter-broker listener: the
//! followers' fetchers, the transaction coordinator's markers, and a partition leader's
//! transaction verification all connect through it, with the listener's TLS and SASL.
//! Short requests share a small pool of idle connections ([`pool`]).

mod connect;
mod pool;

use std::sync::Arc;

use oxbow_kafka_client::{Connection, WireError};

use crate::config::InterBrokerSasl;
use crate::metadata::records::Endpoint;
use crate::security::ServerTls;

/// How this broker connects to the others' inter-broker listener.
#[derive(Debug, Clone, Default)]
pub struct PeerSecurity {
    /// When the inter-broker listener is `SSL` or `SASL_SSL`: over TLS, with these stores.
    pub tls: Option<Arc<ServerTls>>,
    /// When it is `SASL_*`: authenticated first.
    pub sasl: Option<Arc<InterBrokerSasl>>,
}

/// Connections to other brokers, as one broker makes them.
#[derive(Debug, Default)]
pub struct PeerClient {
    security: PeerSecurity,
    pool: pool::PeerPool,
}

impl PeerClient {
    pub fn new(security: PeerSecurity) -> Self {
        Self {
            security,
            pool: Default::default(),
        }
    }

    /// A new connection to the broker at `endpoint`, ready for requests (TLS and SASL
    /// done), identified as `client_id`.
    pub async fn connect(
        &self,
        endpoint: &Endpoint,
        client_id: &str,
    ) -> Result<Connection, WireError> {
        connect::connect_to(
            endpoint,
            client_id,
            self.security.tls.as_ref(),
            self.security.sasl.as_ref(),
        )
        .await
    }
}
