//! Broker registration and cordons, and producer-id blocks.

use super::*;

#[test]
fn a_cordoned_broker_takes_no_new_replicas_until_uncordoned_or_unregistered() {
    let mut cluster = Cluster::new(4);
    cluster.create("before", 4, 2).unwrap();
    cluster.run(cordon(4, "*")).unwrap();
    let topic = cluster.create("during", 6, 3).unwrap();
    assert!(
        topic.partitions.iter().all(|p| !p.replicas.contains(&4)),
        "a new topic landed on the cordoned broker: {topic:?}"
    );
    assert!(
        cluster.image.topics["before"]
            .partitions
            .iter()
            .any(|p| p.replicas.contains(&4)),
        "cordoning moves nothing that is there already"
    );
    // Only three brokers take replicas: RF 4 is refused, as on a three-broker cluster.
    assert_eq!(
        cluster.create("wide", 1, 4),
        Err(ControllerError::InvalidReplicationFactor {
            requested: 4,
            brokers: 3
        })
    );
    // Not as a cluster-wide default: that would cordon every broker.
    assert!(matches!(
        cluster.run(cordon(-1, "*")),
        Err(ControllerError::InvalidRequest(_))
    ));
    // An empty list uncordons.
    cluster.run(cordon(4, "")).unwrap();
    cluster.create("wide", 1, 4).unwrap();
    // A cordon ends with the registration: the same id joins again uncordoned.
    cluster.run(cordon(3, "*")).unwrap();
    cluster
        .run(ControllerCommand::FenceBroker { node_id: 3 })
        .unwrap();
    assert!(
        crate::metadata::dynamic_configs::is_cordoned(&cluster.image.broker_configs, 3),
        "a fenced broker stays cordoned"
    );
    cluster.check();
    cluster
        .image
        .apply(&MetadataRecord::BrokerUnregistered { node_id: 3 });
    assert!(!crate::metadata::dynamic_configs::is_cordoned(
        &cluster.image.broker_configs,
        3
    ));
}

#[test]
fn a_duplicate_node_id_is_refused_while_the_first_is_alive() {
    let mut cluster = Cluster::new(2);
    let impostor = Uuid::from_u128(77);
    assert_eq!(
        cluster.run(register(1, impostor)),
        Err(ControllerError::DuplicateBrokerRegistration {
            node_id: 1,
            incarnation: Uuid::from_u128(1)
        })
    );
    // Once the first one's session is gone, a restart (new incarnation) registers.
    cluster.live.remove(&1);
    cluster.run(register(1, impostor)).unwrap();
    assert!(cluster.image.brokers[&1].fenced);
    assert_eq!(
        cluster.run(heartbeat(1, Uuid::from_u128(1))),
        Err(ControllerError::UnknownBroker(1))
    );
    cluster.live.insert(1);
    assert_eq!(
        cluster.run(heartbeat(1, impostor)),
        Ok(CommandOutcome::Heartbeat { fenced: false })
    );
}

#[test]
fn producer_ids_come_in_disjoint_blocks() {
    let mut cluster = Cluster::new(1);
    let first = cluster.run(ControllerCommand::AllocateProducerIds).unwrap();
    let second = cluster.run(ControllerCommand::AllocateProducerIds).unwrap();
    assert_eq!(
        first,
        CommandOutcome::ProducerIds {
            first: 0,
            end: PRODUCER_ID_BLOCK
        }
    );
    assert_eq!(
        second,
        CommandOutcome::ProducerIds {
            first: PRODUCER_ID_BLOCK,
            end: 2 * PRODUCER_ID_BLOCK
        }
    );
}
