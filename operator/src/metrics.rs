//! Operator metrics (`/metrics`) and health endpoints (`/healthz`, `/readyz`) over hyper.
//!
//! Names follow `oxbow_operator_<thing>_<unit>`; label values come from closed sets
//! (controller name, error category).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use tokio::net::TcpListener;

/// Handles of every operator metric.
#[derive(Debug, Clone)]
pub struct Metrics {
    registry: Registry,
    reconciles: IntCounterVec,
    errors: IntCounterVec,
    duration: HistogramVec,
    moves: IntCounterVec,
    moved_replicas: IntCounterVec,
    /// 1 while this replica holds the leader Lease.
    pub leader: IntGauge,
}

/// Metric registration failed (a duplicate name: a programming error found by tests).
#[derive(Debug, thiserror::Error)]
#[error("registering metric {name} failed: {source}")]
pub struct MetricsError {
    name: &'static str,
    source: prometheus::Error,
}

impl Metrics {
    pub fn new() -> Result<Self, MetricsError> {
        let registry = Registry::new();
        let reconciles = IntCounterVec::new(
            Opts::new(
                "oxbow_operator_reconciles_total",
                "Reconciles run, by controller",
            ),
            &["controller"],
        )
        .map_err(|source| MetricsError {
            name: "reconciles",
            source,
        })?;
        let errors = IntCounterVec::new(
            Opts::new(
                "oxbow_operator_reconcile_errors_total",
                "Failed reconciles, by controller and error category",
            ),
            &["controller", "category"],
        )
        .map_err(|source| MetricsError {
            name: "errors",
            source,
        })?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "oxbow_operator_reconcile_duration_seconds",
                "Reconcile duration, by controller",
            )
            .buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["controller"],
        )
        .map_err(|source| MetricsError {
            name: "duration",
            source,
        })?;
        let moves = IntCounterVec::new(
            Opts::new(
                "oxbow_operator_moves_started_total",
                "Reassignments the operator started, by operation (scale_out, scale_in, replication_factor)",
            ),
            &["operation"],
        )
        .map_err(|source| MetricsError {
            name: "moves",
            source,
        })?;
        let moved_replicas = IntCounterVec::new(
            Opts::new(
                "oxbow_operator_moved_replicas_total",
                "Replicas created on new brokers by the reassignments the operator started, by operation",
            ),
            &["operation"],
        )
        .map_err(|source| MetricsError {
            name: "moved_replicas",
            source,
        })?;
        let leader = IntGauge::new(
            "oxbow_operator_leader",
            "1 while this operator replica is the leader",
        )
        .map_err(|source| MetricsError {
            name: "leader",
            source,
        })?;
        for (name, collector) in [
            (
                "reconciles",
                Box::new(reconciles.clone()) as Box<dyn prometheus::core::Collector>,
            ),
            ("errors", Box::new(errors.clone())),
            ("duration", Box::new(duration.clone())),
            ("moves", Box::new(moves.clone())),
            ("moved_replicas", Box::new(moved_replicas.clone())),
            ("leader", Box::new(leader.clone())),
        ] {
            registry
                .register(collector)
                .map_err(|source| MetricsError { name, source })?;
        }
        Ok(Self {
            registry,
            reconciles,
            errors,
            duration,
            moves,
            moved_replicas,
            leader,
        })
    }

    /// Counts one reconcile of `controller` that took `elapsed`.
    pub fn reconciled(&self, controller: &str, elapsed: Duration) {
        self.reconciles.with_label_values(&[controller]).inc();
        self.duration
            .with_label_values(&[controller])
            .observe(elapsed.as_secs_f64());
    }

    /// Counts one failed reconcile; `category` comes from an error's `category()`.
    pub fn failed(&self, controller: &str, category: &str) {
        self.errors.with_label_values(&[controller, category]).inc();
    }

    /// Counts a reassignment the operator started: `operation` is `scale_out`, `scale_in`
    /// or `replication_factor`; `replicas` the replicas it creates.
    pub fn moves_started(&self, operation: &str, replicas: usize) {
        self.moves.with_label_values(&[operation]).inc();
        self.moved_replicas
            .with_label_values(&[operation])
            .inc_by(u64::try_from(replicas).unwrap_or(u64::MAX));
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buffer = Vec::new();
        if let Err(error) = TextEncoder::new().encode(&self.registry.gather(), &mut buffer) {
            tracing::warn!(%error, "Encoding metrics failed");
        }
        String::from_utf8(buffer).unwrap_or_default()
    }
}

/// Health flags served on `/healthz` and `/readyz`.
#[derive(Debug, Default)]
pub struct Health {
    /// Set once the operator reached the API server and started (leading or standing by).
    pub ready: AtomicBool,
}

/// Prometheus' text exposition format. Prometheus 3 refuses to scrape a target that sends no
/// Content-Type ("non-compliant scrape target sending blank Content-Type").
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(TEXT_FORMAT),
    );
    response
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `address` until the task is dropped.
pub async fn serve(
    address: SocketAddr,
    metrics: Metrics,
    health: Arc<Health>,
) -> std::io::Result<()> {
    let listener = TcpListener::bind(address).await?;
    tracing::info!(%address, "Serving metrics and health");
    loop {
        let (stream, _) = listener.accept().await?;
        let metrics = metrics.clone();
        let health = health.clone();
        let service = service_fn(move |request: Request<hyper::body::Incoming>| {
            let response = match request.uri().path() {
                "/metrics" => text(StatusCode::OK, metrics.render()),
                "/healthz" => text(StatusCode::OK, "ok\n".to_string()),
                "/readyz" if health.ready.load(Ordering::Relaxed) => {
                    text(StatusCode::OK, "ready\n".to_string())
                }
                "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, "starting\n".to_string()),
                _ => text(StatusCode::NOT_FOUND, "not found\n".to_string()),
            };
            async move { Ok::<_, std::convert::Infallible>(response) }
        });
        tokio::spawn(async move {
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%error, "Metrics connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_name_the_text_exposition_format() {
        let response = text(StatusCode::OK, "ok\n".to_string());
        assert_eq!(
            response.headers().get(hyper::header::CONTENT_TYPE),
            Some(&hyper::header::HeaderValue::from_static(TEXT_FORMAT))
        );
    }

    #[test]
    fn renders_reconcile_metrics() {
        let metrics = Metrics::new().unwrap();
        metrics.reconciled("cluster", Duration::from_millis(20));
        metrics.failed("topic", "kafka");
        let text = metrics.render();
        assert!(
            text.contains("oxbow_operator_reconciles_total{controller=\"cluster\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "oxbow_operator_reconcile_errors_total{category=\"kafka\",controller=\"topic\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("oxbow_operator_reconcile_duration_seconds_bucket"),
            "{text}"
        );
        metrics.moves_started("scale_out", 3);
        metrics.moves_started("scale_out", 2);
        let text = metrics.render();
        assert!(
            text.contains("oxbow_operator_moves_started_total{operation=\"scale_out\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("oxbow_operator_moved_replicas_total{operation=\"scale_out\"} 5"),
            "{text}"
        );
    }
}
