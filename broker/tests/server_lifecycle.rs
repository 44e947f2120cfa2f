//! Start-up and shutdown of a real broker process: zero-config defaults are valid, bad
//! configuration exits non-zero naming the key, SIGTERM shuts down cleanly (exit 0,
//! clean-shutdown marker, no recovery at the next start), and data survives.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use kafka_protocol::messages::*;
use oxbow_testkit::{BrokerProcess, http_get};

#[test]
fn invalid_configuration_exits_non_zero_naming_the_key() {
    let output = Command::new(env!("CARGO_BIN_EXE_oxbow"))
        .args(["--override", "num.partitions=-3"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("num.partitions"));
    let output = Command::new(env!("CARGO_BIN_EXE_oxbow"))
        .args(["--override", "no.such.key=1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no.such.key"));
    let help = Command::new(env!("CARGO_BIN_EXE_oxbow"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for key in [
        "listeners",
        "advertised.listeners",
        "log.dirs",
        "auto.create.topics.enable",
        "metrics.listener",
    ] {
        assert!(help.contains(key), "--help does not document {key}");
    }
}

#[test]
fn sigterm_shuts_down_cleanly_and_metrics_are_served() {
    let mut broker = BrokerProcess::start_temp(&[]);
    let mut client = broker.client();
    // Auto-create a topic through Metadata, as clients do.
    let metadata: MetadataResponse = client.request(
        ApiKey::Metadata,
        12,
        &MetadataRequest::default()
            .with_allow_auto_topic_creation(true)
            .with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default()
                    .with_name(Some(TopicName("auto".into()))),
            ])),
    );
    assert_eq!(metadata.topics[0].error_code, 0);
    assert_eq!(metadata.topics[0].partitions.len(), 1);
    assert_eq!(metadata.controller_id.0, 0, "controller is this broker");

    let (status, body) = http_get(broker.metrics_port, "/metrics").unwrap();
    assert_eq!(status, 200);
    assert!(
        body.contains("oxbow_server_requests_total{api=\"Metadata\"} 1"),
        "{body}"
    );
    let (status, body) = http_get(broker.metrics_port, "/readyz").unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("ready"), "{body}");

    // Exit 0 after SIGTERM (stop() fails the test otherwise).
    broker.stop();
    assert!(broker.data.join(".oxbow-clean-shutdown").exists());
    assert!(
        broker.run_log().contains("Clean shutdown complete"),
        "{}",
        broker.run_log()
    );

    broker.restart(&[]);
    assert!(
        !broker.run_log().contains("unclean"),
        "{}",
        broker.run_log()
    );
    let mut client = broker.client();
    let metadata: MetadataResponse = client.request(
        ApiKey::Metadata,
        12,
        &MetadataRequest::default().with_topics(None),
    );
    assert!(
        metadata
            .topics
            .iter()
            .any(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "auto"))
    );
}

/// The gauges an operator alerts on, as a single broker serves them: build and process
/// metrics, the quorum's state, the log directory's filesystem, errors by Kafka's names.
#[test]
fn metrics_an_operator_alerts_on_are_served() {
    let broker = BrokerProcess::start_temp(&[]);
    let mut client = broker.client();
    let produced = client.produce("nowhere", 0, oxbow_testkit::client::batch(&["v"], 0));
    assert_eq!(oxbow_testkit::client::partition_error(&produced), 3);
    // A long poll on an empty partition parks for its whole max_wait_ms: that wait is
    // not handling time (the margin is wide: this checks what is measured, not speed).
    let created = client.create_topics(vec![oxbow_testkit::client::topic("quiet", 1)]);
    assert_eq!(created.topics[0].error_code, 0);
    let polled: FetchResponse = client.request(
        ApiKey::Fetch,
        12,
        &FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(4_000)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![
                fetch_request::FetchTopic::default()
                    .with_topic(TopicName("quiet".into()))
                    .with_partitions(vec![
                        fetch_request::FetchPartition::default()
                            .with_partition(0)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]),
    );
    assert_eq!(polled.responses[0].partitions[0].error_code, 0);
    let (status, body) = http_get(broker.metrics_port, "/metrics").unwrap();
    assert_eq!(status, 200);
    let value = |series: &str| -> f64 {
        body.lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{body}"))
    };
    assert_eq!(
        value(&format!(
            "oxbow_build_info{{version=\"{}\"}}",
            env!("CARGO_PKG_VERSION")
        )),
        1.0
    );
    assert!(value("process_resident_memory_bytes") > 0.0);
    assert!(value("process_open_fds") > 0.0);
    assert!(value("process_cpu_seconds_total") >= 0.0);
    assert_eq!(value("oxbow_controller_active"), 1.0);
    assert!(value("oxbow_controller_raft_term") >= 1.0);
    assert!(value("oxbow_controller_raft_applied_index") >= 1.0);
    assert!(
        value("oxbow_controller_raft_commit_index") >= value("oxbow_controller_raft_applied_index")
    );
    assert_eq!(
        value("oxbow_controller_raft_voter_lag_entries{voter=\"0\"}"),
        0.0
    );
    assert_eq!(value("oxbow_controller_fenced_brokers"), 0.0);
    let dir = broker.data.display().to_string();
    let free = value(&format!(
        "oxbow_storage_log_dir_free_bytes{{log_dir=\"{dir}\"}}"
    ));
    let total = value(&format!(
        "oxbow_storage_log_dir_total_bytes{{log_dir=\"{dir}\"}}"
    ));
    assert!(free > 0.0 && total >= free, "{free} of {total}");
    assert_eq!(
        value(
            "oxbow_server_request_errors_total{api=\"Produce\",error=\"UNKNOWN_TOPIC_OR_PARTITION\"}"
        ),
        1.0
    );
    assert_eq!(
        value("oxbow_server_request_latency_seconds_count{api=\"Fetch\"}"),
        1.0
    );
    let fetch_seconds = value("oxbow_server_request_latency_seconds_sum{api=\"Fetch\"}");
    assert!(
        fetch_seconds < 2.0,
        "the long poll counted: {fetch_seconds} s"
    );
}
