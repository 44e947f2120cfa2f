//! The roll gate: the operator restarts the next outdated broker only when the last one is
//! fully back. Every pod is Ready (checked before the gate), and the brokers report that
//! every broker of the Cluster is registered, no partition is short of in-sync replicas
//! (so the restarted broker has caught up on everything it hosts, however long its log
//! recovery took, and no restart can take a partition below `min.insync.replicas`), and
//! every preferred replica leads again (the gate asks for the elections itself). The active
//! controller restarts last, so the quorum changes leader once per roll. What the brokers
//! report decides; when none answers, the roll waits.

use std::collections::BTreeSet;

use oxbow_placement::reassignment::TopicPartition;

use crate::admin::{AdminClient, AdminError, Partitions};

/// May the next broker restart now?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollGate {
    /// Everything is back: restart the next broker.
    Open,
    /// These brokers of the Cluster are not registered (or fenced): wait.
    NotRegistered(Vec<i32>),
    /// This many partitions have fewer in-sync replicas than replicas: wait.
    UnderReplicated(usize),
    /// These partitions' preferred replicas are in sync but do not lead: elect, then wait.
    LeadershipsNotBack(BTreeSet<TopicPartition>),
    /// The brokers could not be asked: wait.
    Unknown(String),
}

impl RollGate {
    /// Why the roll waits, for the Rolling condition and the log; `None` when it may go on.
    pub fn reason(&self) -> Option<String> {
        match self {
            RollGate::Open => None,
            RollGate::NotRegistered(ids) => Some(format!(
                "broker(s) {} have not registered with the controller yet",
                ids.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            RollGate::UnderReplicated(count) => Some(format!(
                "{count} partition(s) are under-replicated (a restarted broker is still catching up)"
            )),
            RollGate::LeadershipsNotBack(partitions) => Some(format!(
                "{} partition(s) are not led by their preferred replica yet; leadership is being moved back",
                partitions.len()
            )),
            RollGate::Unknown(message) => Some(message.clone()),
        }
    }
}

/// What the gate needs from the brokers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RollView {
    pub cluster: Partitions,
}

/// Asks the first broker among `candidates` (`host:port`) that answers; starts the
/// preferred-leader elections the gate waits for. Returns the gate and the active
/// controller.
pub async fn check(candidates: &[String], brokers: &BTreeSet<i32>) -> (RollGate, Option<i32>) {
    let (mut admin, _) = match crate::bootstrap::connect(candidates).await {
        Ok(connected) => connected,
        Err(error) => {
            return (
                RollGate::Unknown(format!(
                    "cannot reach the brokers to check replication: {error}"
                )),
                None,
            );
        }
    };
    let view = match observe(&mut admin).await {
        Ok(view) => view,
        Err(error) => {
            return (
                RollGate::Unknown(format!("cannot check replication: {error}")),
                None,
            );
        }
    };
    let gate = decide(&view, brokers);
    if let RollGate::LeadershipsNotBack(partitions) = &gate
        && let Err(error) = admin.elect_preferred_leaders(partitions).await
    {
        return (
            RollGate::Unknown(format!("cannot move leadership back: {error}")),
            None,
        );
    }
    (gate, active_controller(&mut admin).await)
}

/// How long the roll waits to learn the active controller. Kafka forwards DescribeQuorum
/// to the quorum's leader; with that leader stopped the request hangs until a new one is
/// elected, and the roll must not wait on it: the order (controller last) is then unknown.
const QUORUM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The active controller, or `None` when the quorum does not say in time. Asked last on
/// the connection: a request that timed out leaves it unusable.
async fn active_controller(admin: &mut AdminClient) -> Option<i32> {
    match tokio::time::timeout(QUORUM_TIMEOUT, admin.active_controller()).await {
        Ok(Ok(active)) => active,
        Ok(Err(error)) => {
            tracing::info!(%error, "Cannot learn the active controller; rolling in pod order");
            None
        }
        Err(_) => {
            tracing::info!("The quorum did not name its leader in time; rolling in pod order");
            None
        }
    }
}

async fn observe(admin: &mut AdminClient) -> Result<RollView, AdminError> {
    Ok(RollView {
        cluster: admin.partitions().await?,
    })
}

/// The gate for a Cluster whose brokers are `brokers`.
pub fn decide(view: &RollView, brokers: &BTreeSet<i32>) -> RollGate {
    let registered: BTreeSet<i32> = view.cluster.brokers.iter().map(|b| b.id).collect();
    let missing: Vec<i32> = brokers.difference(&registered).copied().collect();
    if !missing.is_empty() {
        return RollGate::NotRegistered(missing);
    }
    let under = view
        .cluster
        .partitions
        .values()
        .filter(|p| p.in_sync_replicas.len() < p.replicas.len())
        .count();
    if under > 0 {
        return RollGate::UnderReplicated(under);
    }
    let not_back = view.cluster.preferred_not_leading();
    if !not_back.is_empty() {
        return RollGate::LeadershipsNotBack(not_back);
    }
    RollGate::Open
}

#[cfg(test)]
mod tests;
