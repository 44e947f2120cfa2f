//! Scaling that moves data: a scale-in drains the leaving brokers (the highest ordinals)
//! in one reassignment before their pods go; a scale-out spreads replicas and preferred
//! leaders onto the new brokers once they have joined.
//!
//! Nothing here is remembered by the operator: each step is decided afresh from what the
//! brokers report (replica lists and reassignments in progress live in the metadata log)
//! and from the Cluster (`spec.replicas`, the StatefulSet's replicas, `status.scaling`).
//! An operator killed at any point decides the same next step when it comes back; a move
//! that finished is never asked for again, because the plan is made from where the
//! replicas are now. Moves are throttled (`spec.moveThrottleBytesPerSecond`); the
//! throttles are removed when the moves end, also by an operator that restarted.

use std::collections::{BTreeMap, BTreeSet};

use oxbow_placement::Candidate;
use oxbow_placement::reassignment::{self, PartitionState, Plan, TopicPartition};

use crate::admin::{AdminClient, AdminError, Partitions, Reassigning, ReplicaSizes};
use crate::bootstrap::Reach;
use crate::crd::{Cluster, MoveProgress, ScalingPhase, ScalingStatus};
use crate::metrics::Metrics;

/// How long a request to one broker (its sizes, its cordon) waits for a connection: a pod
/// that does not answer must not hold up the whole reconcile.
const BROKER_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// What the brokers report, for one decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    pub cluster: Partitions,
    /// Partitions whose reassignment is still copying data.
    pub moving: BTreeSet<TopicPartition>,
    /// What each of those partitions adds (the replicas copying) and removes.
    pub reassigning: BTreeMap<TopicPartition, Reassigning>,
    /// Bytes each broker holds of each partition (empty when not read: plans then balance
    /// counts alone).
    pub sizes: ReplicaSizes,
}

/// The next thing to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Start this reassignment (every partition that must change, in one request).
    Reassign(Plan),
    /// Reassignments are copying data: wait.
    Wait { moving: usize },
    /// Move leadership back to these partitions' preferred replicas.
    ElectLeaders(BTreeSet<TopicPartition>),
    /// Nothing is left to move.
    Done,
    /// It cannot be done; the message says why.
    Refused(String),
}

/// Reads what a decision needs.
pub async fn observe(admin: &mut AdminClient) -> Result<Observation, AdminError> {
    let reassigning = admin.reassignments().await?;
    Ok(Observation {
        cluster: admin.partitions().await?,
        moving: reassigning.keys().cloned().collect(),
        reassigning,
        sizes: ReplicaSizes::new(),
    })
}

/// Every reachable broker's replica sizes (each broker reports its own); one that does
/// not answer is left out, its replicas then count as empty.
pub async fn read_sizes(brokers: &BTreeMap<i32, String>) -> ReplicaSizes {
    let mut sizes = ReplicaSizes::new();
    for (id, address) in brokers {
        let read = async {
            let mut admin = AdminClient::connect_within(address, BROKER_CONNECT_TIMEOUT).await?;
            admin.replica_sizes().await
        };
        match read.await {
            Ok(of_broker) => {
                sizes.insert(*id, of_broker);
            }
            Err(error) => tracing::debug!(broker = id, %error, "Cannot read replica sizes"),
        }
    }
    sizes
}

/// Bytes the copies in flight make in all (each adding replica copies its leader's log),
/// and bytes already on the adding replicas.
pub fn copy_totals(observation: &Observation) -> (u64, u64) {
    let (mut total, mut copied) = (0_u64, 0_u64);
    for (partition, moving) in &observation.reassigning {
        let size = observation.cluster.size_of(partition, &observation.sizes);
        for broker in &moving.adding {
            let have = observation
                .sizes
                .get(broker)
                .and_then(|s| s.get(partition))
                .copied()
                .unwrap_or(0);
            total = total.saturating_add(size);
            copied = copied.saturating_add(have.min(size));
        }
    }
    (total, copied)
}

/// The progress of the copies in flight, with the rate since `previous` (the last look).
pub fn progress(
    observation: &Observation,
    previous: Option<&MoveProgress>,
    now_ms: i64,
) -> MoveProgress {
    let (total, copied) = copy_totals(observation);
    let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let (total, copied) = (clamp(total), clamp(copied));
    let rate = previous
        .filter(|p| {
            now_ms > p.observed_at_ms && copied >= p.bytes_copied && total == p.bytes_to_copy
        })
        .map(|p| (copied - p.bytes_copied).saturating_mul(1000) / (now_ms - p.observed_at_ms));
    let eta = rate
        .filter(|r| *r > 0)
        .map(|r| ((total - copied).max(0) + r - 1) / r);
    MoveProgress {
        partitions: i32::try_from(observation.reassigning.len()).unwrap_or(i32::MAX),
        bytes_to_copy: total,
        bytes_copied: copied,
        bytes_per_second: rate,
        eta_seconds: eta,
        observed_at_ms: now_ms,
    }
}

/// Bytes for a person: `512 B`, `3.2 MiB`.
pub fn human_bytes(bytes: i64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss)]
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// `3 partition(s) still copying: 4.0 MiB of 8.0 MiB copied, at 1.0 MiB/s, about 4 s left`.
pub fn describe_progress(progress: &MoveProgress) -> String {
    let mut text = format!(
        "{} partition(s) still copying: {} of {} copied",
        progress.partitions,
        human_bytes(progress.bytes_copied),
        human_bytes(progress.bytes_to_copy)
    );
    if let Some(rate) = progress.bytes_per_second {
        text.push_str(&format!(", at {}/s", human_bytes(rate)));
    }
    if let Some(eta) = progress.eta_seconds {
        text.push_str(&format!(", about {eta} s left"));
    }
    text
}

/// The brokers of `ids` as placement sees them (only those registered).
fn targets(observation: &Observation, ids: &BTreeSet<i32>) -> Vec<Candidate> {
    let mut candidates = observation.cluster.candidates();
    candidates.retain(|c| ids.contains(&c.node_id));
    candidates
}

/// Brokers `0..count`: a Cluster's brokers are its pods' ordinals.
pub fn ordinals(count: i32) -> BTreeSet<i32> {
    (0..count.max(0)).collect()
}

fn current(observation: &Observation) -> BTreeMap<TopicPartition, PartitionState> {
    observation.cluster.sized_states(&observation.sizes)
}

/// Partitions that hold a replica on a broker outside `stay`.
pub fn on_leaving(observation: &Observation, stay: &BTreeSet<i32>) -> usize {
    observation
        .cluster
        .partitions
        .values()
        .filter(|p| p.replicas.iter().any(|id| !stay.contains(id)))
        .count()
}

/// The scale-in step: empty every broker outside `stay`, in one plan that also keeps the
/// remaining brokers balanced.
pub fn drain_step(observation: &Observation, stay: &BTreeSet<i32>) -> Step {
    let remaining = stay.len();
    // A partition being moved lists its old and new replicas together: its replication
    // factor is what stays once the move is done.
    let factor = |partition: &TopicPartition, replicas: usize| {
        let removing = observation
            .reassigning
            .get(partition)
            .map_or(0, |r| r.removing.len());
        replicas.saturating_sub(removing)
    };
    if let Some((partition, factor)) = observation
        .cluster
        .partitions
        .iter()
        .map(|(partition, p)| (partition, factor(partition, p.replicas.len())))
        .max_by_key(|(_, factor)| *factor)
        .filter(|(_, factor)| *factor > remaining)
    {
        return Step::Refused(format!(
            "cannot scale in to {remaining} broker(s): partition {partition} has {factor} replicas; lower its topic's replication factor first"
        ));
    }
    if !observation.moving.is_empty() {
        return Step::Wait {
            moving: observation.moving.len(),
        };
    }
    if on_leaving(observation, stay) == 0 {
        return Step::Done;
    }
    let targets = targets(observation, stay);
    match reassignment::plan(&targets, &current(observation)) {
        Ok(plan) if plan.assignments.is_empty() => Step::Done,
        Ok(plan) => Step::Reassign(plan),
        Err(error) => Step::Refused(format!("cannot scale in to {remaining} broker(s): {error}")),
    }
}

/// The scale-out step: once every broker of `brokers` has registered, spread replicas onto
/// them, then hand preferred leaderships back.
pub fn balance_step(observation: &Observation, brokers: &BTreeSet<i32>) -> Step {
    let targets = targets(observation, brokers);
    if targets.len() < brokers.len() {
        return Step::Wait { moving: 0 };
    }
    if !observation.moving.is_empty() {
        return Step::Wait {
            moving: observation.moving.len(),
        };
    }
    match reassignment::plan(&targets, &current(observation)) {
        Ok(plan) if !plan.assignments.is_empty() => return Step::Reassign(plan),
        Ok(_) => {}
        Err(error) => return Step::Refused(error.to_string()),
    }
    let elect = observation.cluster.preferred_not_leading();
    if elect.is_empty() {
        Step::Done
    } else {
        Step::ElectLeaders(elect)
    }
}

/// What a reconcile does about scaling: how many brokers the StatefulSet keeps, the status
/// to show, and an Event for what changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub keep: i32,
    pub status: Option<ScalingStatus>,
    pub event: Option<(bool, &'static str, String)>,
}

fn scaling(from: i32, to: i32, phase: ScalingPhase, message: String) -> Option<ScalingStatus> {
    Some(ScalingStatus {
        from,
        to,
        phase,
        message,
        progress: None,
    })
}

/// Brokers `from..to`.
fn range(from: i32, to: i32) -> BTreeSet<i32> {
    (from.max(0)..to).collect()
}

/// Cordons `cordon` and uncordons `uncordon` (KIP-1066), each through the broker itself.
async fn set_cordons(
    reach: &Reach,
    cordon: &BTreeSet<i32>,
    uncordon: &BTreeSet<i32>,
) -> Result<(), String> {
    let wanted = cordon.iter().map(|id| (*id, true));
    for (broker, cordoned) in wanted.chain(uncordon.iter().map(|id| (*id, false))) {
        let verb = if cordoned { "cordon" } else { "uncordon" };
        let address = reach
            .brokers
            .get(&broker)
            .ok_or_else(|| format!("cannot {verb} broker {broker}: its pod has no address"))?;
        let mut admin = AdminClient::connect_within(address, BROKER_CONNECT_TIMEOUT)
            .await
            .map_err(|error| format!("cannot {verb} broker {broker}: {error}"))?;
        admin
            .set_cordoned(broker, cordoned)
            .await
            .map_err(|error| format!("cannot {verb} broker {broker}: {error}"))?;
    }
    Ok(())
}

/// Brokers a drain cordoned that a changed `spec.replicas` no longer removes: a drain the
/// user took back or changed must not leave them taking no new replicas for good. (Brokers
/// whose pods were already removed are uncordoned by the scale-out that brings them back.)
fn no_longer_leaving(previous: Option<&ScalingStatus>, wanted: i32, current: i32) -> BTreeSet<i32> {
    match previous {
        Some(p) if p.phase == ScalingPhase::Draining => range(p.to, p.from)
            .difference(&range(wanted, current))
            .copied()
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// Decides (and starts) the data moves of a scale. `current` is the StatefulSet's replica
/// count (`None` before it exists); `leaving_pods` counts the pods with an ordinal of
/// `spec.replicas` or more.
pub async fn reconcile(
    cluster: &Cluster,
    current: Option<i32>,
    reach: &Reach,
    leaving_pods: Result<usize, String>,
    metrics: &Metrics,
) -> Outcome {
    let wanted = cluster.spec.replicas;
    let previous = cluster.status.as_ref().and_then(|s| s.scaling.clone());
    let addresses = reach.any.as_slice();
    let Some(current) = current else {
        return Outcome {
            keep: wanted,
            status: None,
            event: None,
        };
    };
    let stale = no_longer_leaving(previous.as_ref(), wanted, current);
    if let Err(message) = set_cordons(reach, &BTreeSet::new(), &stale).await {
        // The StatefulSet stays and so does the old status: the next reconcile tries again.
        let mut status = previous.clone();
        if let Some(status) = status.as_mut() {
            status.message = message;
        }
        return Outcome {
            keep: current,
            status,
            event: None,
        };
    }
    let steady = |status| Outcome {
        keep: wanted,
        status,
        event: None,
    };
    if wanted > current {
        return Outcome {
            keep: wanted,
            status: scaling(
                current,
                wanted,
                ScalingPhase::StartingBrokers,
                format!(
                    "Starting brokers {current}-{}; their share of the replicas moves to them once they have joined",
                    wanted - 1
                ),
            ),
            event: None,
        };
    }
    if wanted == current {
        let Some(previous) = previous else {
            return steady(None);
        };
        return match previous.phase {
            ScalingPhase::RemovingBrokers if previous.to == wanted => {
                remove(previous, addresses, leaving_pods).await
            }
            ScalingPhase::StartingBrokers
            | ScalingPhase::Balancing
            | ScalingPhase::ElectingLeaders
                if previous.to == wanted =>
            {
                balance(cluster, previous, reach, metrics).await
            }
            // A refused scale-in the user took back, or a scale that no longer applies.
            _ => steady(None),
        };
    }
    drain(cluster, current, wanted, reach, metrics).await
}

async fn connect(addresses: &[String]) -> Result<AdminClient, String> {
    crate::bootstrap::connect(addresses)
        .await
        .map(|(admin, _)| admin)
        .map_err(|e| format!("cannot reach the brokers: {e}"))
}

async fn connect_and_observe(reach: &Reach) -> Result<(AdminClient, Observation), String> {
    let mut admin = connect(&reach.any).await?;
    let mut observation = observe(&mut admin)
        .await
        .map_err(|error| format!("cannot read the partitions: {error}"))?;
    observation.sizes = read_sizes(&reach.brokers).await;
    Ok((admin, observation))
}

/// The progress of the copies in flight (rate and ETA against the last look, kept in the
/// Cluster's status), also set in the operator's metrics.
fn track(cluster: &Cluster, observation: &Observation, metrics: &Metrics) -> MoveProgress {
    let previous = cluster
        .status
        .as_ref()
        .and_then(|s| s.scaling.as_ref())
        .and_then(|s| s.progress.as_ref());
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let progress = progress(observation, previous, now_ms);
    let left = progress.bytes_to_copy.saturating_sub(progress.bytes_copied);
    metrics.move_progress(
        cluster.metadata.namespace.as_deref().unwrap_or_default(),
        cluster.metadata.name.as_deref().unwrap_or_default(),
        u64::try_from(left).unwrap_or(0),
        progress
            .bytes_per_second
            .and_then(|r| u64::try_from(r).ok())
            .unwrap_or(0),
    );
    progress
}

/// Starts a plan's moves, throttled to `rate` bytes/s per broker.
async fn start_moves(
    admin: &mut AdminClient,
    observation: &Observation,
    plan: &Plan,
    rate: u64,
) -> Result<(), AdminError> {
    let lists = observation.cluster.replica_lists();
    admin.start_moves(&lists, &plan.assignments, rate).await
}

/// Removes the throttles of topics whose moves have finished.
async fn clear_throttles(admin: &mut AdminClient, observation: &Observation) -> Result<(), String> {
    let topics: BTreeSet<String> = observation
        .cluster
        .partitions
        .keys()
        .map(|p| p.topic.clone())
        .collect();
    let topics: Vec<String> = topics.into_iter().collect();
    admin
        .clear_finished_throttles(&topics, &observation.moving)
        .await
        .map(|_| ())
        .map_err(|error| format!("cannot remove the finished moves' throttles: {error}"))
}

/// The throttle of a Cluster's moves, bytes/s per broker.
fn rate(cluster: &Cluster) -> u64 {
    u64::try_from(cluster.spec.move_throttle_bytes_per_second).unwrap_or(1)
}

async fn drain(
    cluster: &Cluster,
    current: i32,
    wanted: i32,
    reach: &Reach,
    metrics: &Metrics,
) -> Outcome {
    let waiting = |message: String| Outcome {
        keep: current,
        status: scaling(current, wanted, ScalingPhase::Draining, message),
        event: None,
    };
    let (mut admin, observation) = match connect_and_observe(reach).await {
        Ok(connected) => connected,
        Err(message) => return waiting(message),
    };
    let progress = track(cluster, &observation, metrics);
    let leaving = format!("{wanted}-{}", current - 1);
    let stay = ordinals(wanted);
    let step = drain_step(&observation, &stay);
    // The leaving brokers take no new replicas (a topic created meanwhile lands on the
    // brokers that stay) until they are unregistered, which ends the cordon; a refused
    // scale-in leaves them as they were.
    let (cordon, uncordon) = match step {
        Step::Refused(_) => (BTreeSet::new(), range(wanted, current)),
        _ => (range(wanted, current), BTreeSet::new()),
    };
    // A broker that cannot be cordoned still drains (a topic created meanwhile on it is
    // moved by the next plan); the status says so.
    let not_cordoned = set_cordons(reach, &cordon, &uncordon).await.err();
    if let Some(message) = &not_cordoned {
        tracing::warn!(message, "Cordoning the leaving brokers failed");
    }
    let waiting = |message: String| match &not_cordoned {
        Some(why) => waiting(format!("{message} ({why})")),
        None => waiting(message),
    };
    match step {
        Step::Refused(message) => Outcome {
            keep: current,
            status: scaling(current, wanted, ScalingPhase::Refused, message.clone()),
            event: Some((true, "ScaleInRefused", message)),
        },
        Step::Wait { .. } => {
            let mut outcome = waiting(format!(
                "Moving replicas off brokers {leaving}: {}; {} partition(s) still on them",
                describe_progress(&progress),
                on_leaving(&observation, &stay)
            ));
            if let Some(status) = outcome.status.as_mut() {
                status.progress = Some(progress);
            }
            outcome
        }
        Step::Reassign(plan) => {
            match start_moves(&mut admin, &observation, &plan, rate(cluster)).await {
                Ok(()) => {
                    metrics.moves_started("scale_in", plan.replica_moves, plan.bytes_moved);
                    let message = format!(
                        "Moving replicas off brokers {leaving}: {} replica(s) of {} partition(s), {} to copy, in one reassignment",
                        plan.replica_moves,
                        plan.assignments.len(),
                        human_bytes(i64::try_from(plan.bytes_moved).unwrap_or(i64::MAX))
                    );
                    Outcome {
                        keep: current,
                        status: scaling(current, wanted, ScalingPhase::Draining, message.clone()),
                        event: Some((false, "Draining", message)),
                    }
                }
                Err(error) => waiting(format!("cannot start the reassignment: {error}")),
            }
        }
        Step::Done | Step::ElectLeaders(_) => {
            if let Err(message) = clear_throttles(&mut admin, &observation).await {
                return waiting(message);
            }
            let message = format!(
                "Brokers {leaving} hold no replicas; removing their pods and unregistering them"
            );
            Outcome {
                keep: wanted,
                status: scaling(
                    current,
                    wanted,
                    ScalingPhase::RemovingBrokers,
                    message.clone(),
                ),
                event: Some((false, "Drained", message)),
            }
        }
    }
}

async fn remove(
    previous: ScalingStatus,
    addresses: &[String],
    leaving_pods: Result<usize, String>,
) -> Outcome {
    let wanted = previous.to;
    let waiting = |message: String| Outcome {
        keep: wanted,
        status: scaling(
            previous.from,
            wanted,
            ScalingPhase::RemovingBrokers,
            message,
        ),
        event: None,
    };
    match leaving_pods {
        Ok(0) => {}
        Ok(left) => return waiting(format!("Waiting for {left} leaving broker pod(s) to stop")),
        Err(message) => return waiting(message),
    }
    let mut admin = match connect(addresses).await {
        Ok(admin) => admin,
        Err(message) => return waiting(message),
    };
    for broker in wanted..previous.from {
        if let Err(error) = admin.unregister_broker(broker).await {
            return waiting(format!("cannot unregister broker {broker}: {error}"));
        }
    }
    Outcome {
        keep: wanted,
        status: None,
        event: Some((
            false,
            "ScaledIn",
            format!(
                "Scaled in from {} to {wanted} brokers: brokers {wanted}-{} drained, stopped and unregistered",
                previous.from,
                previous.from - 1
            ),
        )),
    }
}

async fn balance(
    cluster: &Cluster,
    previous: ScalingStatus,
    reach: &Reach,
    metrics: &Metrics,
) -> Outcome {
    let wanted = previous.to;
    let status = |phase, message: String| scaling(previous.from, wanted, phase, message);
    let waiting = |message: String| Outcome {
        keep: wanted,
        status: status(previous.phase, message),
        event: None,
    };
    let (mut admin, observation) = match connect_and_observe(reach).await {
        Ok(connected) => connected,
        Err(message) => return waiting(message),
    };
    let progress = track(cluster, &observation, metrics);
    let step = balance_step(&observation, &ordinals(wanted));
    // The new brokers take new replicas: one that a taken-back scale-in had cordoned
    // comes back uncordoned (a no-op for the others).
    if !matches!(step, Step::Wait { moving: 0 })
        && let Err(message) =
            set_cordons(reach, &BTreeSet::new(), &range(previous.from, wanted)).await
    {
        tracing::warn!(message, "Uncordoning the new brokers failed");
    }
    match step {
        Step::Wait { moving: 0 } => waiting(format!(
            "Waiting for brokers {}-{} to join the cluster",
            previous.from,
            wanted - 1
        )),
        Step::Wait { .. } => {
            let mut status = status(
                ScalingPhase::Balancing,
                format!(
                    "Moving replicas onto the new brokers: {}",
                    describe_progress(&progress)
                ),
            );
            if let Some(status) = status.as_mut() {
                status.progress = Some(progress);
            }
            Outcome {
                keep: wanted,
                status,
                event: None,
            }
        }
        Step::Reassign(plan) => {
            match start_moves(&mut admin, &observation, &plan, rate(cluster)).await {
                Ok(()) => {
                    metrics.moves_started("scale_out", plan.replica_moves, plan.bytes_moved);
                    let message = format!(
                        "Moving {} replica(s) of {} partition(s) to balance {wanted} brokers, {} to copy, in one reassignment",
                        plan.replica_moves,
                        plan.assignments.len(),
                        human_bytes(i64::try_from(plan.bytes_moved).unwrap_or(i64::MAX))
                    );
                    Outcome {
                        keep: wanted,
                        status: status(ScalingPhase::Balancing, message.clone()),
                        event: Some((false, "Balancing", message)),
                    }
                }
                Err(error) => waiting(format!("cannot start the reassignment: {error}")),
            }
        }
        Step::ElectLeaders(_) | Step::Done
            if let Err(message) = clear_throttles(&mut admin, &observation).await =>
        {
            waiting(message)
        }
        Step::ElectLeaders(partitions) => match admin.elect_preferred_leaders(&partitions).await {
            Ok(()) => Outcome {
                keep: wanted,
                status: status(
                    ScalingPhase::ElectingLeaders,
                    format!(
                        "Moved leadership of {} partition(s) to their preferred replicas",
                        partitions.len()
                    ),
                ),
                event: None,
            },
            Err(error) => waiting(format!("cannot elect preferred leaders: {error}")),
        },
        Step::Done => Outcome {
            keep: wanted,
            status: None,
            event: Some((
                false,
                "Balanced",
                format!(
                    "Scaled out from {} to {wanted} brokers: replicas and leaders balanced",
                    previous.from
                ),
            )),
        },
        Step::Refused(message) => Outcome {
            keep: wanted,
            status: status(ScalingPhase::Refused, message.clone()),
            event: Some((true, "BalanceRefused", message)),
        },
    }
}

#[cfg(test)]
mod tests;
