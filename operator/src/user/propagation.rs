//! Whether a User's credential, ACLs and quotas are in effect on every broker.
//!
//! The operator's writes are committed to the metadata log by the controller, and each
//! broker applies that log on its own: a broker a moment behind still refuses the User
//! (an unknown SCRAM user, TOPIC_AUTHORIZATION_FAILED). A client that started right after
//! the User turned Ready would fail its first request, and librdkafka gives such a
//! message up at once. So Ready waits until each broker answers from its own metadata
//! (DescribeUserScramCredentials, DescribeAcls, DescribeClientQuotas are served from the
//! broker's image) with what was written.
//!
//! A broker that does not answer is not waited for: it catches up on the metadata log
//! before it serves clients again, and a User must not stop being Ready because a broker
//! is restarting.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::admin::AdminClient;
use crate::admin::users::Acl;

/// How long one broker gets to answer the check.
const BROKER_TIMEOUT: Duration = Duration::from_secs(5);

/// What every broker must show for the User.
#[derive(Debug)]
pub struct Expected<'a> {
    pub username: &'a str,
    pub principal: &'a str,
    /// The SCRAM mechanisms the User has (none for a certificate User).
    pub mechanisms: BTreeSet<i8>,
    /// `None` when the Cluster has no authorizer (nothing to compare).
    pub acls: Option<&'a BTreeSet<Acl>>,
    pub quotas: BTreeMap<String, f64>,
}

/// The brokers (by node id) that answered with something else than `expected`, each with
/// what it lacks.
pub async fn lagging(
    brokers: &BTreeMap<i32, String>,
    expected: &Expected<'_>,
) -> Vec<(i32, String)> {
    let mut behind = Vec::new();
    for (&id, address) in brokers {
        match tokio::time::timeout(BROKER_TIMEOUT, differences(address, expected)).await {
            Ok(Ok(missing)) if missing.is_empty() => {}
            Ok(Ok(missing)) => behind.push((id, missing.join(", "))),
            Ok(Err(error)) => {
                tracing::debug!(broker = id, %error, "A broker did not answer the User check; not waiting for it");
            }
            Err(_) => {
                tracing::debug!(
                    broker = id,
                    "A broker did not answer the User check in time; not waiting for it"
                );
            }
        }
    }
    behind
}

/// What one broker shows differently from `expected`.
async fn differences(
    address: &str,
    expected: &Expected<'_>,
) -> Result<Vec<String>, crate::admin::AdminError> {
    let mut admin = AdminClient::connect_within(address, BROKER_TIMEOUT).await?;
    let mut missing = Vec::new();
    let mechanisms = admin.scram_mechanisms(expected.username).await?;
    if mechanisms != expected.mechanisms {
        missing.push("the SCRAM credential".to_string());
    }
    if let Some(acls) = expected.acls {
        let seen = admin.acls_of(expected.principal).await?;
        if &seen != acls {
            missing.push(format!(
                "ACLs ({} of {})",
                seen.intersection(acls).count(),
                acls.len()
            ));
        }
    }
    let quotas = super::plan::managed_quotas(admin.user_quotas(expected.username).await?);
    if quotas != expected.quotas {
        missing.push("the quotas".to_string());
    }
    Ok(missing)
}
