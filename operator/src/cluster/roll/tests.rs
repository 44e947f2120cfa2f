use super::*;
use crate::admin::{BrokerDescription, PartitionDescription};

fn view(brokers: &[i32], partitions: &[(i32, &[i32], &[i32])]) -> RollView {
    RollView {
        cluster: Partitions {
            brokers: brokers
                .iter()
                .map(|id| BrokerDescription {
                    id: *id,
                    rack: None,
                })
                .collect(),
            partitions: partitions
                .iter()
                .enumerate()
                .map(|(i, (leader, replicas, isr))| {
                    (
                        TopicPartition {
                            topic: "t".into(),
                            partition: i as i32,
                        },
                        PartitionDescription {
                            leader: *leader,
                            replicas: replicas.to_vec(),
                            in_sync_replicas: isr.to_vec(),
                        },
                    )
                })
                .collect(),
        },
    }
}

#[test]
fn a_fully_recovered_cluster_opens_the_gate() {
    let seen = view(&[0, 1, 2], &[(0, &[0, 1], &[0, 1]), (1, &[1, 2], &[2, 1])]);
    assert_eq!(decide(&seen, &(0..3).collect()), RollGate::Open);
    assert_eq!(RollGate::Open.reason(), None);
}

#[test]
fn a_broker_that_has_not_registered_holds_the_roll() {
    let seen = view(&[0, 2], &[(0, &[0], &[0])]);
    let gate = decide(&seen, &(0..3).collect());
    assert_eq!(gate, RollGate::NotRegistered(vec![1]));
    assert!(
        gate.reason()
            .unwrap()
            .contains("broker(s) 1 have not registered")
    );
}

#[test]
fn a_replica_out_of_sync_holds_the_roll() {
    // Broker 1 restarted and is still catching up on partition 1 (recovery, fetching).
    let seen = view(&[0, 1, 2], &[(0, &[0, 1], &[0, 1]), (2, &[1, 2], &[2])]);
    let gate = decide(&seen, &(0..3).collect());
    assert_eq!(gate, RollGate::UnderReplicated(1));
    assert!(
        gate.reason()
            .unwrap()
            .contains("1 partition(s) are under-replicated")
    );
}

#[test]
fn leadership_not_back_on_the_preferred_replica_holds_the_roll() {
    // Partition 1 prefers broker 1, which is in sync but not leading: elect, then wait.
    let seen = view(&[0, 1, 2], &[(0, &[0, 1], &[0, 1]), (2, &[1, 2], &[1, 2])]);
    let gate = decide(&seen, &(0..3).collect());
    let RollGate::LeadershipsNotBack(partitions) = &gate else {
        panic!("{gate:?}");
    };
    assert_eq!(
        partitions.iter().map(|p| p.partition).collect::<Vec<_>>(),
        [1]
    );
    assert!(gate.reason().unwrap().contains("preferred replica"));
}

#[test]
fn a_preferred_replica_out_of_sync_is_waited_for_as_under_replication() {
    // Not an election: the preferred replica cannot lead before it is in sync.
    let seen = view(&[0, 1], &[(0, &[1, 0], &[0])]);
    assert_eq!(
        decide(&seen, &(0..2).collect()),
        RollGate::UnderReplicated(1)
    );
}
