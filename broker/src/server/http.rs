//! `/metrics`, `/healthz` and `/readyz` over hyper (HTTP/1.1).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::state::BrokerState;
use crate::storage::LogManager;

/// Serves the metrics endpoint until the listener fails. `logs` is this broker's log manager
/// (its partitions' sizes and offsets are metrics; its directories decide readiness): handed
/// over at start-up, as nothing serving Kafka requests may hold it.
pub async fn serve(listener: TcpListener, state: Arc<BrokerState>, logs: Arc<LogManager>) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(%error, "Metrics listener accept failed");
                continue;
            }
        };
        let state = Arc::clone(&state);
        let logs = Arc::clone(&logs);
        let connection = tokio::spawn(async move {
            let service =
                service_fn(move |request| respond(request, Arc::clone(&state), Arc::clone(&logs)));
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%error, %peer, "Metrics connection ended with an error");
            }
        });
        drop(connection);
    }
}

async fn respond(
    request: Request<Incoming>,
    state: Arc<BrokerState>,
    logs: Arc<LogManager>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, content_type, body) = match request.uri().path() {
        "/metrics" => (StatusCode::OK, "text/plain; version=0.0.4", {
            state.groups.refresh_metrics();
            state.transactions.refresh_metrics();
            state.metrics.controller.refresh(&state.controller);
            let active = state.controller.controller_id() == Some(state.config.node_id);
            state.replicas.metrics.refresh(
                &state.replicas,
                active.then(|| state.controller.image().offline_partitions()),
            );
            state.metrics.render(&logs)
        }),
        "/healthz" => (StatusCode::OK, "text/plain", "ok\n".to_string()),
        "/readyz" => {
            let offline = logs.log_dirs().iter().all(|d| d.is_offline());
            let serving =
                state.serving.load(std::sync::atomic::Ordering::Relaxed) || !state.config.is_broker;
            if offline || *state.shutting_down.borrow() || !serving || !state.controller.is_ready()
            {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain",
                    "not ready\n".to_string(),
                )
            } else {
                (StatusCode::OK, "text/plain", "ready\n".to_string())
            }
        }
        // What this node knows of the cluster: tests and operators compare the digests
        // of every node's image to see that all brokers agree.
        "/metadata" => {
            let controller = &state.controller;
            let view = controller.feed.current();
            let body = serde_json::json!({
                "node_id": controller.node_id(),
                "cluster_id": view.image.cluster_id,
                "controller_id": controller.controller_id(),
                "applied_index": view.applied_index,
                "published_index": controller.published_index(),
                "image_digest": view.image.digest(),
                "brokers": view.image.brokers.len(),
                // Kafka's Metadata keeps listing a just-fenced broker for a moment
                // (api/metadata/listed_brokers.rs): who is fenced is read here.
                "fenced": view.image.brokers.values().filter(|b| b.fenced).map(|b| b.node_id).collect::<Vec<_>>(),
                "topics": view.image.topics.len(),
                "ready": controller.is_ready(),
            });
            (StatusCode::OK, "application/json", format!("{body}\n"))
        }
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found\n".to_string(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = content_type.parse() {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    Ok(response)
}
