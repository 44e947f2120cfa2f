//! The controller voters (KIP-853) of a settled Cluster: one step per reconcile towards
//! `controllerVoters`, decided by [`super::quorum`] from what the active controller reports.

use k8s_openapi::api::core::v1::ObjectReference;

use super::names::Names;
use super::quorum::{self, QuorumStep};
use crate::context::Context;
use crate::crd::{Cluster, QuorumStatus};

/// What a step of the voters did, and what it leaves to the act stage.
#[derive(Debug)]
pub struct VoterChange {
    pub status: QuorumStatus,
    /// A broker whose restart completes the step (its controller role changed): restarted
    /// by the act stage like a roll's.
    pub restart: Option<String>,
}

/// One step towards `controllerVoters` voters (see [`super::quorum`]): the quorum's status,
/// and the broker pod to restart when the step is a restart the roll gate lets through.
pub async fn change(
    ctx: &Context,
    cluster: &Cluster,
    names: &Names,
    reference: &ObjectReference,
) -> VoterChange {
    let namespace = names.namespace.as_str();
    let desired = cluster.spec.controller_voters;
    let mut status = cluster
        .status
        .as_ref()
        .and_then(|s| s.quorum.clone())
        .unwrap_or_else(|| QuorumStatus {
            initial_voters: desired,
            ..QuorumStatus::default()
        });
    let reach = crate::bootstrap::reach(ctx, cluster, namespace).await;
    let brokers = super::scale::ordinals(cluster.spec.replicas);
    let wanted = quorum::wanted(desired);
    let view = match quorum::observe(&reach.any, &reach.brokers, &brokers, &wanted).await {
        Ok(view) => view,
        Err(error) => {
            status.message = (status.voters.len() != usize::try_from(desired).unwrap_or(0))
                .then(|| format!("cannot read the controller quorum: {error}"));
            return VoterChange {
                status,
                restart: None,
            };
        }
    };
    let step = quorum::decide(&view, &wanted, &brokers);
    status.voters = view.voters.iter().copied().collect();
    status.leader = view.leader;
    status.message = quorum::describe(&step, &view, wanted.len());
    let mut restart = None;
    let voter_event = |reason: &'static str, message: String| async move {
        ctx.event(reference, false, reason, "ChangeVoters", message)
            .await;
    };
    match step {
        QuorumStep::Done => {}
        QuorumStep::Add(broker) | QuorumStep::Remove(broker) => {
            let adding = matches!(step, QuorumStep::Add(_));
            let result = match crate::bootstrap::connect(&reach.any).await {
                Ok((mut admin, _)) if adding => {
                    admin
                        .add_voter(
                            broker,
                            &names.pod_dns(broker),
                            u16::try_from(cluster.spec.listeners.controller_port)
                                .unwrap_or_default(),
                        )
                        .await
                }
                Ok((mut admin, _)) => admin.remove_voter(broker).await,
                Err(error) => Err(error),
            };
            match result {
                Ok(()) => {
                    let (reason, verb) = if adding {
                        ("VoterAdded", "is a controller voter now")
                    } else {
                        ("VoterRemoved", "is no longer a controller voter")
                    };
                    tracing::info!(cluster = %names.cluster, broker, adding, "Changed the controller voters");
                    voter_event(
                        reason,
                        format!("Broker {broker} {verb} ({desired} voters asked)"),
                    )
                    .await;
                }
                Err(error) => {
                    tracing::warn!(cluster = %names.cluster, broker, adding, %error, "Cannot change the controller voters yet");
                    status.message = Some(format!(
                        "{} broker {broker} {} the controller voters waits: {error}",
                        if adding { "adding" } else { "removing" },
                        if adding { "to" } else { "from" }
                    ));
                }
            }
        }
        QuorumStep::Restart(broker) => {
            let (gate, _) = super::roll::check(&reach.any, &brokers).await;
            match gate.reason() {
                None => restart = Some(names.pod(broker)),
                Some(reason) => {
                    status.message = status
                        .message
                        .map(|m| format!("{m}; the restart waits: {reason}"));
                }
            }
        }
    }
    VoterChange { status, restart }
}
