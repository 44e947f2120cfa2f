//! Nodes and bytes the quorum must refuse: a duplicate node id, another cluster's node,
//! a voter list that disagrees with the quorum, a corrupt Raft log, garbage on the
//! controller port. Each is refused or recovered with a log line naming the cause, and
//! the cluster keeps working.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use oxbow_testkit::Cluster;

const TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn a_duplicate_node_id_is_refused_while_the_first_lives() {
    let mut cluster = Cluster::start(3, 1, &[]);
    cluster.wait_ready(&[1, 2, 3, 4]);
    let first_port = cluster.nodes[&4].port;
    // Another process claiming node.id 4.
    cluster.add_observer(5, &["node.id=4"]);
    cluster.wait_for("the duplicate to be refused", TIMEOUT, || {
        cluster
            .logs(5)
            .contains("another live broker uses this node.id")
    });
    assert!(!cluster.is_ready(5));
    // The first keeps its registration: Metadata still points at it.
    let metadata = cluster.metadata(1);
    let four = metadata.brokers.iter().find(|b| b.node_id.0 == 4).unwrap();
    assert_eq!(four.port, i32::from(first_port));
    assert_eq!(cluster.create_topic(4, "still-works", 1, 1), 0);
}

#[test]
fn a_node_of_another_cluster_is_refused() {
    let mut cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    cluster.add_observer(4, &["cluster.id=someone-else"]);
    let status = cluster.wait_exit(4, TIMEOUT);
    assert!(!status.success());
    let logs = cluster.logs(4);
    assert!(logs.contains("someone-else"), "{logs}");
    // Every voter refused it by name, and none took it in.
    assert!((1..=3).any(|id| {
        cluster
            .logs(id)
            .contains("Refusing a node of another cluster")
    }));
    assert_eq!(cluster.metadata(1).brokers.len(), 3);
}

#[test]
fn a_voter_whose_voter_list_disagrees_stops() {
    let mut cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    cluster.kill(3);
    let voters = format!("{},9@127.0.0.1:1", cluster.voters);
    cluster.nodes.get_mut(&3).unwrap().extra = vec![format!("controller.quorum.voters={voters}")];
    cluster.launch(3);
    let status = cluster.wait_exit(3, TIMEOUT);
    assert!(!status.success());
    let logs = cluster.logs(3);
    assert!(logs.contains("but the quorum's voters are"), "{logs}");
    assert_eq!(cluster.create_topic(1, "two-of-three", 1, 1), 0);
}

#[test]
fn a_corrupt_raft_log_refuses_to_start_and_an_emptied_voter_rejoins() {
    let mut cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    assert_eq!(cluster.create_topic(1, "before", 3, 3), 0);
    let digest = cluster.wait_same_image(&[1, 2, 3]);
    cluster.kill(2);
    let metadata_dir = cluster.nodes[&2].data.join("__oxbow_metadata");
    let log = metadata_dir.join("metadata-log");
    let mut bytes = std::fs::read(&log).unwrap();
    // The header (10 bytes), then the first entry's frame: its length and CRC (8 bytes),
    // then its body, damaged here with more entries after it.
    assert!(bytes.len() > 200, "{} bytes", bytes.len());
    bytes[10 + 8 + 2] ^= 0x55;
    std::fs::write(&log, &bytes).unwrap();
    cluster.launch(2);
    let status = cluster.wait_exit(2, TIMEOUT);
    assert!(!status.success());
    assert!(
        cluster.logs(2).contains("is corrupt at byte 10"),
        "{}",
        cluster.logs(2)
    );
    // As the message says: without its metadata directory the voter rejoins and catches
    // up from the others.
    std::fs::remove_dir_all(&metadata_dir).unwrap();
    cluster.launch(2);
    cluster.wait_ready(&[2]);
    // (Its new registration is a new record: the image moved on from `digest`.)
    assert_ne!(cluster.wait_same_image(&[1, 2, 3]), digest);
    let metadata = cluster.metadata(2);
    let before = metadata
        .topics
        .iter()
        .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some("before"))
        .unwrap();
    assert_eq!(before.partitions.len(), 3);
}

#[test]
fn garbage_on_the_controller_port_closes_that_connection_only() {
    let cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    let port = cluster.nodes[&1].controller_port.unwrap();
    let frames: [&[u8]; 4] = [
        b"GET / HTTP/1.1\r\n\r\n",
        &[0xff, 0xff, 0xff, 0xff, 1, 2, 3],
        &[0, 0, 0, 3, 9, b'{', b'}'],
        &[0, 0, 0, 5, 1, b'n', b'u', b'l', b'!'],
    ];
    for frame in frames {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.write_all(frame).unwrap();
        let mut rest = Vec::new();
        // Closed without an answer.
        let _ = stream.read_to_end(&mut rest);
        assert!(rest.is_empty(), "{rest:?}");
    }
    cluster.wait_for("the bad frames to be logged", TIMEOUT, || {
        cluster
            .logs(1)
            .matches("Closing a controller connection")
            .count()
            >= 3
    });
    assert_eq!(cluster.create_topic(1, "after-garbage", 1, 3), 0);
    cluster.wait_same_image(&[1, 2, 3]);
}
