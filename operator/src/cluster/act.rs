//! The act stage of the Cluster pipeline: the plan carried out against the API server and
//! the brokers, in an order that keeps running brokers consistent.
//!
//! ```text
//!   certificate Secrets ─▶ owned objects (SSA; ConfigMap before StatefulSet) ─▶ orphans
//!     ─▶ Created/Scaled Event ─▶ roll restart ─▶ voter step ─▶ claim expansion
//!     ─▶ feature levels finalized (UpdateFeatures)
//! ```
//!
//! The certificates go first because the StatefulSet mounts them; a user's CA Secret that
//! is missing stops the stage before anything else is written.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, ObjectReference, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::build::{Desired, service_monitor_resource};
use super::certificate_secrets::{self, CertificateSecrets};
use super::error::Error;
use super::names::{FIELD_MANAGER, Names};
use super::plan::{FeatureStep, Plan, Roll};
use super::security;
use super::storage::{self, Sizing};
use super::upgrade::{self, Finalize, Finalized};
use super::voters;
use crate::context::Context;
use crate::crd::{Cluster, QuorumStatus, types};

/// How far the act stage went.
#[derive(Debug)]
pub enum Acted {
    /// A user's CA Secret is missing or unusable (the message says which): nothing else
    /// was written.
    CertificateAuthorityMissing(String),
    /// The plan was carried out.
    Applied(Applied),
}

/// What carrying out the plan found, for the status.
#[derive(Debug)]
pub struct Applied {
    /// Why the optional ServiceMonitor could not be applied.
    pub monitor_error: Option<String>,
    /// The controller quorum after the voter step (none when the cluster was not settled).
    pub quorum: Option<QuorumStatus>,
    /// Where the claims stand against `spec.storage.size`.
    pub sizing: Option<Sizing>,
    /// What finalizing the feature levels did.
    pub features: Finalized,
}

/// Carries out `plan`.
pub async fn act(
    cluster: &Cluster,
    ctx: &Context,
    names: &Names,
    plan: &Plan,
) -> Result<Acted, Error> {
    let reference = cluster.object_ref(&());
    if security::secured(&cluster.spec)
        && let Some(message) = apply_certificates(cluster, ctx, names, &reference).await?
    {
        return Ok(Acted::CertificateAuthorityMissing(message));
    }
    let monitor_error = apply_all(&plan.desired, ctx, &names.namespace).await?;
    delete_orphans(&plan.desired, ctx, names).await?;
    if let Some((reason, action, message)) = &plan.announcement {
        ctx.event(&reference, false, reason, action, message.clone())
            .await;
    }
    match &plan.roll {
        Roll::Nothing => {}
        Roll::Restart(pod) => restart(ctx, &names.namespace, &reference, pod.clone()).await?,
        Roll::Waits(message) => tracing::info!(cluster = %names.cluster, message, "Roll waits"),
    }
    let quorum = if plan.change_voters {
        let change = voters::change(ctx, cluster, names, &reference).await;
        if let Some(pod) = change.restart {
            restart(ctx, &names.namespace, &reference, pod).await?;
        }
        Some(change.status)
    } else {
        None
    };
    let sizing = storage::reconcile(ctx, cluster, names, plan.scaling.keep).await;
    let features = finalize(ctx, cluster, &reference, &plan.features).await;
    Ok(Acted::Applied(Applied {
        monitor_error,
        quorum,
        sizing,
        features,
    }))
}

/// Finalizes the feature levels the plan asks for (UpdateFeatures through any broker; the
/// active controller decides, all or none). A refusal is no reconcile error: the status
/// shows the controller's reason, and a warning Event tells it once.
async fn finalize(
    ctx: &Context,
    cluster: &Cluster,
    reference: &ObjectReference,
    step: &FeatureStep,
) -> Finalized {
    let Finalize::Update(updates) = &step.finalize else {
        return Finalized::Nothing;
    };
    let asked = upgrade::levels(updates.iter().map(|u| (u.feature.as_str(), u.level)));
    let outcome = match crate::bootstrap::connect(&step.addresses).await {
        Ok((mut admin, _)) => admin.update_features(updates).await,
        Err(error) => Err(error),
    };
    match outcome {
        Ok(()) => {
            let name = cluster.name_any();
            tracing::info!(cluster = %name, levels = %asked, "Finalized feature levels");
            ctx.event(
                reference,
                false,
                "FeaturesFinalized",
                "Finalize",
                format!("Finalized {asked}"),
            )
            .await;
            Finalized::Updated(updates.clone())
        }
        Err(crate::admin::AdminError::Kafka { message, name, .. }) => {
            let reason = message.unwrap_or(name);
            // Told once per reason: the same refusal comes back at every periodic check.
            let told = cluster.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == types::FEATURES_FINALIZED
                        && c.reason == upgrade::reasons::REFUSED
                        && c.message.ends_with(&reason)
                })
            });
            if !told {
                ctx.event(
                    reference,
                    true,
                    upgrade::reasons::REFUSED,
                    "Finalize",
                    format!("The brokers refused to finalize {asked}: {reason}"),
                )
                .await;
            }
            Finalized::Refused(reason)
        }
        Err(error) => Finalized::Failed(error.to_string()),
    }
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

/// Deletes one broker pod so the StatefulSet recreates it on the new revision.
pub(super) async fn restart(
    ctx: &Context,
    namespace: &str,
    reference: &ObjectReference,
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
    reference: &ObjectReference,
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

/// Deletes `name`; one already gone is no error.
pub(super) async fn delete_ignoring_missing<K>(
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
