//! Leader election with a `coordination.k8s.io/v1` Lease, so the chart can run two
//! operator replicas: one reconciles, the other waits to take over.
//!
//! The holder renews the Lease every `renew` interval; a candidate takes it when
//! `renewTime + leaseDurationSeconds` has passed. Updates carry the resourceVersion, so
//! two candidates cannot both win. A leader that cannot renew before its Lease expires
//! stops (the process exits and restarts as a candidate) rather than risk two leaders.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Client;
use kube::api::{Api, PostParams};

/// Failed Lease operation.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("reading or writing Lease {namespace}/{name} failed: {source}")]
    Lease {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("lost Lease {namespace}/{name}: not renewed within {seconds}s")]
    Lost {
        namespace: String,
        name: String,
        seconds: i32,
    },
}

/// One candidate for the Lease.
#[derive(Debug, Clone)]
pub struct LeaderElector {
    api: Api<Lease>,
    namespace: String,
    name: String,
    identity: String,
    lease_seconds: i32,
    renew: Duration,
}

impl LeaderElector {
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_seconds: 15,
            renew: Duration::from_secs(5),
        }
    }

    fn error(&self, source: kube::Error) -> LeaderError {
        LeaderError::Lease {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            source,
        }
    }

    /// Waits until this candidate holds the Lease.
    pub async fn acquire(&self) -> Result<(), LeaderError> {
        loop {
            match self.try_acquire().await {
                Ok(true) => {
                    tracing::info!(identity = %self.identity, lease = %self.name, "Became leader");
                    return Ok(());
                }
                Ok(false) => {}
                Err(error) => tracing::warn!(%error, "Leader election attempt failed"),
            }
            tokio::time::sleep(self.renew).await;
        }
    }

    /// Renews the Lease until renewing fails for longer than the lease duration.
    pub async fn hold(&self) -> LeaderError {
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.renew).await;
            match self.try_acquire().await {
                Ok(true) => last_renewal = tokio::time::Instant::now(),
                Ok(false) => {
                    return LeaderError::Lost {
                        namespace: self.namespace.clone(),
                        name: self.name.clone(),
                        seconds: self.lease_seconds,
                    };
                }
                Err(error) => tracing::warn!(%error, "Renewing the Lease failed"),
            }
            let deadline = Duration::from_secs(u64::try_from(self.lease_seconds).unwrap_or(15));
            if last_renewal.elapsed() > deadline {
                return LeaderError::Lost {
                    namespace: self.namespace.clone(),
                    name: self.name.clone(),
                    seconds: self.lease_seconds,
                };
            }
        }
    }

    /// One round: create, renew (if ours) or take over (if expired). True when we hold it.
    async fn try_acquire(&self) -> Result<bool, LeaderError> {
        let now = Timestamp::now();
        let Some(mut lease) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error(e))?
        else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    namespace: Some(self.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(self.spec(now, 0, now)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
                Err(error) => Err(self.error(error)),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let ours = holder == self.identity;
        let duration = i64::from(spec.lease_duration_seconds.unwrap_or(self.lease_seconds));
        let expired = spec
            .renew_time
            .as_ref()
            .is_none_or(|renewed| renewed.0 + SignedDuration::from_secs(duration) < now);
        if !ours && !holder.is_empty() && !expired {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        let acquired = if ours {
            spec.acquire_time.map_or(now, |t| t.0)
        } else {
            now
        };
        lease.spec = Some(self.spec(now, transitions, acquired));
        // `replace` sends the resourceVersion we read: a concurrent writer makes it fail with 409.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(false),
            Err(error) => Err(self.error(error)),
        }
    }

    fn spec(&self, now: Timestamp, transitions: i32, acquired: Timestamp) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.lease_seconds),
            acquire_time: Some(MicroTime(acquired)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        }
    }
}
