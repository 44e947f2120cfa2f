//! What a broker process refuses at start-up, with real processes: a second broker on a
//! log directory another one holds (it must not touch the first one's data), a Kafka port
//! another process holds (nothing on disk may change), a listener whose security protocol
//! Oxbow does not serve (never served as plaintext).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use kafka_protocol::messages::*;
use oxbow_testkit::client::{batch, partition_error, topic};
use oxbow_testkit::{BrokerProcess, free_port};

fn oxbow(overrides: &[String]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxbow"));
    for setting in overrides {
        command.arg("--override").arg(setting);
    }
    command.env("RUST_LOG", "info").output().unwrap()
}

fn ports() -> [String; 2] {
    [
        format!("listeners=PLAINTEXT://127.0.0.1:{}", free_port()),
        format!("metrics.listener=127.0.0.1:{}", free_port()),
    ]
}

#[test]
fn a_second_broker_on_a_held_log_dir_exits_naming_it_and_leaves_the_data_alone() {
    let broker = BrokerProcess::start_temp(&[]);
    let mut client = broker.client();
    let created = client.create_topics(vec![topic("held", 1)]);
    assert_eq!(created.topics[0].error_code, 0);
    let produced = client.produce("held", 0, batch(&["before"], 10_000));
    assert_eq!(partition_error(&produced), 0);
    let index = broker
        .data
        .join("held-0")
        .join("00000000000000000000.index");
    let index_size = std::fs::metadata(&index).unwrap().len();

    let [listener, metrics] = ports();
    let second = oxbow(&[
        listener,
        metrics,
        format!("log.dirs={}", broker.data.display()),
    ]);
    assert_eq!(second.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains(&broker.data.display().to_string())
            && stderr.contains("in use by another process")
            && stderr.contains(&format!("pid {}", broker.pid())),
        "{stderr}"
    );
    // The first broker's files and service are untouched.
    assert_eq!(std::fs::metadata(&index).unwrap().len(), index_size);
    let produced = client.produce("held", 0, batch(&["after"], 10));
    assert_eq!(partition_error(&produced), 0);
    let fetched = client.fetch("held", 0, 0);
    let records = fetched.responses[0].partitions[0].records.clone().unwrap();
    let mut records = records;
    let batches = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut records).unwrap();
    let values: Vec<Vec<u8>> = batches
        .iter()
        .flat_map(|set| set.records.iter())
        .map(|r| r.value.clone().unwrap().to_vec())
        .collect();
    assert_eq!(values.len(), 2);
    assert!(values[0].starts_with(b"before") && values[1].starts_with(b"after"));
}

#[test]
fn a_taken_kafka_port_stops_the_broker_before_anything_is_written() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let output = oxbow(&[
        format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
        format!("metrics.listener=127.0.0.1:{}", free_port()),
        format!("log.dirs={}", data.display()),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot bind the Kafka listener PLAINTEXT 127.0.0.1:{port}"
        )),
        "{stderr}"
    );
    assert!(
        !data.exists(),
        "the data directory was created: {:?}",
        std::fs::read_dir(&data).map(|d| d.count())
    );
    drop(taken);
}

#[test]
fn a_tls_listener_without_usable_keys_or_a_sasl_inter_broker_listener_is_refused() {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let start = |extra: &[String]| {
        let mut overrides = vec![format!("log.dirs={}", data.display())];
        overrides.extend_from_slice(extra);
        oxbow(&overrides)
    };
    let cases = [
        (
            vec![format!("listeners=SSL://127.0.0.1:{port}")],
            2,
            "ssl.keystore.location",
        ),
        (
            vec![format!("listeners=SASL_PLAINTEXT://127.0.0.1:{port}")],
            2,
            "the inter-broker listener SASL_PLAINTEXT uses SASL",
        ),
        (
            vec![
                format!(
                    "listeners=PLAINTEXT://127.0.0.1:{},SSL://127.0.0.1:{port}",
                    free_port()
                ),
                format!(
                    "ssl.keystore.location={}",
                    dir.path().join("absent.pem").display()
                ),
            ],
            1,
            "absent.pem",
        ),
    ];
    for (overrides, code, says) in cases {
        let output = start(&overrides);
        assert_eq!(output.status.code(), Some(code), "{overrides:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{overrides:?}: {stderr}");
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
        assert!(!data.exists(), "{overrides:?} created the data directory");
    }
}

#[test]
fn delete_topic_enable_false_refuses_deletion_with_kafkas_error() {
    let broker = BrokerProcess::start_temp(&["delete.topic.enable=false"]);
    let mut client = broker.client();
    let created = client.create_topics(vec![topic("kept", 1)]);
    assert_eq!(created.topics[0].error_code, 0);
    let produced = client.produce("kept", 0, batch(&["v"], 10));
    assert_eq!(partition_error(&produced), 0);
    let response: DeleteTopicsResponse = client.request(
        ApiKey::DeleteTopics,
        4,
        &DeleteTopicsRequest::default()
            .with_topic_names(vec![TopicName("kept".into())])
            .with_timeout_ms(5_000),
    );
    assert_eq!(
        response.responses[0].error_code, 73,
        "TOPIC_DELETION_DISABLED"
    );
    let metadata = client.metadata(&["kept"], false);
    assert_eq!(metadata.topics[0].error_code, 0);
}
