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
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
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
    moved_bytes: IntCounterVec,
    bytes_remaining: IntGaugeVec,
    bytes_rate: IntGaugeVec,
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

/// Registers `collector` with `registry` and hands it back.
fn registered<C>(registry: &Registry, name: &'static str, collector: C) -> Result<C, MetricsError>
where
    C: prometheus::core::Collector + Clone + 'static,
{
    registry
        .register(Box::new(collector.clone()))
        .map_err(|source| MetricsError { name, source })?;
    Ok(collector)
}

fn counter(name: &'static str, help: &str, labels: &[&str]) -> Result<IntCounterVec, MetricsError> {
    IntCounterVec::new(Opts::new(name, help), labels)
        .map_err(|source| MetricsError { name, source })
}

fn gauge(name: &'static str, help: &str, labels: &[&str]) -> Result<IntGaugeVec, MetricsError> {
    IntGaugeVec::new(Opts::new(name, help), labels).map_err(|source| MetricsError { name, source })
}

impl Metrics {
    pub fn new() -> Result<Self, MetricsError> {
        let registry = Registry::new();
        let r = &registry;
        let reconciles = counter(
            "oxbow_operator_reconciles_total",
            "Reconciles run, by controller",
            &["controller"],
        )?;
        let errors = counter(
            "oxbow_operator_reconcile_errors_total",
            "Failed reconciles, by controller and error category",
            &["controller", "category"],
        )?;
        let name = "oxbow_operator_reconcile_duration_seconds";
        let duration = HistogramVec::new(
            HistogramOpts::new(name, "Reconcile duration, by controller").buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["controller"],
        )
        .map_err(|source| MetricsError { name, source })?;
        let moves = counter(
            "oxbow_operator_moves_started_total",
            "Reassignments the operator started, by operation (scale_out, scale_in, replication_factor)",
            &["operation"],
        )?;
        let moved_replicas = counter(
            "oxbow_operator_moved_replicas_total",
            "Replicas created on new brokers by the reassignments the operator started, by operation",
            &["operation"],
        )?;
        let moved_bytes = counter(
            "oxbow_operator_moved_bytes_total",
            "Bytes the reassignments the operator started copy (the leaders' log sizes when planned), by operation",
            &["operation"],
        )?;
        let bytes_remaining = gauge(
            "oxbow_operator_move_bytes_remaining",
            "Bytes the moves of a Cluster's scale still have to copy (0 when none is in flight)",
            &["namespace", "cluster"],
        )?;
        let bytes_rate = gauge(
            "oxbow_operator_move_bytes_per_second",
            "Copy rate of a Cluster's scale moves, between the operator's last two looks",
            &["namespace", "cluster"],
        )?;
        let name = "oxbow_operator_leader";
        let leader = IntGauge::new(name, "1 while this operator replica is the leader")
            .map_err(|source| MetricsError { name, source })?;
        Ok(Self {
            reconciles: registered(r, "reconciles", reconciles)?,
            errors: registered(r, "errors", errors)?,
            duration: registered(r, "duration", duration)?,
            moves: registered(r, "moves", moves)?,
            moved_replicas: registered(r, "moved_replicas", moved_replicas)?,
            moved_bytes: registered(r, "moved_bytes", moved_bytes)?,
            bytes_remaining: registered(r, "bytes_remaining", bytes_remaining)?,
            bytes_rate: registered(r, "bytes_rate", bytes_rate)?,
            leader: registered(r, "leader", leader)?,
            registry,
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
    pub fn moves_started(&self, operation: &str, replicas: usize, bytes: u64) {
        self.moves.with_label_values(&[operation]).inc();
        self.moved_replicas
            .with_label_values(&[operation])
            .inc_by(u64::try_from(replicas).unwrap_or(u64::MAX));
        self.moved_bytes
            .with_label_values(&[operation])
            .inc_by(bytes);
    }

    /// Where a Cluster's scale moves stand: bytes left to copy and the copy rate.
    pub fn move_progress(&self, namespace: &str, cluster: &str, remaining: u64, rate: u64) {
        let labels = [namespace, cluster];
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.bytes_remaining
            .with_label_values(&labels)
            .set(clamp(remaining));
        self.bytes_rate.with_label_values(&labels).set(clamp(rate));
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
        metrics.moves_started("scale_out", 3, 300);
        metrics.moves_started("scale_out", 2, 200);
        metrics.move_progress("ns", "events", 1024, 512);
        let text = metrics.render();
        assert!(
            text.contains("oxbow_operator_moves_started_total{operation=\"scale_out\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("oxbow_operator_moved_replicas_total{operation=\"scale_out\"} 5"),
            "{text}"
        );
        assert!(
            text.contains("oxbow_operator_moved_bytes_total{operation=\"scale_out\"} 500"),
            "{text}"
        );
        assert!(
            text.contains(
                "oxbow_operator_move_bytes_remaining{cluster=\"events\",namespace=\"ns\"} 1024"
            ),
            "{text}"
        );
    }
}
