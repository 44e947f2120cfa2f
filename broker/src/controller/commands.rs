//! The admin commands a node forwards to the active controller: each waits until this
//! node has applied its result, so a handler reads its own writes.

use std::collections::BTreeMap;
use std::time::Duration;

use uuid::Uuid;

use super::Controller;
use super::client::ControllerClient;
use super::decisions::{
    CommandOutcome, ControllerCommand, ControllerError, ElectionType, MAX_PARTITIONS,
    PartitionOutcome, Reassignment, TopicToCreate,
};
use super::rpc::CommandReply;
use crate::metadata::image::TopicImage;

/// How long a metadata change may take before the caller is told it timed out.
pub(super) const COMMAND_TIMEOUT: Duration = Duration::from_secs(8);
/// Pause before asking again for an active controller.
pub(super) const RETRY_PAUSE: Duration = Duration::from_millis(50);
/// How long a caller waits for its own broker to apply a change it made.
const PUBLISH_WAIT: Duration = Duration::from_secs(5);

impl Controller {
    pub(super) async fn send(
        &self,
        client: &ControllerClient,
        command: &ControllerCommand,
        timeout: Duration,
    ) -> Result<CommandReply, ControllerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // This voter may win an election while the command waits: ask it first.
            if let Some(active) = &self.active
                && active.is_leader()
            {
                match active.execute(command.clone()).await {
                    Err(ControllerError::NotController(_)) => {}
                    other => return other,
                }
            }
            // A voter knows from its own Raft state which voter leads: a better hint than
            // the last one that answered (which may be stopped).
            if let Some(leader) = self.active.as_ref().and_then(|a| a.leader())
                && leader != self.settings.node_id
            {
                client.set_leader_hint(Some(leader));
            }
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let lone_voter = !client.has_voters() && self.active.is_some();
            let result = if lone_voter {
                Err(ControllerError::NotController(Some(
                    "this node is the only voter and has not been elected yet".into(),
                )))
            } else {
                client.command(command, remaining).await
            };
            match result {
                Err(ControllerError::NotController(_))
                    if tokio::time::Instant::now() + RETRY_PAUSE < deadline =>
                {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                other => return other,
            }
        }
    }

    /// Asks the active controller to carry out `command`, and waits (briefly) until this
    /// broker has applied the result, so it reads its own writes.
    pub async fn execute(
        &self,
        command: ControllerCommand,
    ) -> Result<CommandOutcome, ControllerError> {
        let reply = self
            .send(&self.command_client, &command, COMMAND_TIMEOUT)
            .await?;
        let mut published = if self.settings.is_broker {
            self.published.clone()
        } else {
            let mut views = self.feed.subscribe();
            let _ = tokio::time::timeout(
                PUBLISH_WAIT,
                views.wait_for(|view| view.applied_index >= reply.index),
            )
            .await;
            return Ok(reply.outcome);
        };
        let _ = tokio::time::timeout(
            PUBLISH_WAIT,
            published.wait_for(|index| *index >= reply.index),
        )
        .await;
        Ok(reply.outcome)
    }

    /// One topic, placed by the controller (auto-creation, `__consumer_offsets`).
    pub async fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicImage, ControllerError> {
        let topic = TopicToCreate {
            name: name.to_string(),
            partitions,
            replication_factor,
            configs,
            assignments: Vec::new(),
        };
        self.create_topics(vec![topic], validate_only)
            .await?
            .pop()
            .unwrap_or_else(|| Err(ControllerError::Quorum("no answer for the topic".into())))
    }

    /// CreateTopics: the topics in as few decisions and committed batches as keep each
    /// batch within [`MAX_PARTITIONS`] partitions (the size of the largest single topic, so
    /// no metadata entry is bigger than one topic's could always be). The outer error (no
    /// controller, no quorum) is that of every topic not yet decided; otherwise each topic
    /// has its own result.
    pub async fn create_topics(
        &self,
        topics: Vec<TopicToCreate>,
        validate_only: bool,
    ) -> Result<Vec<Result<TopicImage, ControllerError>>, ControllerError> {
        let mut outcomes = Vec::with_capacity(topics.len());
        for chunk in partition_bounded_chunks(topics, MAX_PARTITIONS) {
            let asked = chunk.len();
            let command = ControllerCommand::CreateTopics {
                topics: chunk,
                validate_only,
            };
            let decided = match self.execute(command).await {
                Ok(CommandOutcome::Topics(decided)) if decided.len() == asked => decided,
                Ok(other) => vec![Err(unexpected(other)); asked],
                // Nothing decided yet: the caller answers every topic with the error.
                Err(error) if outcomes.is_empty() => return Err(error),
                Err(error) => vec![Err(error); asked],
            };
            if !validate_only {
                for topic in decided.iter().flatten() {
                    tracing::info!(
                        topic = topic.name,
                        partitions = topic.partition_count(),
                        replication_factor = topic.replication_factor,
                        "Created topic"
                    );
                }
            }
            outcomes.extend(decided);
        }
        Ok(outcomes)
    }

    pub async fn delete_topic(&self, name: &str) -> Result<Uuid, ControllerError> {
        let command = ControllerCommand::DeleteTopic {
            name: name.to_string(),
        };
        match self.execute(command).await? {
            CommandOutcome::TopicDeleted(id) => {
                tracing::info!(topic = name, "Deleted topic");
                Ok(id)
            }
            other => Err(unexpected(other)),
        }
    }

    /// Grows a topic to `total` partitions; `assignments` (one replica list per new
    /// partition) places them by hand, empty leaves placement to the controller.
    pub async fn create_partitions(
        &self,
        name: &str,
        total: i32,
        assignments: Vec<Vec<i32>>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::CreatePartitions {
            name: name.to_string(),
            total,
            validate_only,
            assignments,
        })
        .await
        .map(|_| ())
    }

    /// Replaces a topic's configs (AlterConfigs; IncrementalAlterConfigs computes the new
    /// set first).
    pub async fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::SetTopicConfigs {
            name: name.to_string(),
            configs,
            validate_only,
        })
        .await
        .map(|_| ())
    }

    /// A new producer id; ids are reserved through the quorum in blocks.
    pub async fn allocate_producer_id(&self) -> Result<i64, ControllerError> {
        let mut ids = self.producer_ids.lock().await;
        if ids.0 >= ids.1 {
            match self.execute(ControllerCommand::AllocateProducerIds).await? {
                CommandOutcome::ProducerIds { first, end } => *ids = (first, end),
                other => return Err(unexpected(other)),
            }
        }
        let id = ids.0;
        ids.0 += 1;
        Ok(id)
    }

    /// Proposes a partition's new ISR (its leader's AlterPartition).
    pub async fn alter_partition(
        &self,
        proposal: &crate::replication::IsrProposal,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::AlterPartition {
            topic: proposal.topic_partition.topic.clone(),
            partition: proposal.topic_partition.partition,
            leader: proposal.leader,
            leader_epoch: proposal.leader_epoch,
            partition_epoch: proposal.partition_epoch,
            in_sync_replicas: proposal.in_sync_replicas.clone(),
        })
        .await
        .map(|_| ())
    }

    /// ElectLeaders: per-partition results (`None`: every partition that needed one).
    pub async fn elect_leaders(
        &self,
        election: ElectionType,
        partitions: Option<Vec<(String, i32)>>,
    ) -> Result<Vec<PartitionOutcome>, ControllerError> {
        match self
            .execute(ControllerCommand::ElectLeaders {
                election,
                partitions,
            })
            .await?
        {
            CommandOutcome::Partitions(outcomes) => Ok(outcomes),
            other => Err(unexpected(other)),
        }
    }

    /// AlterPartitionReassignments: per-partition results.
    pub async fn reassign_partitions(
        &self,
        reassignments: Vec<Reassignment>,
    ) -> Result<Vec<PartitionOutcome>, ControllerError> {
        match self
            .execute(ControllerCommand::ReassignPartitions { reassignments })
            .await?
        {
            CommandOutcome::Partitions(outcomes) => Ok(outcomes),
            other => Err(unexpected(other)),
        }
    }

    /// Replaces a broker's dynamic configs (`node_id` -1: the cluster-wide defaults).
    pub async fn set_broker_configs(
        &self,
        node_id: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::SetBrokerConfigs {
            node_id,
            configs,
            validate_only,
        })
        .await
        .map(|_| ())
    }

    /// AlterUserScramCredentials: the answer per user, in the order users first appear.
    pub async fn alter_scram_credentials(
        &self,
        alterations: Vec<super::decisions::ScramAlteration>,
    ) -> Result<Vec<(String, Option<ControllerError>)>, ControllerError> {
        match self
            .execute(ControllerCommand::AlterScramCredentials { alterations })
            .await?
        {
            CommandOutcome::Users(users) => Ok(users),
            other => Err(ControllerError::Refused(format!(
                "unexpected answer to AlterScramCredentials: {other:?}"
            ))),
        }
    }

    /// CreateAcls: adds the entries (checked by the caller).
    pub async fn create_acls(
        &self,
        acls: Vec<crate::security::acl::AclBinding>,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::CreateAcls { acls })
            .await
            .map(|_| ())
    }

    /// DeleteAcls: the entries each filter removed, in the filters' order.
    pub async fn delete_acls(
        &self,
        filters: Vec<crate::security::acl::AclFilter>,
    ) -> Result<Vec<Vec<crate::security::acl::AclBinding>>, ControllerError> {
        match self
            .execute(ControllerCommand::DeleteAcls { filters })
            .await?
        {
            CommandOutcome::AclsDeleted(matched) => Ok(matched),
            other => Err(ControllerError::Refused(format!(
                "unexpected answer to DeleteAcls: {other:?}"
            ))),
        }
    }

    /// AlterClientQuotas: sets and removes quotas (checked by the caller).
    pub async fn alter_client_quotas(
        &self,
        changes: Vec<super::decisions::QuotaChange>,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::AlterClientQuotas { changes })
            .await
            .map(|_| ())
    }

    /// UnregisterBroker: a broker that holds no replicas leaves the cluster.
    pub async fn unregister_broker(&self, node_id: i32) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::UnregisterBroker { node_id })
            .await
            .map(|_| ())
    }
}

/// `topics` in order, cut into runs of at most `limit` partitions in all (a topic asking for
/// more than `limit` goes alone; the controller refuses it).
fn partition_bounded_chunks(topics: Vec<TopicToCreate>, limit: i32) -> Vec<Vec<TopicToCreate>> {
    let mut chunks: Vec<Vec<TopicToCreate>> = Vec::new();
    let mut in_last = 0i64;
    for topic in topics {
        let size = i64::from(topic.partitions.max(topic.assignments.len() as i32).max(1));
        match chunks.last_mut() {
            Some(last) if in_last + size <= i64::from(limit) => {
                in_last += size;
                last.push(topic);
            }
            _ => {
                in_last = size;
                chunks.push(vec![topic]);
            }
        }
    }
    chunks
}

fn unexpected(outcome: CommandOutcome) -> ControllerError {
    ControllerError::Quorum(format!("unexpected controller answer {outcome:?}"))
}

impl Controller {
    /// UpdateFeatures: every level finalized, or none (the refusal says why).
    pub async fn update_features(
        &self,
        updates: Vec<crate::metadata::features::FeatureUpdate>,
        validate_only: bool,
    ) -> Result<(), ControllerError> {
        self.execute(ControllerCommand::UpdateFeatures {
            updates,
            validate_only,
        })
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, partitions: i32) -> TopicToCreate {
        TopicToCreate {
            name: name.into(),
            partitions,
            replication_factor: 1,
            configs: BTreeMap::new(),
            assignments: Vec::new(),
        }
    }

    #[test]
    fn create_topics_batches_stay_within_the_partition_bound_in_order() {
        let names = |chunks: &[Vec<TopicToCreate>]| -> Vec<Vec<String>> {
            chunks
                .iter()
                .map(|c| c.iter().map(|t| t.name.clone()).collect())
                .collect()
        };
        let chunks = partition_bounded_chunks(
            vec![
                topic("a", 6),
                topic("b", 4),
                topic("c", 1),
                topic("huge", 50),
                topic("d", -3),
                topic("e", 9),
            ],
            10,
        );
        assert_eq!(
            names(&chunks),
            [vec!["a", "b"], vec!["c"], vec!["huge"], vec!["d", "e"]]
        );
        assert!(partition_bounded_chunks(Vec::new(), 10).is_empty());
    }
}
