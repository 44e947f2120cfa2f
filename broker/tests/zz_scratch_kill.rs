#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use oxbow_testkit::Cluster;
use std::time::{Duration, Instant};

#[test]
fn scratch_kill_window() {
    let mut cluster = Cluster::start(3, 0, &[]);
    cluster.wait_ready(&[1, 2, 3]);
    let active = cluster.controller_of(1).unwrap();
    let victim = (1..=3).find(|id| *id != active).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let start = Instant::now();
    cluster.kill(victim);
    cluster.wait_for("fenced", Duration::from_secs(30), || {
        cluster.metadata(active).brokers.len() == 2
    });
    eprintln!("FENCED AFTER {:?}", start.elapsed());
    eprintln!(
        "{}",
        cluster
            .logs(active)
            .lines()
            .filter(|l| l.contains("heartbeat") || l.contains("ence") || l.contains("connection"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
