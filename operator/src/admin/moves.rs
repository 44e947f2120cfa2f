//! Moving replicas with Kafka's own admin APIs: every partition's replicas (Metadata),
//! reassignments (AlterPartitionReassignments / ListPartitionReassignments, KIP-455),
//! preferred-leader election (ElectLeaders, KIP-460) and forgetting a removed broker
//! (UnregisterBroker, KIP-778). Any broker forwards them to the active controller.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::BrokerId;
use kafka_protocol::messages::alter_partition_reassignments_request::{
    AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::elect_leaders_request::{ElectLeadersRequest, TopicPartitions};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsRequest;
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::unregister_broker_request::UnregisterBrokerRequest;
use oxbow_placement::reassignment::{PartitionState, TopicPartition};

use super::{
    AdminClient, AdminError, BrokerDescription, OPERATION_TIMEOUT_MS, PartitionDescription,
    brokers_of, check, partition_of, topic_name,
};

/// KIP-1066: the log directories (`*`: all) of a broker that take no new replicas.
pub const CORDONED_LOG_DIRS: &str = "cordoned.log.dirs";
/// ElectLeaders' election type for the preferred (first) replica.
const PREFERRED: i8 = 0;
/// ElectLeaders: the preferred replica already leads.
const ELECTION_NOT_NEEDED: i16 = 84;
/// UnregisterBroker: the broker is not registered (already unregistered).
const BROKER_ID_NOT_REGISTERED: i16 = 102;

/// A partition reassignment in flight: its replica list is the old and the new one
/// together until the new replicas have caught up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reassigning {
    /// Replicas being created (copying).
    pub adding: Vec<i32>,
    /// Replicas that go once the new ones are in sync.
    pub removing: Vec<i32>,
}

/// Bytes of each partition replica, by broker (from DescribeLogDirs).
pub type ReplicaSizes = BTreeMap<i32, BTreeMap<TopicPartition, u64>>;

/// Every partition of every topic, as Metadata lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partitions {
    pub brokers: Vec<BrokerDescription>,
    pub partitions: BTreeMap<TopicPartition, PartitionDescription>,
}

impl Partitions {
    /// The registered brokers as placement sees them.
    pub fn candidates(&self) -> Vec<oxbow_placement::Candidate> {
        self.brokers
            .iter()
            .map(|b| oxbow_placement::Candidate {
                node_id: b.id,
                rack: b.rack.clone(),
            })
            .collect()
    }

    /// Every partition as a plan sees it, without sizes (a plan then balances counts).
    pub fn states(&self) -> BTreeMap<TopicPartition, PartitionState> {
        self.sized_states(&BTreeMap::new())
    }

    /// Every partition as a plan sees it, its size the leader's log size (or the largest
    /// replica's, without a leader) from `sizes` (bytes by broker, then partition).
    pub fn sized_states(&self, sizes: &ReplicaSizes) -> BTreeMap<TopicPartition, PartitionState> {
        self.partitions
            .iter()
            .map(|(partition, description)| {
                let state = PartitionState {
                    replicas: description.replicas.clone(),
                    bytes: self.size_of(partition, sizes),
                };
                (partition.clone(), state)
            })
            .collect()
    }

    /// The bytes a new replica of `partition` copies: the leader's log size, or the
    /// largest replica's when the leader's is unknown.
    pub fn size_of(&self, partition: &TopicPartition, sizes: &ReplicaSizes) -> u64 {
        let on = |broker: i32| sizes.get(&broker).and_then(|s| s.get(partition)).copied();
        let Some(description) = self.partitions.get(partition) else {
            return 0;
        };
        on(description.leader).unwrap_or_else(|| {
            description
                .replicas
                .iter()
                .filter_map(|id| on(*id))
                .max()
                .unwrap_or(0)
        })
    }

    /// Every partition's replica list.
    pub fn replica_lists(&self) -> BTreeMap<TopicPartition, Vec<i32>> {
        self.partitions
            .iter()
            .map(|(partition, description)| (partition.clone(), description.replicas.clone()))
            .collect()
    }

    /// Partitions whose preferred (first) replica is in sync but does not lead.
    pub fn preferred_not_leading(&self) -> BTreeSet<TopicPartition> {
        self.partitions
            .iter()
            .filter(|(_, p)| {
                p.replicas
                    .first()
                    .is_some_and(|first| *first != p.leader && p.in_sync_replicas.contains(first))
            })
            .map(|(partition, _)| partition.clone())
            .collect()
    }
}

impl AdminClient {
    /// The brokers and every partition of every topic.
    pub async fn partitions(&mut self) -> Result<Partitions, AdminError> {
        let request = MetadataRequest::default()
            .with_topics(None)
            .with_allow_auto_topic_creation(false);
        let response = self.call(&request).await?;
        let brokers = brokers_of(&response);
        let mut partitions = BTreeMap::new();
        for topic in &response.topics {
            check("Metadata", topic.error_code, None)?;
            let Some(name) = topic.name.as_ref() else {
                continue;
            };
            for p in &topic.partitions {
                partitions.insert(
                    TopicPartition {
                        topic: name.0.to_string(),
                        partition: p.partition_index,
                    },
                    partition_of(p),
                );
            }
        }
        Ok(Partitions {
            brokers,
            partitions,
        })
    }

    /// Partitions whose reassignment is still moving data.
    pub async fn reassignments_in_progress(
        &mut self,
    ) -> Result<BTreeSet<TopicPartition>, AdminError> {
        Ok(self.reassignments().await?.into_keys().collect())
    }

    /// Partitions whose reassignment is still moving data, with the replicas each adds
    /// (the ones copying) and removes.
    pub async fn reassignments(
        &mut self,
    ) -> Result<BTreeMap<TopicPartition, Reassigning>, AdminError> {
        let request = ListPartitionReassignmentsRequest::default()
            .with_timeout_ms(OPERATION_TIMEOUT_MS)
            .with_topics(None);
        let response = self.call(&request).await?;
        check(
            "ListPartitionReassignments",
            response.error_code,
            response.error_message.as_ref(),
        )?;
        Ok(response
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    let partition = TopicPartition {
                        topic: t.name.0.to_string(),
                        partition: p.partition_index,
                    };
                    let ids = |list: &[BrokerId]| list.iter().map(|id| id.0).collect();
                    let moving = Reassigning {
                        adding: ids(&p.adding_replicas),
                        removing: ids(&p.removing_replicas),
                    };
                    (partition, moving)
                })
            })
            .collect())
    }

    /// Starts moving each partition to its new replica list, all in one request.
    pub async fn reassign(
        &mut self,
        assignments: &BTreeMap<TopicPartition, Vec<i32>>,
    ) -> Result<(), AdminError> {
        let mut topics: BTreeMap<&str, Vec<ReassignablePartition>> = BTreeMap::new();
        for (partition, replicas) in assignments {
            topics.entry(partition.topic.as_str()).or_default().push(
                ReassignablePartition::default()
                    .with_partition_index(partition.partition)
                    .with_replicas(Some(replicas.iter().map(|id| BrokerId(*id)).collect())),
            );
        }
        let request = AlterPartitionReassignmentsRequest::default()
            .with_timeout_ms(OPERATION_TIMEOUT_MS)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(name, partitions)| {
                        ReassignableTopic::default()
                            .with_name(topic_name(name))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let response = self.call(&request).await?;
        check(
            "AlterPartitionReassignments",
            response.error_code,
            response.error_message.as_ref(),
        )?;
        for topic in &response.responses {
            for partition in &topic.partitions {
                check(
                    "AlterPartitionReassignments",
                    partition.error_code,
                    partition.error_message.as_ref(),
                )?;
            }
        }
        Ok(())
    }

    /// Moves leadership of `partitions` to their preferred (first) replicas where that
    /// replica is in sync; a partition it already leads is not an error.
    pub async fn elect_preferred_leaders(
        &mut self,
        partitions: &BTreeSet<TopicPartition>,
    ) -> Result<(), AdminError> {
        if partitions.is_empty() {
            return Ok(());
        }
        let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for partition in partitions {
            topics
                .entry(partition.topic.as_str())
                .or_default()
                .push(partition.partition);
        }
        let request = ElectLeadersRequest::default()
            .with_election_type(PREFERRED)
            .with_timeout_ms(OPERATION_TIMEOUT_MS)
            .with_topic_partitions(Some(
                topics
                    .into_iter()
                    .map(|(name, partitions)| {
                        TopicPartitions::default()
                            .with_topic(topic_name(name))
                            .with_partitions(partitions)
                    })
                    .collect(),
            ));
        let response = self.call(&request).await?;
        check("ElectLeaders", response.error_code, None)?;
        for topic in &response.replica_election_results {
            for result in &topic.partition_result {
                if result.error_code != ELECTION_NOT_NEEDED {
                    check(
                        "ElectLeaders",
                        result.error_code,
                        result.error_message.as_ref(),
                    )?;
                }
            }
        }
        Ok(())
    }

    /// Forgets a broker that was removed for good; one never registered (or already
    /// forgotten) is not an error.
    pub async fn unregister_broker(&mut self, broker: i32) -> Result<(), AdminError> {
        let request = UnregisterBrokerRequest::default().with_broker_id(BrokerId(broker));
        let response = self.call(&request).await?;
        if response.error_code == BROKER_ID_NOT_REGISTERED {
            return Ok(());
        }
        check(
            "UnregisterBroker",
            response.error_code,
            response.error_message.as_ref(),
        )
    }
}

impl AdminClient {
    /// Cordons (every log directory, `*`) or uncordons `broker`, which must be the broker
    /// this client is connected to: Kafka takes a broker's own configs only from it.
    /// Setting what is already set changes nothing.
    pub async fn set_cordoned(&mut self, broker: i32, cordoned: bool) -> Result<(), AdminError> {
        let (set, delete) = if cordoned {
            (
                BTreeMap::from([(CORDONED_LOG_DIRS.to_string(), "*".to_string())]),
                Vec::new(),
            )
        } else {
            (BTreeMap::new(), vec![CORDONED_LOG_DIRS.to_string()])
        };
        self.alter_configs(vec![super::ConfigChange {
            resource_type: super::RESOURCE_BROKER,
            name: broker.to_string(),
            set,
            delete,
        }])
        .await
    }

    /// The active controller (the metadata quorum's leader), from DescribeQuorum; `None`
    /// when the quorum has no leader right now.
    pub async fn active_controller(&mut self) -> Result<Option<i32>, AdminError> {
        use kafka_protocol::messages::describe_quorum_request::{
            DescribeQuorumRequest, PartitionData, TopicData,
        };
        let request = DescribeQuorumRequest::default().with_topics(vec![
            TopicData::default()
                .with_topic_name(topic_name("__cluster_metadata"))
                .with_partitions(vec![PartitionData::default().with_partition_index(0)]),
        ]);
        // A cluster without KRaft's DescribeQuorum has no quorum leader to restart last.
        let response = match self.call(&request).await {
            Err(AdminError::Unsupported { .. }) => return Ok(None),
            other => other?,
        };
        check("DescribeQuorum", response.error_code, None)?;
        let leader = response
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == 0)
            .map(|p| {
                check("DescribeQuorum", p.error_code, None)?;
                Ok::<_, AdminError>(p.leader_id.0)
            })
            .transpose()?;
        Ok(leader.filter(|id| *id >= 0))
    }
}
