//! The Cluster reconcile pipeline, stage by stage:
//!
//! ```text
//!   validate (pure) ─▶ observe ─▶ plan (pure, once) ─▶ act ─▶ status
//!   build.rs           observe.rs  plan.rs              act.rs  status.rs
//! ```
//!
//! An invalid spec stops at validation with a Degraded status, before anything is read
//! from the brokers or changed; everything after that is decided in one [`Plan`] from the
//! spec and one [`Observation`](super::observe::Observation).

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer;
use kube::{Resource, ResourceExt};

use super::act::{self, Acted, delete_ignoring_missing};
use super::build::{self, BuildError};
pub use super::error::Error;
use super::names::Names;
use super::observe;
use super::plan::{self, Plan, Roll};
use super::status;
use super::upgrade;
use crate::context::Context;
use crate::controller::{self, Reconciled};
use crate::crd::{Cluster, ClusterStatus};

/// Finalizer that removes the cluster-scoped rack binding when a Cluster is deleted.
pub const CLUSTER_FINALIZER: &str = "oxbow.dev/cluster";
/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "cluster";
/// Requeue interval while brokers are starting, scaling or rolling.
const REQUEUE_BUSY: Duration = Duration::from_secs(10);
/// Requeue interval of a healthy cluster (a periodic check against drift).
const REQUEUE_IDLE: Duration = Duration::from_secs(300);

impl Reconciled for Cluster {
    type Error = Error;
    const CONTROLLER: &'static str = CONTROLLER;
    const FINALIZER: &'static str = CLUSTER_FINALIZER;

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
        tracing::warn!(cluster = %self.name_any(), %error, "Cluster reconcile failed");
    }
}

async fn apply(cluster: &Cluster, ctx: &Context) -> Result<Action, Error> {
    let namespace = cluster.namespace().ok_or(Error::NoNamespace)?;
    let validated = match build::validate(cluster) {
        Ok(validated) => validated,
        Err(BuildError::InvalidConfig(message)) => {
            let names = Names::new(&cluster.name_any(), &namespace);
            return refuse(
                cluster,
                ctx,
                &names,
                "InvalidSpec",
                "Validate",
                "InvalidConfig",
                message,
            )
            .await
            .map(|()| Action::await_change());
        }
        Err(BuildError::Downgrade(message)) => {
            let names = Names::new(&cluster.name_any(), &namespace);
            return refuse(
                cluster,
                ctx,
                &names,
                "DowngradeRefused",
                "Upgrade",
                upgrade::reasons::DOWNGRADE,
                message,
            )
            .await
            .map(|()| Action::await_change());
        }
        Err(BuildError::MissingMetadata(what)) => {
            tracing::warn!(cluster = %cluster.name_any(), what, "Cluster lacks metadata");
            return Ok(Action::await_change());
        }
    };
    let names = &validated.names;
    let observation = observe::observe(ctx, cluster, names).await?;
    let plan = plan::plan(cluster, &validated, &ctx.settings, observation);
    match act::act(cluster, ctx, names, &plan).await? {
        Acted::CertificateAuthorityMissing(message) => {
            refuse(
                cluster,
                ctx,
                names,
                "CertificateAuthorityMissing",
                "Issue",
                "CertificateAuthorityMissing",
                message,
            )
            .await?;
            Ok(Action::requeue(REQUEUE_BUSY))
        }
        Acted::Applied(applied) => report(cluster, ctx, names, plan, applied).await,
    }
}

/// A spec (or a CA Secret of the user's) the brokers cannot be run from: a warning Event
/// and a Degraded status; the running brokers are left alone.
async fn refuse(
    cluster: &Cluster,
    ctx: &Context,
    names: &Names,
    event_reason: &str,
    action: &str,
    reason: &str,
    message: String,
) -> Result<(), Error> {
    ctx.event(
        &cluster.object_ref(&()),
        true,
        event_reason,
        action,
        message.clone(),
    )
    .await;
    let status = status::invalid(cluster, names, reason, &message);
    write_status(cluster, ctx, status).await
}

/// The status stage: the status from the plan and what acting on it found, then the
/// scale's Event and the requeue.
async fn report(
    cluster: &Cluster,
    ctx: &Context,
    names: &Names,
    plan: Plan,
    applied: act::Applied,
) -> Result<Action, Error> {
    let Plan {
        roll,
        scaling,
        brokers,
        features,
        ..
    } = plan;
    let computed = status::compute(
        cluster,
        names,
        &brokers,
        cluster.metadata.generation,
        applied.monitor_error.as_deref(),
        scaling.status,
    );
    let roll_waits = match &roll {
        Roll::Waits(message) => Some(message.as_str()),
        Roll::Nothing | Roll::Restart(_) => None,
    };
    let status = status::with_outcome(
        computed,
        cluster,
        applied.sizing,
        roll_waits,
        applied.quorum,
    );
    let report = upgrade::report(
        cluster,
        &ctx.settings,
        features.view.as_ref(),
        &features.finalize,
        &applied.features,
    );
    let status = status::with_features(status, cluster, report);
    let idle = status::is_idle(&status);
    write_status(cluster, ctx, status).await?;
    // A scale's step is told once its status is written: a reconcile that fails before
    // that repeats the step, and would otherwise tell it twice (two ScaledIn events for
    // one scale-in).
    if let Some((warning, reason, message)) = scaling.event {
        ctx.event(&cluster.object_ref(&()), warning, reason, "Scale", message)
            .await;
    }
    ctx.succeeded(&controller::key(cluster));
    Ok(Action::requeue(if idle {
        REQUEUE_IDLE
    } else {
        REQUEUE_BUSY
    }))
}

async fn write_status(
    cluster: &Cluster,
    ctx: &Context,
    status: ClusterStatus,
) -> Result<(), Error> {
    if cluster.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let name = cluster.name_any();
    let api: Api<Cluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let patch = serde_json::json!({
        "status": status::merge_patch(cluster.status.as_ref(), &status)
    });
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|source| Error::Status {
            name: name.clone(),
            source,
        })?;
    Ok(())
}

/// Deletion: owned namespaced objects go by garbage collection (owner references); the
/// cluster-scoped rack binding is deleted here. Claims stay unless `deleteClaims`.
async fn cleanup(cluster: &Cluster, ctx: &Context) -> Result<Action, Error> {
    let names = Names::new(
        &cluster.name_any(),
        &cluster.namespace().unwrap_or_default(),
    );
    let bindings: Api<ClusterRoleBinding> = Api::all(ctx.client.clone());
    delete_ignoring_missing(&bindings, "ClusterRoleBinding", &names.rack_binding()).await?;
    ctx.event(
        &cluster.object_ref(&()),
        false,
        "Deleted",
        "Delete",
        "Cluster deleted".to_string(),
    )
    .await;
    Ok(Action::await_change())
}
