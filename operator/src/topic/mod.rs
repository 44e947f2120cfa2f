//! The Topic reconciler: a `Topic` becomes calls to its cluster's Kafka admin API.
//!
//! ```text
//!   fetch ─▶ validate (pure) ─▶ find the Cluster ─▶ describe (Metadata, DescribeConfigs)
//!         ─▶ plan (pure, plan.rs) ─▶ CreateTopics / CreatePartitions / IncrementalAlterConfigs
//!         ─▶ describe again ─▶ status conditions + Events
//!   deletion (finalizer) ─▶ DeleteTopics
//! ```
//!
//! A changed replication factor becomes a throttled reassignment (`replication.rs`), shown
//! as Reconciling/ReplicationFactorChanging until every partition has moved. Impossible
//! requests (fewer partitions, a replication factor above the broker count) get a Degraded
//! condition and wait for a spec change; an unreachable cluster is transient and retried
//! with back-off.

pub mod plan;
pub mod replication;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer;
use kube::{Resource, ResourceExt};

use crate::admin::{AdminClient, AdminError};
use crate::bootstrap::{connect, connect_pooled, forget_reach, reach_cached};
use crate::cluster::config::{self, TOPIC_KEYS};
use crate::context::Context;
use crate::controller::{self, Reconciled};
use crate::crd::{
    Cluster, TOPIC_FINALIZER, Topic, TopicStatus, condition, merge_conditions, types,
};
use plan::{DesiredTopic, assignment_summary, replication_factor};

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "topic";
/// Periodic re-check of a healthy topic (puts back changes made behind the operator's back),
/// when there are few Topics.
const REQUEUE_IDLE: Duration = Duration::from_secs(60);
/// Re-checks of healthy Topics per second, at most, across all of them: with 10,000 Topics
/// a re-check every minute each would take the capacity new Topics need.
const IDLE_RECHECKS_PER_SECOND: u32 = 20;
/// Re-check while waiting for the cluster.
const REQUEUE_WAITING: Duration = Duration::from_secs(15);
/// Re-check while a replication factor change moves data.
const REQUEUE_MOVING: Duration = Duration::from_secs(5);
/// Re-check of an impossible request that may become possible (more brokers).
const REQUEUE_IMPOSSIBLE: Duration = Duration::from_secs(300);

/// A failed step of the Topic pipeline.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the Topic has no namespace")]
    NoNamespace,
    #[error("reading Cluster {name} failed: {source}")]
    FetchCluster { name: String, source: kube::Error },
    #[error("cluster {cluster} at {address}: {source}")]
    Admin {
        cluster: String,
        address: String,
        source: AdminError,
    },
    #[error("writing the status of Topic {name} failed: {source}")]
    Status { name: String, source: kube::Error },
    #[error("finalizer step failed: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
}

impl Error {
    /// Bounded label for the errors metric.
    pub fn category(&self) -> &'static str {
        match self {
            Error::NoNamespace => "invalid",
            Error::FetchCluster { .. } => "fetch",
            Error::Admin {
                source: AdminError::Kafka { .. },
                ..
            } => "kafka",
            Error::Admin { .. } => "connection",
            Error::Status { .. } => "status",
            Error::Finalizer(inner) => match inner.as_ref() {
                finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => {
                    e.category()
                }
                _ => "finalizer",
            },
        }
    }
}

impl Reconciled for Topic {
    type Error = Error;
    const CONTROLLER: &'static str = CONTROLLER;
    const FINALIZER: &'static str = TOPIC_FINALIZER;

    fn apply(&self, ctx: &Context) -> impl Future<Output = Result<Action, Error>> + Send {
        apply(self, ctx)
    }

    fn cleanup(&self, ctx: &Context) -> impl Future<Output = Result<Action, Error>> + Send {
        cleanup(self, ctx)
    }

    fn no_namespace() -> Error {
        Error::NoNamespace
    }

    fn finalizer_failed(error: finalizer::Error<Error>) -> Error {
        Error::Finalizer(Box::new(error))
    }

    fn category(error: &Error) -> &'static str {
        error.category()
    }

    fn log_failure(&self, error: &Error) {
        tracing::warn!(topic = %self.name_any(), %error, "Topic reconcile failed");
    }
}

/// Status with conditions; `ready` false needs a reason.
struct Outcome {
    ready: bool,
    degraded: bool,
    reason: &'static str,
    message: String,
}

async fn write_status(
    topic: &Topic,
    ctx: &Context,
    outcome: Outcome,
    mut status: TopicStatus,
) -> Result<(), Error> {
    let generation = topic.metadata.generation;
    let existing = topic
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    status.conditions = merge_conditions(
        &existing,
        vec![
            condition(
                types::READY,
                outcome.ready,
                outcome.reason,
                outcome.message.clone(),
                generation,
            ),
            condition(
                types::RECONCILING,
                !outcome.ready && !outcome.degraded,
                outcome.reason,
                if outcome.ready {
                    String::new()
                } else {
                    outcome.message.clone()
                },
                generation,
            ),
            condition(
                types::DEGRADED,
                outcome.degraded,
                if outcome.degraded {
                    outcome.reason
                } else {
                    "AsExpected"
                },
                if outcome.degraded {
                    outcome.message
                } else {
                    String::new()
                },
                generation,
            ),
        ],
    );
    status.observed_generation = generation;
    status.topic_name = Some(topic.kafka_name());
    if topic.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let name = topic.name_any();
    let api: Api<Topic> =
        Api::namespaced(ctx.client.clone(), &topic.namespace().unwrap_or_default());
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "status": status })),
    )
    .await
    .map_err(|source| Error::Status {
        name: name.clone(),
        source,
    })?;
    Ok(())
}

fn previous_status(topic: &Topic) -> TopicStatus {
    topic.status.clone().unwrap_or_default()
}

async fn apply(topic: &Topic, ctx: &Context) -> Result<Action, Error> {
    let namespace = topic.namespace().ok_or(Error::NoNamespace)?;
    let reference = topic.object_ref(&());
    let configs = match config::validate_config(&topic.spec.config, TOPIC_KEYS, "topic", &[]) {
        Ok(configs) => configs,
        Err(errors) => {
            let message = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            ctx.event(&reference, true, "InvalidSpec", "Validate", message.clone())
                .await;
            let outcome = Outcome {
                ready: false,
                degraded: true,
                reason: "InvalidConfig",
                message,
            };
            write_status(topic, ctx, outcome, previous_status(topic)).await?;
            return Ok(Action::await_change());
        }
    };
    let desired = DesiredTopic {
        name: topic.kafka_name(),
        partitions: topic.spec.partitions,
        replication_factor: topic.spec.replication_factor,
        configs,
    };
    let Some(cluster) = find_cluster(ctx, &namespace, &topic.spec.cluster).await? else {
        let message = format!(
            "Cluster {} does not exist in namespace {namespace}",
            topic.spec.cluster
        );
        let outcome = Outcome {
            ready: false,
            degraded: false,
            reason: "ClusterNotFound",
            message,
        };
        write_status(topic, ctx, outcome, previous_status(topic)).await?;
        return Ok(Action::requeue(REQUEUE_WAITING));
    };
    let (reach, connected) = connect_to(ctx, &cluster, &namespace).await;
    let tried = reach.any.join(", ");
    let (mut admin, address) = match connected {
        Ok(connected) => connected,
        Err(source) => {
            let message = format!(
                "cannot reach cluster {} at {tried}: {source}",
                cluster.name_any()
            );
            let mut status = previous_status(topic);
            status.last_error = Some(message.clone());
            let outcome = Outcome {
                ready: false,
                degraded: false,
                reason: "ClusterUnreachable",
                message,
            };
            write_status(topic, ctx, outcome, status).await?;
            return Err(Error::Admin {
                cluster: cluster.name_any(),
                address: tried,
                source,
            });
        }
    };
    let result = apply_connected(topic, ctx, &cluster, &reach, &mut admin, &address, desired).await;
    // Every request on the connection was answered: the next reconcile may use it.
    if result.is_ok() {
        ctx.admin_pool.put(address, admin);
    }
    result
}

/// A connection to some broker of `cluster` (pooled when one is idle), and the addresses
/// it was looked for at.
pub(crate) async fn connect_to(
    ctx: &Context,
    cluster: &Cluster,
    namespace: &str,
) -> (
    crate::bootstrap::Reach,
    Result<(AdminClient, String), AdminError>,
) {
    let reach = reach_cached(ctx, cluster, namespace).await;
    let connected = connect_pooled(ctx, &reach.any).await;
    if connected.is_ok() {
        return (reach, connected);
    }
    // The cached listing may predate a pod's move: list the pods again.
    forget_reach(ctx, cluster, namespace);
    let reach = reach_cached(ctx, cluster, namespace).await;
    let connected = connect(&reach.any).await;
    (reach, connected)
}

/// The Topic's Cluster (see [`Context::find_cluster`]).
async fn find_cluster(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<Arc<Cluster>>, Error> {
    ctx.find_cluster(namespace, name)
        .await
        .map_err(|source| Error::FetchCluster {
            name: name.to_string(),
            source,
        })
}

/// How long a healthy Topic waits for its next re-check: a minute, or longer when there are
/// so many Topics that re-checking each every minute would exceed
/// [`IDLE_RECHECKS_PER_SECOND`]; spread by up to a quarter by the name, so Topics created
/// together are not re-checked together.
fn idle_recheck(topics: usize, name: &str) -> Duration {
    let spread = Duration::from_millis(u64::from(1000 / IDLE_RECHECKS_PER_SECOND))
        .saturating_mul(u32::try_from(topics).unwrap_or(u32::MAX));
    let base = REQUEUE_IDLE.max(spread);
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    base + base.mul_f64(f64::from(hash % 1000) / 4000.0)
}

/// The Topic pipeline once a broker of its cluster answers on `admin`.
async fn apply_connected(
    topic: &Topic,
    ctx: &Context,
    cluster: &Cluster,
    reach: &crate::bootstrap::Reach,
    admin: &mut AdminClient,
    address: &str,
    desired: DesiredTopic,
) -> Result<Action, Error> {
    let reference = topic.object_ref(&());
    let admin_error = |source| Error::Admin {
        cluster: cluster.name_any(),
        address: address.to_string(),
        source,
    };
    let view = admin.describe(&desired.name).await.map_err(admin_error)?;
    // A cluster without DescribeConfigs cannot show drift: the configs the operator last
    // set stand in for the cluster's, and the status says they were not verified.
    let mut unverified = None;
    let existing_configs = match &view.topic {
        Some(_) => match admin.topic_configs(&desired.name).await {
            Ok(configs) => configs,
            Err(AdminError::Unsupported { api }) => {
                unverified = Some(format!(
                    "configs not verified: the cluster does not support {api}"
                ));
                // What the operator last set stands in for what the cluster has.
                match &topic.status {
                    Some(status) if status.topic_id.is_some() => status.applied_configs.clone(),
                    _ => desired.configs.clone(),
                }
            }
            Err(source) => return Err(admin_error(source)),
        },
        None => Default::default(),
    };
    let plan = plan::plan(
        &desired,
        &view.brokers,
        view.topic.as_ref(),
        &existing_configs,
    );
    let mut status = previous_status(topic);
    let mut last_error = None;
    if let Err(source) = execute(admin, &desired, &plan).await {
        last_error = Some(source.to_string());
        ctx.event(
            &reference,
            true,
            "KafkaError",
            "Reconcile",
            source.to_string(),
        )
        .await;
        status.last_error = last_error.clone();
        if let AdminError::Unsupported { api } = &source {
            let outcome = Outcome {
                ready: false,
                degraded: true,
                reason: "UnsupportedByCluster",
                message: format!("the cluster does not support {api} yet, which this change needs"),
            };
            write_status(topic, ctx, outcome, status).await?;
            return Ok(Action::requeue(REQUEUE_IMPOSSIBLE));
        }
        if is_permanent(&source) {
            let outcome = Outcome {
                ready: false,
                degraded: true,
                reason: "RejectedByCluster",
                message: source.to_string(),
            };
            write_status(topic, ctx, outcome, status).await?;
            return Ok(Action::requeue(REQUEUE_IMPOSSIBLE));
        }
        write_status(
            topic,
            ctx,
            Outcome {
                ready: false,
                degraded: false,
                reason: "KafkaError",
                message: source.to_string(),
            },
            status,
        )
        .await?;
        return Err(admin_error(source));
    }
    status.applied_configs = desired.configs.clone();
    let has_throttles = existing_configs
        .keys()
        .any(|k| crate::admin::is_move_throttle(k));
    let moves = replication::step(
        admin,
        cluster,
        &reach.brokers,
        &desired.name,
        plan.change_replication_factor,
        has_throttles,
    )
    .await
    .map_err(admin_error)?;
    let current_rf = view.topic.as_ref().map_or(0, replication_factor);
    let rate = u64::try_from(cluster.spec.move_throttle_bytes_per_second).unwrap_or(1);
    let moving = moves.describe(&desired.name, current_rf, desired.replication_factor, rate);
    if let (
        replication::Progress::Started {
            replicas, bytes, ..
        },
        Some(note),
    ) = (&moves, &moving)
    {
        ctx.metrics
            .moves_started("replication_factor", *replicas, *bytes);
        ctx.event(
            &reference,
            false,
            "ReplicationFactorChanging",
            "Reconcile",
            note.clone(),
        )
        .await;
        status.last_action = Some(note.clone());
    }
    if plan.changes_anything() {
        let what = plan.describe(&desired);
        let drift = view.topic.is_some()
            && topic.status.as_ref().and_then(|s| s.observed_generation)
                == topic.metadata.generation;
        let (reason, note) = if drift {
            (
                "DriftCorrected",
                format!(
                    "Topic {} was changed outside the operator; put back: {what}",
                    desired.name
                ),
            )
        } else {
            ("Updated", format!("Topic {}: {what}", desired.name))
        };
        ctx.event(&reference, false, reason, "Reconcile", note.clone())
            .await;
        status.last_action = Some(note);
    }
    for impossible in &plan.impossible {
        ctx.event(
            &reference,
            true,
            impossible.reason,
            "Validate",
            impossible.message.clone(),
        )
        .await;
    }
    // Only what this reconcile changed needs a second look.
    let view = if plan.changes_anything() || !matches!(moves, replication::Progress::Settled) {
        admin.describe(&desired.name).await.map_err(admin_error)?
    } else {
        view
    };
    if let Some(described) = &view.topic {
        status.topic_id = Some(described.topic_id.clone());
        status.partitions = Some(i32::try_from(described.partitions.len()).unwrap_or(i32::MAX));
        status.replication_factor = Some(replication_factor(described));
        status.assignment = Some(assignment_summary(described));
    }
    status.last_error = last_error;
    ctx.succeeded(&controller::key(topic));
    let (outcome, requeue) = match (plan.impossible.first(), moving) {
        (_, Some(message)) => (
            Outcome {
                ready: false,
                degraded: false,
                reason: "ReplicationFactorChanging",
                message,
            },
            REQUEUE_MOVING,
        ),
        (impossible, None) => match impossible {
            Some(impossible) => (
                Outcome {
                    ready: false,
                    degraded: true,
                    reason: impossible.reason,
                    message: impossible.message.clone(),
                },
                if impossible.waits_for_brokers() {
                    REQUEUE_WAITING
                } else {
                    REQUEUE_IMPOSSIBLE
                },
            ),
            None if view.topic.is_none() => (
                Outcome {
                    ready: false,
                    degraded: false,
                    reason: "Creating",
                    message: format!("waiting for topic {} to appear in metadata", desired.name),
                },
                REQUEUE_WAITING,
            ),
            None => (
                Outcome {
                    ready: true,
                    degraded: false,
                    reason: "Ready",
                    message: match &unverified {
                        Some(note) => format!("topic {} matches the spec ({note})", desired.name),
                        None => format!("topic {} matches the spec", desired.name),
                    },
                },
                idle_recheck(ctx.topic_count(), &desired.name),
            ),
        },
    };
    write_status(topic, ctx, outcome, status).await?;
    Ok(Action::requeue(requeue))
}

/// Errors that repeat whatever the operator does (the spec must change).
fn is_permanent(error: &AdminError) -> bool {
    matches!(
        error.kafka_code(),
        Some(
            crate::admin::INVALID_PARTITIONS
                | crate::admin::INVALID_REPLICATION_FACTOR
                | crate::admin::INVALID_CONFIG
                | crate::admin::INVALID_TOPIC
                | crate::admin::INVALID_REPLICA_ASSIGNMENT
                | crate::admin::INVALID_REQUEST
                | crate::admin::POLICY_VIOLATION
        )
    )
}

async fn execute(
    admin: &mut AdminClient,
    desired: &DesiredTopic,
    plan: &plan::Plan,
) -> Result<(), AdminError> {
    if let Some(assignment) = &plan.create {
        let replication_factor = i16::try_from(desired.replication_factor).unwrap_or(i16::MAX);
        match admin
            .create_topic(
                &desired.name,
                desired.partitions,
                replication_factor,
                assignment.as_deref(),
                &desired.configs,
            )
            .await
        {
            Err(error) if error.kafka_code() == Some(crate::admin::TOPIC_ALREADY_EXISTS) => {}
            other => other?,
        }
        return Ok(());
    }
    if let Some(count) = plan.grow_partitions {
        admin.create_partitions(&desired.name, count).await?;
    }
    if !plan.set_configs.is_empty() || !plan.delete_configs.is_empty() {
        admin
            .alter_topic_configs(&desired.name, &plan.set_configs, &plan.delete_configs)
            .await?;
    }
    Ok(())
}

/// Deletion: delete the Kafka topic, unless its Cluster is gone or going (then there is
/// nothing to delete it from).
async fn cleanup(topic: &Topic, ctx: &Context) -> Result<Action, Error> {
    let namespace = topic.namespace().ok_or(Error::NoNamespace)?;
    let reference = topic.object_ref(&());
    let cluster = find_cluster(ctx, &namespace, &topic.spec.cluster).await?;
    let Some(cluster) = cluster.filter(|c| c.metadata.deletion_timestamp.is_none()) else {
        tracing::info!(topic = %topic.name_any(), "Cluster gone: releasing the Topic without deleting");
        return Ok(Action::await_change());
    };
    let (reach, connected) = connect_to(ctx, &cluster, &namespace).await;
    let (mut admin, address) = connected.map_err(|source| Error::Admin {
        cluster: cluster.name_any(),
        address: reach.any.join(", "),
        source,
    })?;
    let admin_error = |source| Error::Admin {
        cluster: cluster.name_any(),
        address: address.clone(),
        source,
    };
    let name = topic.kafka_name();
    match admin.delete_topic(&name).await {
        Ok(()) => {}
        // Keeping the finalizer would block the deletion forever: release it and say so.
        Err(AdminError::Unsupported { api }) => {
            let note = format!(
                "Topic {name} was not deleted from cluster {}: it does not support {api}",
                cluster.name_any()
            );
            ctx.event(&reference, true, "TopicNotDeleted", "Delete", note)
                .await;
            return Ok(Action::await_change());
        }
        Err(source) => return Err(admin_error(source)),
    }
    ctx.admin_pool.put(address, admin);
    ctx.event(
        &reference,
        false,
        "Deleted",
        "Delete",
        format!("Deleted topic {name} from cluster {}", cluster.name_any()),
    )
    .await;
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests;
