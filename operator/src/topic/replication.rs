//! Changing a topic's replication factor: one throttled reassignment that adds replicas
//! to, or removes them from, every partition (the shared placement plans it), then the
//! throttles' removal once no partition of the topic moves any more. Each step is decided
//! from what the cluster reports, so a restarted operator carries on where it stopped.

use std::collections::{BTreeMap, BTreeSet};

use oxbow_placement::reassignment::{TopicPartition, change_replication_factor};

use crate::admin::{AdminClient, AdminError};
use crate::cluster::scale::{human_bytes, read_sizes};
use crate::crd::{Cluster, ScalingPhase};

/// Where a replication factor change stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Nothing moves and the throttles are gone.
    Settled,
    /// The reassignment was just started; `bytes` is what its new replicas copy.
    Started {
        replicas: usize,
        partitions: usize,
        bytes: u64,
    },
    /// Partitions of the topic are still copying.
    Moving { partitions: usize },
    /// The change waits for something else (the message says what).
    Waiting(String),
}

impl Progress {
    /// A sentence for status and Events, or `None` when settled.
    pub fn describe(&self, topic: &str, from: i32, to: i32, rate: u64) -> Option<String> {
        let throttle = format!("throttled to {} MiB/s per broker", rate >> 20);
        match self {
            Progress::Settled => None,
            Progress::Started {
                replicas,
                partitions,
                bytes,
            } => Some(format!(
                "Changing the replication factor of topic {topic} from {from} to {to}: moving {replicas} replica(s) of {partitions} partition(s), {} to copy, {throttle}",
                human_bytes(i64::try_from(*bytes).unwrap_or(i64::MAX))
            )),
            Progress::Moving { partitions } => Some(format!(
                "Changing the replication factor of topic {topic} from {from} to {to}: {partitions} partition(s) still copying, {throttle}"
            )),
            Progress::Waiting(why) => Some(format!(
                "Changing the replication factor of topic {topic} from {from} to {to} waits: {why}"
            )),
        }
    }
}

/// Takes one step towards `wanted` replicas for every partition of `topic` (`None`: the
/// factor already matches; only finished throttles may remain to remove). `brokers` are
/// the brokers' own addresses, asked for their replicas' sizes when a plan is made.
pub async fn step(
    admin: &mut AdminClient,
    cluster: &Cluster,
    brokers: &BTreeMap<i32, String>,
    topic: &str,
    wanted: Option<i32>,
    has_throttles: bool,
) -> Result<Progress, AdminError> {
    if wanted.is_none() && !has_throttles {
        return Ok(Progress::Settled);
    }
    let moving = admin.reassignments_in_progress().await?;
    let ours = moving.iter().filter(|p| p.topic == topic).count();
    if ours > 0 {
        return Ok(Progress::Moving { partitions: ours });
    }
    let Some(wanted) = wanted else {
        admin
            .clear_finished_throttles(&[topic.to_string()], &moving)
            .await?;
        return Ok(Progress::Settled);
    };
    if let Some(scaling) = cluster.status.as_ref().and_then(|s| s.scaling.as_ref())
        && scaling.phase != ScalingPhase::Refused
    {
        return Ok(Progress::Waiting(format!(
            "cluster {} is scaling from {} to {} brokers ({})",
            cluster.metadata.name.as_deref().unwrap_or_default(),
            scaling.from,
            scaling.to,
            scaling.phase
        )));
    }
    let observed = admin.partitions().await?;
    let targets = observed.candidates();
    let current = observed.sized_states(&read_sizes(brokers).await);
    let size = usize::try_from(wanted).unwrap_or(0);
    let plan = match change_replication_factor(&targets, &current, topic, size) {
        Ok(plan) => plan,
        Err(error) => return Ok(Progress::Waiting(error.to_string())),
    };
    if plan.assignments.is_empty() {
        return Ok(Progress::Settled);
    }
    let lists = observed.replica_lists();
    let rate = u64::try_from(cluster.spec.move_throttle_bytes_per_second).unwrap_or(1);
    admin.start_moves(&lists, &plan.assignments, rate).await?;
    let partitions: BTreeSet<&TopicPartition> = plan.assignments.keys().collect();
    Ok(Progress::Started {
        replicas: plan.replica_moves,
        partitions: partitions.len(),
        bytes: plan.bytes_moved,
    })
}
