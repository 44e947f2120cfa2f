//! The operator's controller-voter changes (`spec.controllerVoters`) against real brokers:
//! three `oxbow` processes on loopback in a dynamic quorum formed by node 1 alone. The
//! operator's steps run until done, with a "pod restart" carried out as the kubelet would
//! (the process stopped and started again on its data, with the roles its config file
//! now gives it): 1 -> 3 voters, back to 1, and to 3 again after the leader has forgotten
//! the removed controllers. Records written before are read back
//! after. The Kubernetes half (status, events, the roll gate) runs in the testbed suites.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use oxbow_operator::admin::AdminClient;
use oxbow_operator::cluster::quorum::{self, QuorumStep};
use oxbow_testkit::client::batch;
use oxbow_testkit::{Cluster, free_port};

const TIMEOUT: Duration = Duration::from_secs(120);
/// The broker stops replicating to an observer whose controller port has refused
/// connections for 60 s; a margin on top.
const PRUNED_WITHIN: Duration = Duration::from_secs(120);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn address(cluster: &Cluster, id: i32) -> String {
    format!("127.0.0.1:{}", cluster.nodes[&id].port)
}

/// Restarts node `id` with or without the controller role, as a pod restarted with its
/// new config file would.
fn restart(cluster: &mut Cluster, id: i32, controller: bool) {
    cluster.kill(id);
    let node = cluster.nodes.get_mut(&id).unwrap();
    node.controller_port = if controller {
        Some(node.controller_port.unwrap_or_else(free_port))
    } else {
        None
    };
    cluster.launch(id);
    cluster.wait_ready(&[id]);
}

/// Runs the operator's steps towards `wanted` until done; the steps taken.
fn change_voters(cluster: &mut Cluster, wanted: &BTreeSet<i32>) -> Vec<QuorumStep> {
    let runtime = runtime();
    let brokers: BTreeSet<i32> = cluster.nodes.keys().copied().collect();
    let deadline = Instant::now() + TIMEOUT;
    let mut steps = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "not done in {TIMEOUT:?}: {steps:?}"
        );
        let any: Vec<String> = brokers.iter().map(|id| address(cluster, *id)).collect();
        let own: BTreeMap<i32, String> = brokers
            .iter()
            .map(|id| (*id, address(cluster, *id)))
            .collect();
        let view = runtime
            .block_on(quorum::observe(&any, &own, &brokers, wanted))
            .unwrap();
        let step = quorum::decide(&view, wanted, &brokers);
        eprintln!(
            "voters {:?}, controllers {:?}: {step:?}",
            view.voters, view.controllers
        );
        match step {
            QuorumStep::Done => return steps,
            QuorumStep::Restart(id) => restart(cluster, id, wanted.contains(&id)),
            QuorumStep::Add(id) => {
                let port = cluster.nodes[&id].controller_port.unwrap();
                runtime.block_on(async {
                    let mut admin = AdminClient::connect(&any[0]).await.unwrap();
                    admin.add_voter(id, "127.0.0.1", port).await.unwrap();
                });
            }
            QuorumStep::Remove(id) => runtime.block_on(async {
                let mut admin = AdminClient::connect(&any[0]).await.unwrap();
                admin.remove_voter(id).await.unwrap();
            }),
        }
        steps.push(step);
    }
}

/// How often node 1, the active controller, fenced a broker whose session it took as expired.
fn fencings(cluster: &Cluster) -> usize {
    cluster
        .logs(1)
        .matches("Broker session expired; fencing it")
        .count()
}

fn voters(cluster: &Cluster) -> BTreeSet<i32> {
    runtime().block_on(async {
        let mut admin = AdminClient::connect(&address(cluster, 1)).await.unwrap();
        admin.quorum().await.unwrap().voters
    })
}

#[test]
fn controller_voters_grow_and_shrink_one_at_a_time() {
    let mut cluster = Cluster::start(1, 2, &[]);
    // A dynamic quorum: every node finds it through node 1's controller listener.
    let bootstrap = format!(
        "controller.quorum.bootstrap.servers=127.0.0.1:{}",
        cluster.nodes[&1].controller_port.unwrap()
    );
    for id in [1, 2, 3] {
        cluster.kill(id);
        cluster
            .nodes
            .get_mut(&id)
            .unwrap()
            .extra
            .push(bootstrap.clone());
        cluster.launch(id);
    }
    cluster.wait_ready(&[1, 2, 3]);
    assert_eq!(cluster.create_topic(1, "kept", 3, 3), 0);
    for partition in 0..3 {
        cluster.produce_to_leader(1, "kept", partition, batch(&["a", "b", "c"], 100));
    }

    let grown = change_voters(&mut cluster, &BTreeSet::from([1, 2, 3]));
    assert_eq!(
        grown,
        [
            QuorumStep::Restart(2),
            QuorumStep::Add(2),
            QuorumStep::Restart(3),
            QuorumStep::Add(3)
        ]
    );
    assert_eq!(voters(&cluster), BTreeSet::from([1, 2, 3]));

    let shrunk = change_voters(&mut cluster, &BTreeSet::from([1]));
    assert_eq!(
        shrunk,
        [
            QuorumStep::Remove(3),
            QuorumStep::Remove(2),
            QuorumStep::Restart(3),
            QuorumStep::Restart(2)
        ]
    );
    assert_eq!(voters(&cluster), BTreeSet::from([1]));
    // The metadata still changes, and nothing written before was lost. The brokers that
    // restarted last may not be registered again yet (INVALID_REPLICATION_FACTOR until they
    // are), so the topic is asked for until all three are back.
    cluster.wait_for(
        "an RF 3 topic once the restarted brokers are back",
        TIMEOUT,
        || cluster.create_topic(2, "after", 1, 3) == 0,
    );
    for partition in 0..3 {
        cluster.wait_for("the records readable from the leader", TIMEOUT, || {
            let leader = cluster.partition_state(1, "kept", partition).0;
            let fetched = cluster.client(leader).fetch("kept", partition, 0);
            let records = &fetched.responses[0].partitions[0];
            records.error_code == 0 && records.high_watermark >= 3
        });
    }

    // Until the leader stops replicating to them (a minute), the removed voters refuse its
    // Raft traffic: they run as brokers only. That says nothing about their brokers, which
    // must stay unfenced and in sync all along (the testbed's voters 5 -> 3 saw them fenced
    // again and again, and two replicas of a partition out at once during the next restart).
    cluster.wait_for("every replica of kept in sync", TIMEOUT, || {
        (0..3).all(|p| cluster.partition_state(1, "kept", p).2.len() == 3)
    });
    let fenced_before = fencings(&cluster);
    let mut fewest_in_sync = 3;
    cluster.wait_for(
        "the leader to stop replicating to the removed controllers",
        PRUNED_WITHIN,
        || {
            for partition in 0..3 {
                let in_sync = cluster.partition_state(1, "kept", partition).2.len();
                fewest_in_sync = fewest_in_sync.min(in_sync);
            }
            cluster
                .logs(1)
                .contains("no longer replicating the metadata log")
        },
    );
    assert_eq!(
        fencings(&cluster),
        fenced_before,
        "brokers fenced while they heartbeat as brokers only"
    );
    assert_eq!(
        fewest_in_sync, 3,
        "a replica left the ISR while nothing happened to it"
    );

    // Back to three voters once the leader has stopped replicating to the brokers that left
    // the quorum (their controller ports refused connections for a minute). Their own logs
    // still list them as observers; restarted as controllers, they must ask to follow again
    // or they never catch up, never register, and the operator waits for them forever.
    let regrown = change_voters(&mut cluster, &BTreeSet::from([1, 2, 3]));
    assert_eq!(
        regrown,
        [
            QuorumStep::Restart(2),
            QuorumStep::Add(2),
            QuorumStep::Restart(3),
            QuorumStep::Add(3)
        ]
    );
    assert_eq!(voters(&cluster), BTreeSet::from([1, 2, 3]));
}
