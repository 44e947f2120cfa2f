//! The User reconciler: a `User` becomes a Secret with its credentials and, in its Cluster,
//! a SCRAM credential, ACLs and client quotas.
//!
//! ```text
//!   fetch ─▶ check the ACL rules (pure, plan.rs) ─▶ find the Cluster ─▶ check it can use the User
//!         ─▶ credentials: the given or generated password / a certificate of the clients CA
//!         ─▶ the User's Secret (owned by the User) ─▶ AlterUserScramCredentials
//!         ─▶ DescribeAcls ─▶ CreateAcls / DeleteAcls ─▶ DescribeClientQuotas ─▶ AlterClientQuotas
//!         ─▶ each broker shows all three (propagation.rs; else Reconciling/Propagating)
//!         ─▶ status (principal, Secret) + Events
//!   deletion (finalizer) ─▶ the credential, the ACLs and the quotas removed from the cluster
//! ```
//!
//! Everything that can be wrong with the spec (an unknown operation, a password Secret that
//! does not exist, a Cluster without the listener the User needs) is found before anything is
//! written, so a refused User changes nothing. A periodic re-check puts back what was changed
//! behind the operator's back (a deleted credential, an ACL removed or added by hand).

pub mod plan;
mod propagation;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer;
use kube::{Resource, ResourceExt};
use ring::rand::{SecureRandom, SystemRandom};

use crate::admin::users::{SCRAM_SHA_256, SCRAM_SHA_512};
use crate::admin::{AdminClient, AdminError};
use crate::cluster::certificate_secrets::{self, CA_CERT, CA_KEY, CA_PREVIOUS};
use crate::cluster::certificates::{self, CLIENTS_ORGANIZATION, KeyedCertificate, Usage};
use crate::cluster::names::{FIELD_MANAGER, Names};
use crate::context::Context;
use crate::controller::{self, Reconciled};
use crate::crd::{
    Cluster, USER_FINALIZER, User, UserAuthenticationType, UserStatus, condition,
    condition_is_true, merge_conditions, types,
};

/// Controller name in metrics and logs.
pub const CONTROLLER: &str = "user";
/// Re-check of a Ready User (puts back drift, picks up a changed password Secret).
const REQUEUE_IDLE: Duration = Duration::from_secs(60);
/// Re-check while waiting for the Cluster or a Secret.
const REQUEUE_WAITING: Duration = Duration::from_secs(15);
/// Re-check while a broker has not applied what was written yet (metadata log lag).
const REQUEUE_PROPAGATING: Duration = Duration::from_millis(500);
/// The annotation naming the clients CA a `tls` User's certificate was issued under.
const ISSUED_BY: &str = "oxbow.dev/issued-by";

/// A failed step of the User pipeline.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the User has no namespace")]
    NoNamespace,
    #[error("reading {what} failed: {source}")]
    Fetch { what: String, source: kube::Error },
    #[error("writing {what} failed: {source}")]
    Write { what: String, source: kube::Error },
    #[error("cluster {cluster}: {source}")]
    Admin { cluster: String, source: AdminError },
    #[error("issuing the certificate failed: {0}")]
    Certificate(String),
    #[error("finalizer step failed: {0}")]
    Finalizer(#[source] Box<finalizer::Error<Error>>),
}

impl Error {
    /// Bounded label for the errors metric.
    pub fn category(&self) -> &'static str {
        match self {
            Error::NoNamespace => "invalid",
            Error::Fetch { .. } => "fetch",
            Error::Write { .. } => "status",
            Error::Admin {
                source: AdminError::Kafka { .. },
                ..
            } => "kafka",
            Error::Admin { .. } => "connection",
            Error::Certificate(_) => "certificate",
            Error::Finalizer(inner) => match inner.as_ref() {
                finalizer::Error::ApplyFailed(e) | finalizer::Error::CleanupFailed(e) => {
                    e.category()
                }
                _ => "finalizer",
            },
        }
    }
}

impl Reconciled for User {
    type Error = Error;
    const CONTROLLER: &'static str = CONTROLLER;
    const FINALIZER: &'static str = USER_FINALIZER;

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
        tracing::warn!(user = %self.name_any(), %error, "User reconcile failed");
    }
}

/// Ready, or why not: `degraded` when the spec or the Cluster must change.
struct Outcome {
    ready: bool,
    degraded: bool,
    reason: &'static str,
    message: String,
}

impl Outcome {
    fn refused(reason: &'static str, message: String) -> Self {
        Outcome {
            ready: false,
            degraded: true,
            reason,
            message,
        }
    }
}

async fn write_status(
    user: &User,
    ctx: &Context,
    outcome: Outcome,
    mut status: UserStatus,
) -> Result<(), Error> {
    let generation = user.metadata.generation;
    let existing = user
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let message = outcome.message;
    status.conditions = merge_conditions(
        &existing,
        vec![
            condition(
                types::READY,
                outcome.ready,
                outcome.reason,
                message.clone(),
                generation,
            ),
            condition(
                types::RECONCILING,
                !outcome.ready && !outcome.degraded,
                outcome.reason,
                if outcome.ready || outcome.degraded {
                    String::new()
                } else {
                    message.clone()
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
                    message
                } else {
                    String::new()
                },
                generation,
            ),
        ],
    );
    status.observed_generation = generation;
    status.username = Some(user.username());
    status.principal = Some(format!("User:{}", user.username()));
    if user.status.as_ref() == Some(&status) {
        return Ok(());
    }
    let name = user.name_any();
    let api: Api<User> = Api::namespaced(ctx.client.clone(), &user.namespace().unwrap_or_default());
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "status": status })),
    )
    .await
    .map_err(|source| Error::Write {
        what: format!("the status of User {name}"),
        source,
    })?;
    Ok(())
}

/// The User's credentials, ready for its Secret and the cluster.
struct Credentials {
    /// The Secret's data.
    data: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    /// A SCRAM user's password and where it came from (`secret/key`), without the version.
    password: Option<(String, String)>,
}

async fn apply(user: &User, ctx: &Context) -> Result<Action, Error> {
    let namespace = user.namespace().ok_or(Error::NoNamespace)?;
    let reference = user.object_ref(&());
    let previous = user.status.clone().unwrap_or_default();
    let refuse = |reason: &'static str, message: String| {
        let (reference, previous) = (reference.clone(), previous.clone());
        async move {
            ctx.event(&reference, true, reason, "Validate", message.clone())
                .await;
            write_status(user, ctx, Outcome::refused(reason, message), previous).await
        }
    };
    let rules = user
        .spec
        .authorization
        .as_ref()
        .map(|a| a.acls.as_slice())
        .unwrap_or_default();
    let desired_acls = match plan::acls(rules) {
        Ok(acls) => acls,
        Err(message) => {
            refuse("InvalidAcl", message).await?;
            return Ok(Action::await_change());
        }
    };
    let Some(cluster) = find_cluster(ctx, &namespace, &user.spec.cluster).await? else {
        let message = format!(
            "Cluster {} does not exist in namespace {namespace}",
            user.spec.cluster
        );
        let outcome = Outcome {
            ready: false,
            degraded: false,
            reason: "ClusterNotFound",
            message,
        };
        write_status(user, ctx, outcome, user.status.clone().unwrap_or_default()).await?;
        return Ok(Action::requeue(REQUEUE_WAITING));
    };
    if let Err(message) = plan::cluster_requirements(&user.spec, &cluster.spec) {
        refuse("ClusterNotSecured", message).await?;
        return Ok(Action::requeue(REQUEUE_IDLE));
    }
    let names = Names::new(&cluster.name_any(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &namespace);
    let secret_name = user.name_any();
    let existing = get_secret(&secrets, &secret_name).await?;
    let uid = user.metadata.uid.clone().unwrap_or_default();
    if let Some(existing) = &existing
        && !existing
            .owner_references()
            .iter()
            .any(|owner| owner.uid == uid)
    {
        refuse(
            "SecretConflict",
            format!("Secret {secret_name} exists and does not belong to this User: the User's credentials go into a Secret of its name"),
        )
        .await?;
        return Ok(Action::requeue(REQUEUE_IDLE));
    }
    let existing_data = existing
        .as_ref()
        .map(certificate_secrets::text_data)
        .unwrap_or_default();
    let credentials = match credentials(
        user,
        ctx,
        &names,
        &secrets,
        existing.as_ref(),
        &existing_data,
    )
    .await?
    {
        Ok(credentials) => credentials,
        Err((reason, message, waiting)) => {
            if waiting {
                let outcome = Outcome {
                    ready: false,
                    degraded: false,
                    reason,
                    message,
                };
                write_status(user, ctx, outcome, user.status.clone().unwrap_or_default()).await?;
            } else {
                refuse(reason, message).await?;
            }
            return Ok(Action::requeue(REQUEUE_WAITING));
        }
    };

    // The spec holds together: write the Secret, then the cluster's side.
    let written = write_secret(user, &secrets, &secret_name, &credentials).await?;
    let password_source = credentials.password.as_ref().map(|(_, source)| {
        // A generated password lives in the User's own Secret: its version is the one just
        // written; a given one's is read with it.
        if source.starts_with(&format!("{secret_name}/")) {
            format!(
                "{source}@{}",
                written.resource_version().unwrap_or_default()
            )
        } else {
            source.clone()
        }
    });
    // A Cluster still starting (or down) is waited for at a steady pace, not with the
    // growing back-off of an error: its Users get Ready soon after it does.
    let (brokers, mut admin) = match connect(ctx, &cluster, &namespace).await {
        Ok(connected) => connected,
        Err(error) => {
            let outcome = Outcome {
                ready: false,
                degraded: false,
                reason: "ClusterUnreachable",
                message: error.to_string(),
            };
            write_status(user, ctx, outcome, user.status.clone().unwrap_or_default()).await?;
            return Ok(Action::requeue(REQUEUE_WAITING));
        }
    };
    let admin_error = |source| Error::Admin {
        cluster: cluster.name_any(),
        source,
    };
    let username = user.username();
    let principal = format!("User:{username}");
    let mut changed = Vec::new();

    let mechanisms = admin
        .scram_mechanisms(&username)
        .await
        .map_err(admin_error)?;
    let wanted = user
        .spec
        .authentication
        .as_ref()
        .and_then(|a| plan::scram_mechanism(a.type_));
    let others: Vec<i8> = [SCRAM_SHA_256, SCRAM_SHA_512]
        .into_iter()
        .filter(|m| Some(*m) != wanted && mechanisms.contains(m))
        .collect();
    match (wanted, &credentials.password) {
        (Some(mechanism), Some((password, _)))
            if !mechanisms.contains(&mechanism) || previous.password_source != password_source =>
        {
            admin
                .set_scram(&username, mechanism, password, &others)
                .await
                .map_err(admin_error)?;
            changed.push("SCRAM credential set".to_string());
        }
        _ if !others.is_empty() => {
            admin
                .delete_scram(&username, &others)
                .await
                .map_err(admin_error)?;
            changed.push("SCRAM credential of another mechanism deleted".to_string());
        }
        _ => {}
    }

    let has_acls = !(desired_acls.is_empty() && cluster.spec.authorization.is_none());
    let existing_acls = if !has_acls {
        Default::default()
    } else {
        admin.acls_of(&principal).await.map_err(admin_error)?
    };
    let create: Vec<_> = desired_acls.difference(&existing_acls).cloned().collect();
    let delete: Vec<_> = existing_acls.difference(&desired_acls).cloned().collect();
    admin
        .create_acls(&principal, &create)
        .await
        .map_err(admin_error)?;
    admin
        .delete_acls(&principal, &delete)
        .await
        .map_err(admin_error)?;
    if !create.is_empty() || !delete.is_empty() {
        changed.push(format!(
            "{} ACLs created, {} deleted",
            create.len(),
            delete.len()
        ));
    }

    let quotas = admin.user_quotas(&username).await.map_err(admin_error)?;
    let (set, remove) = plan::quota_changes(user.spec.quotas.as_ref(), &quotas);
    if !set.is_empty() || !remove.is_empty() {
        admin
            .alter_user_quotas(&username, &set, &remove)
            .await
            .map_err(admin_error)?;
        changed.push(format!("quotas set {set:?}, removed {remove:?}"));
    }
    ctx.succeeded(&controller::key(user));
    let expected = propagation::Expected {
        username: &username,
        principal: &principal,
        mechanisms: match (wanted, &credentials.password) {
            (Some(mechanism), Some(_)) => [mechanism].into(),
            _ => Default::default(),
        },
        acls: has_acls.then_some(&desired_acls),
        quotas: plan::wanted_quotas(user.spec.quotas.as_ref()),
    };
    let behind = if changed.is_empty() && condition_is_true(&previous.conditions, types::READY) {
        Vec::new()
    } else {
        propagation::lagging(&brokers, &expected).await
    };
    if !changed.is_empty() {
        let drift =
            user.status.as_ref().and_then(|s| s.observed_generation) == user.metadata.generation;
        ctx.event(
            &user.object_ref(&()),
            false,
            if drift { "DriftCorrected" } else { "Updated" },
            "Reconcile",
            format!("{principal}: {}", changed.join("; ")),
        )
        .await;
    }
    let status = UserStatus {
        secret: Some(secret_name.clone()),
        password_source,
        acls: Some(i32::try_from(desired_acls.len()).unwrap_or(i32::MAX)),
        ..user.status.clone().unwrap_or_default()
    };
    if !behind.is_empty() {
        let waiting: Vec<String> = behind
            .iter()
            .map(|(id, missing)| format!("broker {id} lacks {missing}"))
            .collect();
        let outcome = Outcome {
            ready: false,
            degraded: false,
            reason: "Propagating",
            message: format!(
                "{principal}: written, not in effect on every broker yet: {}",
                waiting.join("; ")
            ),
        };
        write_status(user, ctx, outcome, status).await?;
        return Ok(Action::requeue(REQUEUE_PROPAGATING));
    }
    let outcome = Outcome {
        ready: true,
        degraded: false,
        reason: "Ready",
        message: format!(
            "{principal}: credentials in Secret {secret_name}, {} ACLs, {} quotas",
            desired_acls.len(),
            user.spec.quotas.as_ref().map_or(0, |q| [
                q.producer_byte_rate,
                q.consumer_byte_rate,
                q.request_percentage
            ]
            .iter()
            .flatten()
            .count())
        ),
    };
    write_status(user, ctx, outcome, status).await?;
    Ok(Action::requeue(REQUEUE_IDLE))
}

type Refusal = (&'static str, String, bool);

/// The User's credentials, or why they cannot be made (`true`: waiting, not refused).
async fn credentials(
    user: &User,
    ctx: &Context,
    names: &Names,
    secrets: &Api<Secret>,
    existing: Option<&Secret>,
    existing_data: &BTreeMap<String, String>,
) -> Result<Result<Credentials, Refusal>, Error> {
    let username = user.username();
    let secret_name = user.name_any();
    let cluster_ca = {
        let found = get_secret(secrets, &certificate_secrets::cluster_ca_secret(names)).await?;
        found
            .map(|s| certificate_secrets::text_data(&s))
            .and_then(|data| {
                Some(format!(
                    "{}{}",
                    ca_certificate(&data)?,
                    data.get(CA_PREVIOUS).map_or("", String::as_str)
                ))
            })
    };
    let serves_tls = cluster_serves_tls(ctx, names, &user.spec.cluster).await?;
    if serves_tls && cluster_ca.is_none() {
        return Ok(Err((
            "WaitingForCertificates",
            format!(
                "the cluster CA Secret {} does not exist yet",
                certificate_secrets::cluster_ca_secret(names)
            ),
            true,
        )));
    }
    let Some(authentication) = &user.spec.authentication else {
        return Ok(Ok(Credentials {
            data: BTreeMap::from([("username".to_string(), username)]),
            annotations: BTreeMap::new(),
            password: None,
        }));
    };
    if authentication.type_ == UserAuthenticationType::Tls {
        let Some(cluster_ca) = cluster_ca else {
            return Ok(Err((
                "WaitingForCertificates",
                format!(
                    "the cluster CA Secret {} does not exist yet",
                    certificate_secrets::cluster_ca_secret(names)
                ),
                true,
            )));
        };
        let clients_ca = get_secret(secrets, &certificate_secrets::clients_ca_secret(names))
            .await?
            .map(|s| certificate_secrets::text_data(&s))
            .unwrap_or_default();
        let (Some(ca_cert), Some(ca_key)) = (
            ca_certificate(&clients_ca),
            clients_ca.get(CA_KEY).or_else(|| clients_ca.get("tls.key")),
        ) else {
            return Ok(Err((
                "WaitingForCertificates",
                format!(
                    "the clients CA Secret {} does not exist yet",
                    certificate_secrets::clients_ca_secret(names)
                ),
                true,
            )));
        };
        let issuer = fingerprint(ca_cert);
        let cluster = find_cluster(ctx, &names.namespace, &user.spec.cluster).await?;
        let (validity, renew_before) = cluster.map_or((365, 30), |c| {
            (
                u32::try_from(c.spec.certificates.validity_days).unwrap_or(365),
                u32::try_from(c.spec.certificates.renew_before_days).unwrap_or(30),
            )
        });
        let now = SystemTime::now();
        let kept = existing_data
            .get("user.crt")
            .zip(existing_data.get("user.key"))
            .filter(|(cert, _)| {
                existing
                    .and_then(|s| s.annotations().get(ISSUED_BY))
                    .is_some_and(|by| *by == issuer)
                    && !certificates::needs_renewal(cert, &[], now, renew_before)
            });
        let (cert, key) = match kept {
            Some((cert, key)) => (cert.clone(), key.clone()),
            None => {
                let authority = KeyedCertificate {
                    certificate_pem: ca_cert.clone(),
                    key_pem: ca_key.clone(),
                };
                let issued = certificates::issue(
                    &authority,
                    &username,
                    CLIENTS_ORGANIZATION,
                    &[],
                    Usage::Client,
                    now,
                    validity,
                )
                .map_err(|e| Error::Certificate(e.to_string()))?;
                (issued.certificate_pem, issued.key_pem)
            }
        };
        return Ok(Ok(Credentials {
            data: plan::tls_secret(&username, &cert, &key, &cluster_ca),
            annotations: BTreeMap::from([(ISSUED_BY.to_string(), issuer)]),
            password: None,
        }));
    }
    let (password, source) = match &authentication.password {
        Some(given) => {
            let reference = &given.value_from.secret_key_ref;
            let Some(found) = get_secret(secrets, &reference.name).await? else {
                return Ok(Err((
                    "PasswordSecretNotFound",
                    format!("the password Secret {} does not exist", reference.name),
                    false,
                )));
            };
            let Some(password) = certificate_secrets::text_data(&found)
                .get(&reference.key)
                .filter(|p| !p.is_empty())
                .cloned()
            else {
                return Ok(Err((
                    "PasswordKeyNotFound",
                    format!(
                        "the password Secret {} has no key {} (or it is empty or not UTF-8)",
                        reference.name, reference.key
                    ),
                    false,
                )));
            };
            let version = found.resource_version().unwrap_or_default();
            (
                password,
                format!("{}/{}@{version}", reference.name, reference.key),
            )
        }
        None => {
            let password = match existing_data.get("password").filter(|p| !p.is_empty()) {
                Some(password) => password.clone(),
                None => {
                    let mut random = [0u8; 32];
                    SystemRandom::new()
                        .fill(&mut random)
                        .map_err(|_| Error::Certificate("no randomness for a password".into()))?;
                    plan::password_from(&random)
                }
            };
            (password, format!("{secret_name}/password"))
        }
    };
    Ok(Ok(Credentials {
        data: plan::scram_secret(
            &username,
            authentication.type_,
            &password,
            cluster_ca.as_deref(),
        ),
        annotations: BTreeMap::new(),
        password: Some((password, source)),
    }))
}

/// Whether a client listener of the Cluster serves TLS (then a User's Secret carries the
/// cluster CA that clients trust the brokers with).
async fn cluster_serves_tls(ctx: &Context, names: &Names, cluster: &str) -> Result<bool, Error> {
    let cluster = find_cluster(ctx, &names.namespace, cluster).await?;
    Ok(cluster.is_some_and(|c| {
        c.spec.listeners.tls || c.spec.listeners.external.as_ref().is_some_and(|e| e.tls)
    }))
}

/// The CA certificate of a CA Secret: `ca.crt`, or `tls.crt` in a user's cert-manager-made one.
fn ca_certificate(data: &BTreeMap<String, String>) -> Option<&String> {
    data.get(CA_CERT).or_else(|| data.get("tls.crt"))
}

/// A short name of a CA certificate (the first 16 hex digits of its PEM's SHA-256).
fn fingerprint(pem: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, pem.trim().as_bytes());
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

async fn get_secret(secrets: &Api<Secret>, name: &str) -> Result<Option<Secret>, Error> {
    secrets.get_opt(name).await.map_err(|source| Error::Fetch {
        what: format!("Secret {name}"),
        source,
    })
}

async fn write_secret(
    user: &User,
    secrets: &Api<Secret>,
    name: &str,
    credentials: &Credentials,
) -> Result<Secret, Error> {
    let labels = BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_string(),
            "oxbow-operator".to_string(),
        ),
        ("oxbow.dev/cluster".to_string(), user.spec.cluster.clone()),
        ("oxbow.dev/user".to_string(), user.name_any()),
    ]);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: user.namespace(),
            labels: Some(labels),
            annotations: (!credentials.annotations.is_empty())
                .then(|| credentials.annotations.clone()),
            owner_references: user.controller_owner_ref(&()).map(|o| vec![o]),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_string()),
        data: Some(
            credentials
                .data
                .iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                .collect(),
        ),
        ..Secret::default()
    };
    secrets
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&secret),
        )
        .await
        .map_err(|source| Error::Write {
            what: format!("Secret {name}"),
            source,
        })
}

/// The User's Cluster (see [`Context::find_cluster`]).
async fn find_cluster(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<Arc<Cluster>>, Error> {
    ctx.find_cluster(namespace, name)
        .await
        .map_err(|source| Error::Fetch {
            what: format!("Cluster {name}"),
            source,
        })
}

/// An admin connection to the User's Cluster, and each broker's own address.
async fn connect(
    ctx: &Context,
    cluster: &Cluster,
    namespace: &str,
) -> Result<(BTreeMap<i32, String>, AdminClient), Error> {
    let (reach, connected) = crate::topic::connect_to(ctx, cluster, namespace).await;
    let brokers = reach.brokers.clone();
    connected
        .map(|(admin, _)| (brokers, admin))
        .map_err(|source| {
            tracing::debug!(tried = %reach.any.join(", "), "no broker answered");
            Error::Admin {
                cluster: cluster.name_any(),
                source,
            }
        })
}

/// Deletion: the User's credential, ACLs and quotas leave the cluster (its Secret goes with
/// it: the User owns it). A Cluster that is gone or going has nothing to remove them from.
async fn cleanup(user: &User, ctx: &Context) -> Result<Action, Error> {
    let namespace = user.namespace().ok_or(Error::NoNamespace)?;
    let cluster = find_cluster(ctx, &namespace, &user.spec.cluster).await?;
    let Some(cluster) = cluster.filter(|c| c.metadata.deletion_timestamp.is_none()) else {
        tracing::info!(user = %user.name_any(), "Cluster gone: releasing the User");
        return Ok(Action::await_change());
    };
    let (_, mut admin) = connect(ctx, &cluster, &namespace).await?;
    let admin_error = |source| Error::Admin {
        cluster: cluster.name_any(),
        source,
    };
    let username = user.username();
    let principal = format!("User:{username}");
    let mechanisms: Vec<i8> = admin
        .scram_mechanisms(&username)
        .await
        .map_err(admin_error)?
        .into_iter()
        .collect();
    admin
        .delete_scram(&username, &mechanisms)
        .await
        .map_err(admin_error)?;
    let acls: Vec<_> = match admin.acls_of(&principal).await {
        Ok(acls) => acls.into_iter().collect(),
        // A Cluster without authorization holds no ACLs.
        Err(error) if error.kafka_code() == Some(SECURITY_DISABLED) => Vec::new(),
        Err(source) => return Err(admin_error(source)),
    };
    admin
        .delete_acls(&principal, &acls)
        .await
        .map_err(admin_error)?;
    let quotas = admin.user_quotas(&username).await.map_err(admin_error)?;
    let remove: Vec<String> = quotas.into_keys().collect();
    admin
        .alter_user_quotas(&username, &BTreeMap::new(), &remove)
        .await
        .map_err(admin_error)?;
    ctx.event(
        &user.object_ref(&()),
        false,
        "Deleted",
        "Delete",
        format!(
            "{principal} removed from cluster {}: {} SCRAM credentials, {} ACLs, {} quotas",
            cluster.name_any(),
            mechanisms.len(),
            acls.len(),
            remove.len()
        ),
    )
    .await;
    Ok(Action::await_change())
}

const SECURITY_DISABLED: i16 = oxbow_kafka_client::ResponseError::SecurityDisabled.code();
