//! Decisions tested on an image, with a harness that applies what each decision writes.

use super::*;

mod brokers;
mod invariants;
mod isr;
mod leaders;
mod reassignment;
mod topics;

struct Cluster {
    image: ClusterImage,
    live: BTreeSet<i32>,
    defaults: LogConfig,
}

impl Cluster {
    fn new(brokers: i32) -> Self {
        let mut cluster = Self {
            image: ClusterImage::default(),
            live: BTreeSet::new(),
            defaults: LogConfig::default(),
        };
        for node_id in 1..=brokers {
            cluster.live.insert(node_id);
            cluster
                .run(register(node_id, Uuid::from_u128(node_id as u128)))
                .unwrap();
            cluster
                .run(heartbeat(node_id, Uuid::from_u128(node_id as u128)))
                .unwrap();
        }
        cluster
    }

    fn run(&mut self, command: ControllerCommand) -> Result<CommandOutcome, ControllerError> {
        self.run_seeded(command, 0)
    }

    /// CreateTopics of one topic placed by the controller: that topic's own result.
    fn create(
        &mut self,
        name: &str,
        partitions: i32,
        rf: i16,
    ) -> Result<TopicImage, ControllerError> {
        match self.run(create(name, partitions, rf))? {
            CommandOutcome::Topics(mut topics) if topics.len() == 1 => {
                topics.pop().expect("one topic")
            }
            other => panic!("CreateTopics answered {other:?}"),
        }
    }

    fn run_seeded(
        &mut self,
        command: ControllerCommand,
        seed: usize,
    ) -> Result<CommandOutcome, ControllerError> {
        let inputs = DecisionInputs {
            log_defaults: &self.defaults,
            live_sessions: &self.live,
            placement_start: seed,
            new_topic_id: Uuid::from_u128(seed as u128 + 1000),
            caught_up_index: 0,
        };
        let (records, outcome) = decide(&self.image, &command, &inputs)?;
        for record in &records {
            self.image.apply(record);
        }
        Ok(outcome)
    }

    /// Invariants every image must keep.
    fn check(&self) {
        for topic in self.image.topics.values() {
            for (p, state) in topic.partitions.iter().enumerate() {
                let at = format!("{}-{p}: {state:?}", topic.name);
                assert!(!state.in_sync_replicas.is_empty(), "empty ISR {at}");
                let distinct: BTreeSet<i32> = state.replicas.iter().copied().collect();
                assert_eq!(distinct.len(), state.replicas.len(), "a replica twice {at}");
                assert!(
                    state
                        .adding_replicas
                        .iter()
                        .chain(&state.removing_replicas)
                        .all(|r| state.replicas.contains(r)),
                    "moving replicas outside the replicas {at}"
                );
                assert!(
                    state
                        .adding_replicas
                        .iter()
                        .all(|r| !state.removing_replicas.contains(r)),
                    "added and removed at once {at}"
                );
                assert!(
                    !state.target_replicas().is_empty(),
                    "a reassignment to nothing {at}"
                );
                assert!(
                    state
                        .in_sync_replicas
                        .iter()
                        .all(|r| state.replicas.contains(r)),
                    "ISR outside replicas {at}"
                );
                if state.leader != -1 {
                    assert!(
                        state.in_sync_replicas.contains(&state.leader),
                        "leader not in ISR {at}"
                    );
                    assert!(self.image.is_live(state.leader), "fenced leader {at}");
                }
            }
        }
    }
}

fn register(node_id: i32, incarnation: Uuid) -> ControllerCommand {
    ControllerCommand::RegisterBroker {
        node_id,
        incarnation,
        endpoint: Endpoint {
            host: format!("broker-{node_id}"),
            port: 9092,
        },
        rack: None,
        listeners: Default::default(),
        supported_features: Some(crate::metadata::features::supported()),
    }
}

/// CreateTopics of one topic, placed by the controller.
fn create(name: &str, partitions: i32, rf: i16) -> ControllerCommand {
    ControllerCommand::CreateTopics {
        topics: vec![TopicToCreate {
            name: name.into(),
            partitions,
            replication_factor: rf,
            configs: BTreeMap::new(),
            assignments: Vec::new(),
        }],
        validate_only: false,
    }
}

fn heartbeat(node_id: i32, incarnation: Uuid) -> ControllerCommand {
    ControllerCommand::BrokerHeartbeat {
        node_id,
        incarnation,
        applied_index: 0,
    }
}

fn cordon(node_id: i32, value: &str) -> ControllerCommand {
    ControllerCommand::SetBrokerConfigs {
        node_id,
        configs: BTreeMap::from([(
            crate::metadata::dynamic_configs::CORDONED_LOG_DIRS.to_string(),
            value.to_string(),
        )]),
        validate_only: false,
    }
}

fn alter(
    topic: &str,
    partition: usize,
    leader: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    isr: &[i32],
) -> ControllerCommand {
    ControllerCommand::AlterPartition {
        topic: topic.into(),
        partition: partition as i32,
        leader,
        leader_epoch,
        partition_epoch,
        in_sync_replicas: isr.to_vec(),
    }
}

/// Sets a partition's replicas, ISR and leader directly (as earlier decisions would have).
fn place(
    cluster: &mut Cluster,
    topic: &str,
    partition: i32,
    replicas: &[i32],
    isr: &[i32],
    leader: i32,
) {
    let mut state = cluster.image.topics[topic].partitions[partition as usize].clone();
    state.replicas = replicas.to_vec();
    state.in_sync_replicas = isr.to_vec();
    state.leader = leader;
    cluster.image.apply(&MetadataRecord::PartitionChanged {
        topic: topic.into(),
        partition,
        state,
    });
}

fn reassign(topic: &str, partition: i32, target: Option<&[i32]>) -> ControllerCommand {
    ControllerCommand::ReassignPartitions {
        reassignments: vec![Reassignment {
            topic: topic.into(),
            partition,
            target: target.map(|t| t.to_vec()),
        }],
    }
}

fn errors_of(outcome: CommandOutcome) -> Vec<Option<ControllerError>> {
    match outcome {
        CommandOutcome::Partitions(outcomes) => outcomes.into_iter().map(|o| o.error).collect(),
        other => panic!("unexpected outcome {other:?}"),
    }
}

/// The leader's ISR proposal, from the partition's current epochs.
fn propose_isr(
    cluster: &mut Cluster,
    topic: &str,
    isr: &[i32],
) -> Result<CommandOutcome, ControllerError> {
    let state = cluster.image.topics[topic].partitions[0].clone();
    cluster.run(alter(
        topic,
        0,
        state.leader,
        state.leader_epoch,
        state.partition_epoch,
        isr,
    ))
}
