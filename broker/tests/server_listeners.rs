//! Kafka's listener model with a real broker process: two named client listeners, each
//! bound, each answering Metadata, DescribeCluster and FindCoordinator with its own
//! advertised address (a client inside the network and one outside reach the broker by
//! different names), and a host name as Kafka takes it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_protocol::messages::*;
use oxbow_testkit::{RawClient, free_port, http_get};

struct Broker(Child);

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(overrides: &[String], ready_port: u16) -> (Broker, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxbow"));
    command
        .arg("--override")
        .arg(format!("log.dirs={}", dir.path().join("data").display()));
    for setting in overrides {
        command.arg("--override").arg(setting);
    }
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http_get(ready_port, "/readyz").is_none_or(|(status, _)| status != 200) {
        assert!(Instant::now() < deadline, "the broker did not become ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    (Broker(child), dir)
}

/// host:port as an answer gives it.
type Address = (String, i32);

/// The brokers of Metadata, the broker of DescribeCluster and the group coordinator, as
/// the listener on `port` answers.
fn addresses(port: u16) -> (Vec<Address>, Address, Address) {
    let mut client = RawClient::connect(port);
    let metadata = client.metadata(&[], false);
    let brokers = metadata
        .brokers
        .iter()
        .map(|b| (b.host.to_string(), b.port))
        .collect();
    let cluster: DescribeClusterResponse = client.request(
        ApiKey::DescribeCluster,
        0,
        &DescribeClusterRequest::default(),
    );
    let described = &cluster.brokers[0];
    let coordinator: FindCoordinatorResponse = client.request(
        ApiKey::FindCoordinator,
        4,
        &FindCoordinatorRequest::default()
            .with_key_type(0)
            .with_coordinator_keys(vec!["a-group".into()]),
    );
    let found = &coordinator.coordinators[0];
    assert_eq!(found.error_code, 0, "{coordinator:?}");
    (
        brokers,
        (described.host.to_string(), described.port),
        (found.host.to_string(), found.port),
    )
}

#[test]
fn each_listener_answers_with_its_own_advertised_address() {
    let (internal, external, metrics) = (free_port(), free_port(), free_port());
    let (_broker, _dir) = start(
        &[
            format!("listeners=PLAINTEXT://localhost:{internal},EXTERNAL://127.0.0.1:{external}"),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT".to_string(),
            format!(
                "advertised.listeners=PLAINTEXT://localhost:{internal},EXTERNAL://127.0.0.1:{external}"
            ),
            format!("metrics.listener=127.0.0.1:{metrics}"),
        ],
        metrics,
    );
    let inside = ("localhost".to_string(), i32::from(internal));
    let outside = ("127.0.0.1".to_string(), i32::from(external));
    assert_eq!(
        addresses(internal),
        (vec![inside.clone()], inside.clone(), inside)
    );
    assert_eq!(
        addresses(external),
        (vec![outside.clone()], outside.clone(), outside)
    );
}

#[test]
fn an_empty_host_binds_every_interface() {
    let (port, metrics) = (free_port(), free_port());
    let (_broker, _dir) = start(
        &[
            format!("listeners=PLAINTEXT://:{port}"),
            format!("advertised.listeners=PLAINTEXT://127.0.0.1:{port}"),
            format!("metrics.listener=127.0.0.1:{metrics}"),
        ],
        metrics,
    );
    let (brokers, _, _) = addresses(port);
    assert_eq!(brokers, vec![("127.0.0.1".to_string(), i32::from(port))]);
}
