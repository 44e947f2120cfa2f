//! The network pipeline: a tokio listener and one task pair per connection.
//!
//! ```text
//!   accept ─► [SSL listener: TLS handshake, principal] ─► connection
//!   connection ─┬─ reader: size-prefixed frames ─► bounded queue (in-flight bytes)
//!               └─ processor: dispatch in order ─► response (+ sendfile regions, plaintext)
//! ```
//!
//! Requests of one connection are read ahead (up to `queued.max.request.bytes`, then the
//! reader waits: back-pressure) and handled one at a time in arrival order, so responses
//! leave strictly in request order, as Kafka requires, and an idempotent producer's
//! batches are appended in the order sent.

mod connection;
mod dispatch;
mod frame_writer;
pub mod http;
pub mod request;
mod sasl_gate;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::api::Routes;
use crate::security::{Principal, SaslAuthenticator, ServerTls};
use crate::state::BrokerState;

/// How long shutdown waits for connections to finish their in-flight requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What a listener asks of its connections before serving them.
#[derive(Debug, Clone, Default)]
pub struct ListenerSecurity {
    /// `SSL`, `SASL_SSL`: a TLS handshake first.
    pub tls: Option<Arc<ServerTls>>,
    /// `SASL_*`: these mechanisms, before any request but ApiVersions.
    pub sasl: Option<Arc<crate::security::SaslListener>>,
}

/// Accepts connections until `shutdown` flips, then waits for open connections to
/// answer what they already read. With TLS, each connection first completes a TLS
/// handshake (in its own task: a slow client holds up no other); with SASL, it must
/// authenticate before it is served.
pub async fn run(
    name: Arc<str>,
    listener: TcpListener,
    security: ListenerSecurity,
    state: Arc<BrokerState>,
    routes: Arc<Routes>,
    mut shutdown: watch::Receiver<bool>,
) {
    size_socket_buffers(&listener, &state.config);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "Accept failed");
                        continue;
                    }
                };
                if connections.len() >= state.config.max_connections {
                    tracing::warn!(%peer, limit = state.config.max_connections, "Refusing connection: max.connections reached");
                    drop(stream);
                    continue;
                }
                let _ = stream.set_nodelay(true);
                let state = Arc::clone(&state);
                let routes = Arc::clone(&routes);
                let shutdown = shutdown.clone();
                let name = Arc::clone(&name);
                let security = security.clone();
                connections.spawn(async move {
                    state.metrics.open_connections.inc();
                    serve(stream, peer, security, name, &state, routes, shutdown).await;
                    state.metrics.open_connections.dec();
                });
            }
            Some(finished) = connections.join_next(), if !connections.is_empty() => {
                if let Err(error) = finished {
                    tracing::error!(%error, "Connection task failed");
                }
            }
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while let Some(finished) = connections.join_next().await {
            if let Err(error) = finished {
                tracing::error!(%error, "Connection task failed during shutdown");
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            remaining = connections.len(),
            "Connections still busy after the shutdown grace period; closing them"
        );
        connections.abort_all();
    }
}

async fn serve(
    stream: tokio::net::TcpStream,
    address: std::net::SocketAddr,
    security: ListenerSecurity,
    listener: Arc<str>,
    state: &Arc<BrokerState>,
    routes: Arc<Routes>,
    shutdown: watch::Receiver<bool>,
) {
    let state = Arc::clone(state);
    let sasl = security.sasl.as_ref().map(|listener| {
        Box::new(SaslAuthenticator::new(
            Arc::clone(listener),
            state.config.connections_max_reauth_ms,
        ))
    });
    let Some(tls) = security.tls else {
        let (read_half, write_half) = stream.into_split();
        let peer = Box::new(connection::Peer {
            address,
            principal: Principal::anonymous(),
            sasl,
        });
        connection::serve(
            read_half, write_half, peer, listener, state, routes, shutdown,
        )
        .await;
        return;
    };
    match tls.accept(stream).await {
        Ok((stream, principal)) => {
            tracing::debug!(%address, %principal, listener = %listener, "TLS connection");
            let (read_half, write_half) = tokio::io::split(stream);
            let peer = Box::new(connection::Peer {
                address,
                principal,
                sasl,
            });
            connection::serve(
                read_half, write_half, peer, listener, state, routes, shutdown,
            )
            .await;
        }
        Err(error) => {
            state
                .metrics
                .tls_handshake_failures
                .with_label_values(&[&*listener])
                .inc();
            tracing::info!(%address, listener = %listener, %error, "Closing connection");
        }
    }
}

/// Applies `socket.send.buffer.bytes` / `socket.receive.buffer.bytes` to the listening socket:
/// accepted connections inherit both, and the receive size is in place before the handshake
/// fixes the window scale. A size the kernel refuses is logged; the connection still works.
fn size_socket_buffers(listener: &TcpListener, config: &crate::config::BrokerConfig) {
    let socket = socket2::SockRef::from(listener);
    if let Some(size) = config.socket_send_buffer_bytes
        && let Err(error) = socket.set_send_buffer_size(size)
    {
        tracing::warn!(%error, size, "Cannot set socket.send.buffer.bytes");
    }
    if let Some(size) = config.socket_receive_buffer_bytes
        && let Err(error) = socket.set_recv_buffer_size(size)
    {
        tracing::warn!(%error, size, "Cannot set socket.receive.buffer.bytes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_connections_get_the_configured_buffer_sizes() {
        let mut config = crate::config::BrokerConfig::load(&[], [], &[]).unwrap();
        config.socket_send_buffer_bytes = Some(96 * 1024);
        config.socket_receive_buffer_bytes = Some(80 * 1024);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        size_socket_buffers(&listener, &config);
        let address = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(address).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        let socket = socket2::SockRef::from(&accepted);
        // Linux doubles the requested size for its own bookkeeping, and reports that.
        assert_eq!(socket.send_buffer_size().unwrap(), 2 * 96 * 1024);
        assert_eq!(socket.recv_buffer_size().unwrap(), 2 * 80 * 1024);
    }
}
