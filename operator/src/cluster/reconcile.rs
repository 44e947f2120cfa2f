//! The Cluster reconcile pipeline: fetch → build (pure) → apply → orphans → roll → status.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event as FinalizerEvent};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::build::{self, BuildError, Desired, service_monitor_resource};
use super::certificate_secrets::{self, CertificateSecrets};
use super::names::{FIELD_MANAGER, Names};
use super::roll;
use super::scale;
use super::security;
use super::status::{self, Observed};
use crate::context::Context;
use crate::crd::{Cluster, ClusterStatus, QuorumStatus};

/// Finalizer that removes the cluster-scoped rack binding when a Cluster is deleted.
pub const CLUSTER_FINALIZER: &str = "oxbow.dev/cluster";
/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "cluster";
/// Requeue interval while brokers are starting, scaling or rolling.
const REQUEUE_BUSY: Duration = Duration::from_secs(10);
/// Requeue interval of a healthy cluster (a periodic check against drift).
const REQUEUE_IDLE: Duration = Duration::from_secs(300);

/// A failed step of the Cluster pipeline.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the Cluster has no namespace")]
    NoNamespace,
    #[error("applying {kind} {name} failed: {source}")]
    Apply {
        kind: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("reading {what} failed: {source}")]
    Fetch {
        what: &'static str,
        source: kube::Error,
    },
    #[error("deleting {kind} {name} failed: {source}")]
    Delete {
        kind: &'static str,
        name: String,
        source: kube::Error,
    },
    #[error("writing the status of Cluster {name} failed: {source}")]
    Status { name: String, source: kube::Error },
    #[error("finalizer step failed: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
}

impl Error {
    /// Bounded label for the errors metric.
    pub fn category(&self) -> &'static str {
        match self {
            Error::NoNamespace => "invalid",
            Error::Apply { .. } => "apply",
            Error::Fetch { .. } => "fetch",
            Error::Delete { .. } => "delete",
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

/// Entry point for the controller runtime.
pub async fn reconcile(cluster: Arc<Cluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let namespace = cluster.namespace().ok_or(Error::NoNamespace)?;
    let api: Api<Cluster> = Api::namespaced(ctx.client.clone(), &namespace);
    let result = finalizer::finalizer(&api, CLUSTER_FINALIZER, cluster, |event| async {
        match event {
            FinalizerEvent::Apply(cluster) => apply(&cluster, &ctx).await,
            FinalizerEvent::Cleanup(cluster) => cleanup(&cluster, &ctx).await,
        }
    })
    .await
    .map_err(|e| Error::Finalizer(Box::new(e)));
    ctx.metrics.reconciled(CONTROLLER, started.elapsed());
    result
}

/// Controller error policy: count the error and back off.
pub fn error_policy(cluster: Arc<Cluster>, error: &Error, ctx: Arc<Context>) -> Action {
    tracing::warn!(cluster = %cluster.name_any(), %error, "Cluster reconcile failed");
    ctx.metrics.failed(CONTROLLER, error.category());
    ctx.backoff(&key(&cluster))
}

fn key(cluster: &Cluster) -> String {
    format!(
        "cluster/{}/{}",
        cluster.namespace().unwrap_or_default(),
        cluster.name_any()
    )
}

fn params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

async fn apply_object<K>(api: &Api<K>, kind: &'static str, object: &K) -> Result<K, Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let name = object.meta().name.clone().unwrap_or_default();
    api.patch(&name, &params(), &Patch::Apply(object))
        .await
        .map_err(|source| Error::Apply { kind, name, source })
}

async fn apply(cluster: &Cluster, ctx: &Context) -> Result<Action, Error> {
    let namespace = cluster.namespace().ok_or(Error::NoNamespace)?;
    let names = Names::new(&cluster.name_any(), &namespace);
    let reference = cluster.object_ref(&());
    let generation = cluster.metadata.generation;
    let mut desired = match build::build(cluster, &ctx.settings) {
        Ok(desired) => desired,
        Err(BuildError::InvalidConfig(message)) => {
            ctx.event(&reference, true, "InvalidSpec", "Validate", message.clone())
                .await;
            let status = status::invalid(cluster, &names, "InvalidConfig", &message);
            write_status(cluster, ctx, status).await?;
            return Ok(Action::await_change());
        }
        Err(BuildError::MissingMetadata(what)) => {
            tracing::warn!(cluster = %names.cluster, what, "Cluster lacks metadata");
            return Ok(Action::await_change());
        }
    };
    let client = ctx.client.clone();
    let stateful_sets: Api<StatefulSet> = Api::namespaced(client.clone(), &namespace);
    let previous = stateful_sets
        .get_opt(&names.base())
        .await
        .map_err(|source| Error::Fetch {
            what: "StatefulSet",
            source,
        })?;
    let previous_replicas = previous
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.replicas);
    keep_claim_size(&mut desired.stateful_set, previous.as_ref());
    // A scale-in keeps the leaving brokers until they hold no replica.
    let scaling = if previous_replicas.is_some() {
        let reach = crate::bootstrap::reach(ctx, cluster, &namespace).await;
        let leaving = leaving_pods(ctx, &names, cluster.spec.replicas).await;
        // A scale's progress lives in status.scaling, which the last reconcile may just
        // have written: the watch cache can still hold the Cluster from before it, so the
        // scale reads the status from the API server.
        let latest = latest_status(cluster, ctx).await?;
        scale::reconcile(&latest, previous_replicas, &reach, leaving, &ctx.metrics).await
    } else {
        scale::Outcome {
            keep: cluster.spec.replicas,
            status: None,
            event: None,
        }
    };
    if scaling.keep != cluster.spec.replicas {
        // The leaving brokers keep their config files and Services while they drain.
        let mut keeping = cluster.clone();
        keeping.spec.replicas = scaling.keep;
        if let Ok(kept) = build::build(&keeping, &ctx.settings) {
            desired = kept;
            keep_claim_size(&mut desired.stateful_set, previous.as_ref());
        }
    }
    if security::secured(&cluster.spec)
        && let Some(message) = apply_certificates(cluster, ctx, &names, &reference).await?
    {
        ctx.event(
            &reference,
            true,
            "CertificateAuthorityMissing",
            "Issue",
            message.clone(),
        )
        .await;
        let status = status::invalid(cluster, &names, "CertificateAuthorityMissing", &message);
        write_status(cluster, ctx, status).await?;
        return Ok(Action::requeue(REQUEUE_BUSY));
    }
    let monitor_error = apply_all(&desired, ctx, &namespace).await?;
    delete_orphans(&desired, ctx, &names).await?;
    match previous_replicas {
        None => {
            ctx.event(
                &reference,
                false,
                "Created",
                "Create",
                format!("Created {} brokers", cluster.spec.replicas),
            )
            .await;
        }
        Some(before) if before != scaling.keep => {
            ctx.event(
                &reference,
                false,
                "Scaled",
                "Scale",
                format!(
                    "Scaling the StatefulSet from {before} to {} brokers",
                    scaling.keep
                ),
            )
            .await;
        }
        Some(_) => {}
    }
    let observed = observe(ctx, &names).await?;
    let mut roll_blocked = None;
    if status::pod_to_roll(&observed, cluster.spec.replicas, None).is_some() {
        let candidates = crate::bootstrap::addresses(ctx, cluster, &namespace).await;
        let (gate, active) =
            roll::check(&candidates, &super::scale::ordinals(cluster.spec.replicas)).await;
        let active_pod = active.map(|id| names.pod(id));
        if let Some(pod) =
            status::pod_to_roll(&observed, cluster.spec.replicas, active_pod.as_deref())
        {
            match gate.reason() {
                None => restart(ctx, &namespace, &reference, pod).await?,
                Some(reason) => roll_blocked = Some(format!("restart of {pod} waits: {reason}")),
            }
        }
    }
    if let Some(message) = &roll_blocked {
        tracing::info!(cluster = %names.cluster, message, "Roll waits");
    }
    // The voters change only on a settled cluster: every broker ready, no scale, no roll.
    let settled = roll_blocked.is_none()
        && scaling.status.is_none()
        && scaling.keep == cluster.spec.replicas
        && observed.pods.len() == usize::try_from(cluster.spec.replicas).unwrap_or(0)
        && observed.pods.iter().all(status::is_pod_ready)
        && status::pod_to_roll(&observed, cluster.spec.replicas, None).is_none();
    let quorum = if settled {
        Some(change_voters(ctx, cluster, &names, &namespace, &reference).await?)
    } else {
        None
    };
    let sizing = super::storage::reconcile(ctx, cluster, &names, scaling.keep).await;
    let mut status = status::compute(
        cluster,
        &names,
        &observed,
        generation,
        monitor_error.as_deref(),
        scaling.status,
    );
    if let Some(sizing) = sizing {
        status.conditions = crate::crd::merge_conditions(
            &cluster
                .status
                .as_ref()
                .map(|s| s.conditions.clone())
                .unwrap_or_default(),
            status
                .conditions
                .drain(..)
                .chain(std::iter::once(crate::crd::condition(
                    super::storage::STORAGE_RESIZED,
                    sizing.at_size,
                    sizing.reason,
                    sizing.message,
                    generation,
                )))
                .collect(),
        );
    }
    if let Some(message) = roll_blocked {
        for condition in status
            .conditions
            .iter_mut()
            .filter(|c| c.reason == "Rolling")
        {
            condition.message.clone_from(&message);
        }
    }
    // A scale or a claim expansion in progress looks again soon even when every broker is
    // ready: the leaving pods' disappearance and the claims' growth change nothing this
    // controller watches.
    // Claims below the size (expanding, or waiting for a StorageClass that allows it,
    // which nothing here watches) are looked at again soon too.
    let resizing = status
        .conditions
        .iter()
        .any(|c| c.type_ == super::storage::STORAGE_RESIZED && c.status != "True");
    if let Some(quorum) = quorum {
        status.quorum = Some(quorum);
    }
    let changing_voters = status.quorum.as_ref().is_some_and(|q| q.message.is_some());
    let idle =
        status::is_ready(&status) && status.scaling.is_none() && !resizing && !changing_voters;
    write_status(cluster, ctx, status).await?;
    // A scale's step is told once its status is written: a reconcile that fails before
    // that repeats the step, and would otherwise tell it twice (two ScaledIn events for
    // one scale-in).
    if let Some((warning, reason, message)) = scaling.event {
        ctx.event(&reference, warning, reason, "Scale", message)
            .await;
    }
    ctx.succeeded(&key(cluster));
    Ok(Action::requeue(if idle {
        REQUEUE_IDLE
    } else {
        REQUEUE_BUSY
    }))
}

/// One step towards `controllerVoters` voters (see [`super::quorum`]); the quorum's status.
async fn change_voters(
    ctx: &Context,
    cluster: &Cluster,
    names: &Names,
    namespace: &str,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
) -> Result<QuorumStatus, Error> {
    use super::quorum::{self, QuorumStep};
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
            return Ok(status);
        }
    };
    let step = quorum::decide(&view, &wanted, &brokers);
    status.voters = view.voters.iter().copied().collect();
    status.leader = view.leader;
    status.message = quorum::describe(&step, &view, wanted.len());
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
                None => restart(ctx, namespace, reference, names.pod(broker)).await?,
                Some(reason) => {
                    status.message = status
                        .message
                        .map(|m| format!("{m}; the restart waits: {reason}"));
                }
            }
        }
    }
    Ok(status)
}

/// `cluster` with its status as the API server has it now.
async fn latest_status(cluster: &Cluster, ctx: &Context) -> Result<Cluster, Error> {
    let api: Api<Cluster> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    let fresh = api
        .get_status(&cluster.name_any())
        .await
        .map_err(|source| Error::Fetch {
            what: "Cluster status",
            source,
        })?;
    let mut latest = cluster.clone();
    latest.status = fresh.status;
    Ok(latest)
}

/// A StatefulSet's claim templates cannot change: an existing one keeps the size it was
/// created with, and a larger `spec.storage.size` expands the claims themselves
/// ([`super::storage`]).
fn keep_claim_size(desired: &mut StatefulSet, existing: Option<&StatefulSet>) {
    let size_of = |set: &StatefulSet| {
        set.spec
            .as_ref()?
            .volume_claim_templates
            .as_ref()?
            .first()?
            .spec
            .as_ref()?
            .resources
            .as_ref()?
            .requests
            .as_ref()?
            .get("storage")
            .cloned()
    };
    let Some(size) = existing.and_then(size_of) else {
        return;
    };
    if let Some(requests) = desired
        .spec
        .as_mut()
        .and_then(|s| s.volume_claim_templates.as_mut())
        .and_then(|t| t.first_mut())
        .and_then(|c| c.spec.as_mut())
        .and_then(|s| s.resources.as_mut())
        .and_then(|r| r.requests.as_mut())
    {
        requests.insert("storage".to_string(), size);
    }
}

/// Deletes one broker pod so the StatefulSet recreates it on the new revision.
async fn restart(
    ctx: &Context,
    namespace: &str,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
    pod: String,
) -> Result<(), Error> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    pods.delete(&pod, &DeleteParams::default())
        .await
        .map_err(|source| Error::Delete {
            kind: "Pod",
            name: pod.clone(),
            source,
        })?;
    ctx.event(
        reference,
        false,
        "RollingBroker",
        "Restart",
        format!("Restarted {pod} to apply a new configuration"),
    )
    .await;
    Ok(())
}

/// The certificate Secrets of a secured Cluster: read, planned (issued or renewed where
/// due) and applied before the StatefulSet that mounts them. A certificate that cannot be
/// made is a warning event; the brokers keep what they have. A user's CA Secret that is
/// missing or unusable is what it returns: nothing is issued until it is there.
async fn apply_certificates(
    cluster: &Cluster,
    ctx: &Context,
    names: &Names,
    reference: &k8s_openapi::api::core::v1::ObjectReference,
) -> Result<Option<String>, Error> {
    let Some(owner) = cluster.controller_owner_ref(&()) else {
        return Ok(None);
    };
    let user_managed = !cluster.spec.certificates.generate_certificate_authority;
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let mut existing = CertificateSecrets::default();
    for (name, _) in CertificateSecrets::default().named(names) {
        let found = secrets
            .get_opt(&name)
            .await
            .map_err(|source| Error::Fetch {
                what: "Secret",
                source,
            })?;
        let forced = found.as_ref().is_some_and(|f| {
            f.annotations()
                .contains_key(certificate_secrets::FORCE_RENEW)
        });
        if forced && name == certificate_secrets::cluster_ca_secret(names) {
            existing.force_cluster_ca = true;
        }
        if forced && name == certificate_secrets::clients_ca_secret(names) {
            existing.force_clients_ca = true;
        }
        if let (Some(found), Some(slot)) = (found, existing.slot(names, &name)) {
            *slot = certificate_secrets::text_data(&found);
        }
    }
    if user_managed {
        for (name, slot) in [
            (
                certificate_secrets::cluster_ca_secret(names),
                &mut existing.cluster_ca,
            ),
            (
                certificate_secrets::clients_ca_secret(names),
                &mut existing.clients_ca,
            ),
        ] {
            match certificate_secrets::user_authority(&name, slot) {
                Ok(normalised) => *slot = normalised,
                Err(message) => return Ok(Some(message)),
            }
        }
    }
    let (planned, issued) = match certificate_secrets::plan(
        &cluster.spec,
        names,
        &existing,
        std::time::SystemTime::now(),
    ) {
        Ok(planned) => planned,
        Err(error) => {
            ctx.event(
                reference,
                true,
                "CertificateFailed",
                "Issue",
                error.to_string(),
            )
            .await;
            return Ok(None);
        }
    };
    let user_cas = [
        certificate_secrets::cluster_ca_secret(names),
        certificate_secrets::clients_ca_secret(names),
    ];
    for (name, data) in planned.named(names) {
        // A user's CA Secret is theirs: read, never written.
        if user_managed && user_cas.contains(&name) {
            continue;
        }
        let secret = certificate_secrets::secret(names, &owner, name, data);
        apply_object(&secrets, "Secret", &secret).await?;
    }
    // The renewal asked for is done: the request goes (a merge patch, as `kubectl annotate`
    // set it under another field manager).
    for (forced, name) in [
        (
            existing.force_cluster_ca,
            certificate_secrets::cluster_ca_secret(names),
        ),
        (
            existing.force_clients_ca,
            certificate_secrets::clients_ca_secret(names),
        ),
    ] {
        if forced {
            let remove = serde_json::json!({
                "metadata": {"annotations": {certificate_secrets::FORCE_RENEW: null}}
            });
            secrets
                .patch(&name, &PatchParams::default(), &Patch::Merge(&remove))
                .await
                .map_err(|source| Error::Apply {
                    kind: "Secret",
                    name: name.clone(),
                    source,
                })?;
        }
    }
    crate::bootstrap::remember_cluster_tls(ctx, names, &planned.operator_cert);
    if !issued.authorities.is_empty() || !issued.certificates.is_empty() {
        let what: Vec<String> = issued
            .authorities
            .iter()
            .map(|a| a.to_string())
            .chain(issued.certificates.iter().cloned())
            .collect();
        ctx.event(
            reference,
            false,
            "CertificatesIssued",
            "Issue",
            format!("issued: {}", what.join(", ")),
        )
        .await;
    }
    Ok(None)
}

/// Applies every desired object, ConfigMap before the StatefulSet. Returns a message when
/// the optional ServiceMonitor could not be applied (the Prometheus Operator's CRD missing).
async fn apply_all(
    desired: &Desired,
    ctx: &Context,
    namespace: &str,
) -> Result<Option<String>, Error> {
    let client = ctx.client.clone();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    apply_object(&accounts, "ServiceAccount", &desired.service_account).await?;
    if let Some(binding) = &desired.rack_binding {
        let bindings: Api<ClusterRoleBinding> = Api::all(client.clone());
        apply_object(&bindings, "ClusterRoleBinding", binding).await?;
    }
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    apply_object(&config_maps, "ConfigMap", &desired.config_map).await?;
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    apply_object(&services, "Service", &desired.headless_service).await?;
    apply_object(&services, "Service", &desired.bootstrap_service).await?;
    for service in &desired.external_services {
        apply_object(&services, "Service", service).await?;
    }
    let stateful_sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    apply_object(&stateful_sets, "StatefulSet", &desired.stateful_set).await?;
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), namespace);
    apply_object(
        &budgets,
        "PodDisruptionBudget",
        &desired.pod_disruption_budget,
    )
    .await?;
    if let Some(policy) = &desired.network_policy {
        let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), namespace);
        apply_object(&policies, "NetworkPolicy", policy).await?;
    }
    if let Some(monitor) = &desired.service_monitor {
        let monitors: Api<DynamicObject> =
            Api::namespaced_with(client, namespace, &service_monitor_resource());
        if let Err(Error::Apply { source, .. }) =
            apply_object(&monitors, "ServiceMonitor", monitor).await
        {
            return Ok(Some(format!(
                "ServiceMonitor could not be applied (is the Prometheus Operator installed?): {source}"
            )));
        }
    }
    Ok(None)
}

/// Deletes what this Cluster created earlier and no longer wants: external Services of
/// removed brokers or a disabled external listener, a disabled ServiceMonitor or
/// NetworkPolicy, the rack binding.
async fn delete_orphans(desired: &Desired, ctx: &Context, names: &Names) -> Result<(), Error> {
    let client = ctx.client.clone();
    let services: Api<Service> = Api::namespaced(client.clone(), &names.namespace);
    let wanted: BTreeSet<String> = [&desired.headless_service, &desired.bootstrap_service]
        .into_iter()
        .chain(desired.external_services.iter())
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    let existing = services
        .list(&ListParams::default().labels(&names.owned_selector()))
        .await
        .map_err(|source| Error::Fetch {
            what: "Services",
            source,
        })?;
    for service in existing {
        let name = service.name_any();
        if !wanted.contains(&name) {
            delete_ignoring_missing(&services, "Service", &name).await?;
            tracing::info!(service = %name, "Deleted orphaned Service");
        }
    }
    if desired.service_monitor.is_none() {
        let monitors: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            &names.namespace,
            &service_monitor_resource(),
        );
        // Without the Prometheus Operator's CRD there is nothing to delete.
        let _ = monitors
            .delete(&names.base(), &DeleteParams::default())
            .await;
    }
    if desired.network_policy.is_none() {
        let policies: Api<NetworkPolicy> = Api::namespaced(client.clone(), &names.namespace);
        delete_ignoring_missing(&policies, "NetworkPolicy", &names.base()).await?;
    }
    if desired.rack_binding.is_none() {
        let bindings: Api<ClusterRoleBinding> = Api::all(client);
        delete_ignoring_missing(&bindings, "ClusterRoleBinding", &names.rack_binding()).await?;
    }
    Ok(())
}

async fn delete_ignoring_missing<K>(
    api: &Api<K>,
    kind: &'static str,
    name: &str,
) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(source) => Err(Error::Delete {
            kind,
            name: name.to_string(),
            source,
        }),
    }
}

/// How many broker pods with an ordinal of `keep` or more still exist.
async fn leaving_pods(ctx: &Context, names: &Names, keep: i32) -> Result<usize, String> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let list = pods
        .list(&ListParams::default().labels(&names.selector_string()))
        .await
        .map_err(|e| format!("cannot list the broker pods: {e}"))?;
    Ok(list
        .items
        .iter()
        .filter_map(|p| p.name_any().rsplit_once('-').map(|(_, n)| n.to_string()))
        .filter_map(|ordinal| ordinal.parse::<i32>().ok())
        .filter(|ordinal| *ordinal >= keep)
        .count())
}

/// Reads the StatefulSet, its pods and their nodes' racks.
async fn observe(ctx: &Context, names: &Names) -> Result<Observed, Error> {
    let client = ctx.client.clone();
    let stateful_sets: Api<StatefulSet> = Api::namespaced(client.clone(), &names.namespace);
    let stateful_set = stateful_sets
        .get_opt(&names.base())
        .await
        .map_err(|source| Error::Fetch {
            what: "StatefulSet",
            source,
        })?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &names.namespace);
    let pods = pods
        .list(&ListParams::default().labels(&names.selector_string()))
        .await
        .map_err(|source| Error::Fetch {
            what: "Pods",
            source,
        })?
        .items;
    let nodes: Api<Node> = Api::all(client);
    let mut node_labels = std::collections::BTreeMap::new();
    for node_name in pods
        .iter()
        .filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone()))
    {
        if node_labels.contains_key(&node_name) {
            continue;
        }
        // Racks in status are informative: a node that cannot be read leaves the rack empty.
        if let Ok(Some(node)) = nodes.get_opt(&node_name).await {
            node_labels.insert(node_name, node.metadata.labels.unwrap_or_default());
        }
    }
    Ok(Observed {
        stateful_set,
        pods,
        node_labels,
    })
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
    let patch = serde_json::json!({ "status": status });
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
