//! The network pipeline: a tokio listener and one task pair per connection.
//!
//! ```text
//!   accept ─► connection ─┬─ reader: size-prefixed frames ─► bounded queue (in-flight bytes)
//!                         └─ processor: dispatch in order ─► response (+ sendfile regions)
//! ```
//!
//! Requests of one connection are read ahead (up to `queued.max.request.bytes`, then the
//! reader waits: back-pressure) and handled one at a time in arrival order, so responses
//! leave strictly in request order, as Kafka requires, and an idempotent producer's
//! batches are appended in the order sent.

mod connection;
mod dispatch;
mod frame_writer;
pub mod request;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::api::Routes;
use crate::state::BrokerState;

/// How long shutdown waits for connections to finish their in-flight requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Accepts connections until `shutdown` flips, then waits for open connections to
/// answer what they already read.
pub async fn run(
    listener: TcpListener,
    state: Arc<BrokerState>,
    routes: Arc<Routes>,
    mut shutdown: watch::Receiver<bool>,
) {
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
                connections.spawn(async move {
                    state.metrics.open_connections.inc();
                    connection::serve(stream, peer, Arc::clone(&state), routes, shutdown).await;
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
