//! Prometheus metrics of the broker (the HTTP listener in `server/http.rs` serves them).
//!
//! Names follow `oxbow_<layer>_<thing>_<unit>`; label values come from closed sets
//! (API names, error codes, topic names), never from free text.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

use crate::controller::metrics::ControllerMetrics;
use crate::storage::LogManager;

/// The broker's metric handles.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub requests: IntCounterVec,
    pub request_errors: IntCounterVec,
    pub request_latency: HistogramVec,
    pub bytes_in: IntCounterVec,
    pub bytes_out: IntCounterVec,
    pub messages_in: IntCounterVec,
    pub open_connections: IntGauge,
    pub tls_handshake_failures: IntCounterVec,
    pub authentication_failures: IntCounterVec,
    pub authentications: IntCounterVec,
    pub authorization_denials: IntCounterVec,
    pub quota_throttle_ms: IntCounterVec,
    pub quota_throttled: IntCounterVec,
    pub inflight_request_bytes: IntGauge,
    pub fetch_sessions: IntGauge,
    /// The metadata quorum's gauges, refreshed at each scrape.
    pub controller: ControllerMetrics,
    log_size: IntGaugeVec,
    log_dir_free: IntGaugeVec,
    log_dir_total: IntGaugeVec,
    log_segments: IntGaugeVec,
    log_end_offset: IntGaugeVec,
    offline_log_dirs: IntGauge,
    partition_labels: bool,
}

fn counter(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntCounterVec, prometheus::Error> {
    let metric = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> Result<IntGaugeVec, prometheus::Error> {
    let metric = IntGaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn gauge(registry: &Registry, name: &str, help: &str) -> Result<IntGauge, prometheus::Error> {
    let metric = IntGauge::new(name, help)?;
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

impl Metrics {
    pub fn new(partition_labels: bool) -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        // CPU seconds, resident memory, open and maximum file descriptors, start time.
        registry.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        let build_info = IntGaugeVec::new(
            Opts::new(
                "oxbow_build_info",
                "1, labelled with the running broker's version.",
            ),
            &["version"],
        )?;
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        registry.register(Box::new(build_info))?;
        let request_latency = HistogramVec::new(
            HistogramOpts::new(
                "oxbow_server_request_latency_seconds",
                "Request handling latency by API; a Fetch's long-poll wait for data is left out.",
            )
            .buckets(vec![
                0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0,
            ]),
            &["api"],
        )?;
        registry.register(Box::new(request_latency.clone()))?;
        let storage_labels: &[&str] = if partition_labels {
            &["topic", "partition"]
        } else {
            &["topic"]
        };
        Ok(Self {
            requests: counter(
                &registry,
                "oxbow_server_requests_total",
                "Requests by API.",
                &["api"],
            )?,
            request_errors: counter(
                &registry,
                "oxbow_server_request_errors_total",
                "Errors returned, by API and Kafka error name (NOT_LEADER_OR_FOLLOWER).",
                &["api", "error"],
            )?,
            request_latency,
            bytes_in: counter(
                &registry,
                "oxbow_server_bytes_in_total",
                "Record bytes produced, by topic.",
                &["topic"],
            )?,
            bytes_out: counter(
                &registry,
                "oxbow_server_bytes_out_total",
                "Record bytes fetched, by topic.",
                &["topic"],
            )?,
            messages_in: counter(
                &registry,
                "oxbow_server_messages_in_total",
                "Records produced, by topic.",
                &["topic"],
            )?,
            open_connections: gauge(
                &registry,
                "oxbow_server_open_connections",
                "Open client connections.",
            )?,
            tls_handshake_failures: counter(
                &registry,
                "oxbow_server_tls_handshake_failures_total",
                "TLS handshakes that failed (no or an untrusted client certificate, no common protocol, a client that never finished), by listener.",
                &["listener"],
            )?,
            authentication_failures: counter(
                &registry,
                "oxbow_server_authentication_failures_total",
                "SASL exchanges that failed (a wrong password, an unknown user or mechanism, a request before authenticating), by listener and mechanism (`none` before a handshake).",
                &["listener", "mechanism"],
            )?,
            authentications: counter(
                &registry,
                "oxbow_server_authentications_total",
                "SASL authentications that succeeded, re-authentications included, by listener and mechanism.",
                &["listener", "mechanism"],
            )?,
            authorization_denials: counter(
                &registry,
                "oxbow_server_authorization_denials_total",
                "Requests (or parts of them: a topic, a group) the authorizer refused, by resource type and operation.",
                &["resource_type", "operation"],
            )?,
            quota_throttle_ms: counter(
                &registry,
                "oxbow_server_quota_throttle_ms_total",
                "Milliseconds of throttle given to clients over a quota (throttle_time_ms, and the connection muted that long), by quota: produce, fetch, request.",
                &["quota"],
            )?,
            quota_throttled: counter(
                &registry,
                "oxbow_server_quota_throttled_requests_total",
                "Requests answered with a throttle because their client was over a quota, by quota.",
                &["quota"],
            )?,
            inflight_request_bytes: gauge(
                &registry,
                "oxbow_server_inflight_request_bytes",
                "Request bytes read but not yet answered.",
            )?,
            fetch_sessions: gauge(
                &registry,
                "oxbow_server_fetch_sessions",
                "Incremental fetch sessions (KIP-227) kept.",
            )?,
            log_size: gauge_vec(
                &registry,
                "oxbow_storage_log_size_bytes",
                "Bytes on disk of partition logs.",
                storage_labels,
            )?,
            log_segments: gauge_vec(
                &registry,
                "oxbow_storage_log_segments",
                "Segments of partition logs.",
                storage_labels,
            )?,
            log_end_offset: gauge_vec(
                &registry,
                "oxbow_storage_log_end_offset",
                "Sum of log end offsets.",
                storage_labels,
            )?,
            log_dir_free: gauge_vec(
                &registry,
                "oxbow_storage_log_dir_free_bytes",
                "Bytes available to the broker on each log directory's filesystem.",
                &["log_dir"],
            )?,
            log_dir_total: gauge_vec(
                &registry,
                "oxbow_storage_log_dir_total_bytes",
                "Size of each log directory's filesystem.",
                &["log_dir"],
            )?,
            offline_log_dirs: gauge(
                &registry,
                "oxbow_storage_offline_log_dirs",
                "Log directories taken offline after I/O failures.",
            )?,
            controller: ControllerMetrics::new(&registry)?,
            partition_labels,
            registry,
        })
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Refreshes the storage gauges from the logs and renders the text exposition.
    pub fn render(&self, logs: &LogManager) -> String {
        self.log_size.reset();
        self.log_segments.reset();
        self.log_end_offset.reset();
        for log in logs.all() {
            let tp = log.topic_partition();
            let partition = tp.partition.to_string();
            let labels: Vec<&str> = if self.partition_labels {
                vec![&tp.topic, &partition]
            } else {
                vec![&tp.topic]
            };
            self.log_size
                .with_label_values(&labels)
                .add(log.size_bytes() as i64);
            self.log_segments
                .with_label_values(&labels)
                .add(log.segment_count() as i64);
            self.log_end_offset
                .with_label_values(&labels)
                .add(log.log_end_offset() as i64);
        }
        self.offline_log_dirs
            .set(logs.log_dirs().iter().filter(|d| d.is_offline()).count() as i64);
        for dir in logs.log_dirs() {
            let path = dir.path();
            let label = path.display().to_string();
            match nix::sys::statvfs::statvfs(path) {
                Ok(stats) => {
                    let block = stats.fragment_size();
                    let free = stats.blocks_available().saturating_mul(block);
                    let total = stats.blocks().saturating_mul(block);
                    self.log_dir_free
                        .with_label_values(&[&label])
                        .set(i64::try_from(free).unwrap_or(i64::MAX));
                    self.log_dir_total
                        .with_label_values(&[&label])
                        .set(i64::try_from(total).unwrap_or(i64::MAX));
                }
                Err(error) => {
                    tracing::debug!(log_dir = %label, %error, "Cannot read the log directory's filesystem size");
                }
            }
        }
        let mut text = Vec::new();
        let encoder = TextEncoder::new();
        if let Err(error) = encoder.encode(&self.registry.gather(), &mut text) {
            tracing::warn!(%error, "Failed to encode metrics");
        }
        String::from_utf8(text).unwrap_or_default()
    }
}
