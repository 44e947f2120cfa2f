//! AddRaftVoter and RemoveRaftVoter (KIP-853): what `kafka-metadata-quorum add-controller`
//! and `remove-controller` send. Any broker takes them and hands them to the active
//! controller, as Kafka's brokers forward them.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    AddRaftVoterRequest, AddRaftVoterResponse, ApiKey, RemoveRaftVoterRequest,
    RemoveRaftVoterResponse,
};
use kafka_protocol::protocol::{StrBytes, VersionRange};
use uuid::Uuid;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::rpc::{VoterChangeError, VoterRequest};
use crate::metadata::features::KRAFT_VERSION;
use crate::security::acl::Operation;

/// Longest wait for a new voter to catch up, whatever the request asks.
const MAX_CATCH_UP: Duration = Duration::from_secs(300);
/// Beyond the catch-up, time for the membership change itself to commit.
const COMMIT_MARGIN: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct AddRaftVoterApi;

#[derive(Debug)]
pub struct RemoveRaftVoterApi;

impl Api for AddRaftVoterApi {
    fn key(&self) -> ApiKey {
        ApiKey::AddRaftVoter
    }

    /// v1 may answer before the new voter set commits (AckWhenCommitted): not yet.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 0)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AddRaftVoterRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::Alter) {
                return context.respond(
                    &AddRaftVoterResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::Alter)),
                );
            }
            let node_id = request.voter_id;
            let outcome = match check_cluster(context, request.cluster_id.as_ref()) {
                Err(refusal) => Err(refusal),
                Ok(()) => match controller_address(context, &request) {
                    None => Err((
                        errors::INVALID_REQUEST,
                        format!(
                            "the listeners of node {node_id} name no controller listener ({})",
                            controller_names(context).join(",")
                        ),
                    )),
                    Some(address) => {
                        let catch_up = Duration::from_millis(request.timeout_ms.max(0) as u64)
                            .min(MAX_CATCH_UP);
                        let change = VoterRequest::Add {
                            node_id,
                            directory_id: kafka_uuid(request.voter_directory_id),
                            address: address.clone(),
                            timeout_ms: catch_up.as_millis() as u64,
                        };
                        tracing::info!(node_id, %address, "AddRaftVoter");
                        change_voters(context, change, catch_up + COMMIT_MARGIN).await
                    }
                },
            };
            let response = match outcome {
                Ok(()) => AddRaftVoterResponse::default(),
                Err((code, message)) => {
                    tracing::info!(node_id, code, %message, "AddRaftVoter refused");
                    AddRaftVoterResponse::default()
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message)))
                }
            };
            context.respond(&response)
        })
    }
}

impl Api for RemoveRaftVoterApi {
    fn key(&self) -> ApiKey {
        ApiKey::RemoveRaftVoter
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: RemoveRaftVoterRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::Alter) {
                return context.respond(
                    &RemoveRaftVoterResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::Alter)),
                );
            }
            let node_id = request.voter_id;
            let outcome = match check_cluster(context, request.cluster_id.as_ref()) {
                Err(refusal) => Err(refusal),
                Ok(()) => {
                    let change = VoterRequest::Remove {
                        node_id,
                        directory_id: kafka_uuid(request.voter_directory_id),
                    };
                    tracing::info!(node_id, "RemoveRaftVoter");
                    change_voters(context, change, COMMIT_MARGIN).await
                }
            };
            let response = match outcome {
                Ok(()) => RemoveRaftVoterResponse::default(),
                Err((code, message)) => {
                    tracing::info!(node_id, code, %message, "RemoveRaftVoter refused");
                    RemoveRaftVoterResponse::default()
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message)))
                }
            };
            context.respond(&response)
        })
    }
}

/// A request naming another cluster is refused with INCONSISTENT_CLUSTER_ID.
fn check_cluster(
    context: &RequestContext<'_>,
    asked: Option<&StrBytes>,
) -> Result<(), (i16, String)> {
    let features = &context.broker.controller.image().features;
    if features.is_set() && features.level(KRAFT_VERSION) < 1 {
        // Kafka's refusal while the quorum's voters are static (kraft.version 0).
        return Err((
            errors::UNSUPPORTED_VERSION,
            "Cluster doesn't support changing voters because the kraft.version feature is 0".into(),
        ));
    }
    let ours = context.broker.controller.cluster_id();
    match asked {
        Some(asked) if !ours.is_empty() && !asked.is_empty() && asked.as_str() != ours => Err((
            ResponseError::InconsistentClusterId.code(),
            format!("this is cluster {ours}, not {}", asked.as_str()),
        )),
        _ => Ok(()),
    }
}

pub(super) fn controller_names(context: &RequestContext<'_>) -> Vec<String> {
    context
        .broker
        .config
        .raw
        .get("controller.listener.names")
        .map(|names| {
            names
                .split(',')
                .map(|n| n.trim().to_ascii_uppercase())
                .filter(|n| !n.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The new voter's address on the controller listener (Kafka picks the listener named like
/// the leader's controller listener).
fn controller_address(
    context: &RequestContext<'_>,
    request: &AddRaftVoterRequest,
) -> Option<String> {
    let names = controller_names(context);
    request
        .listeners
        .iter()
        .find(|l| {
            names
                .iter()
                .any(|n| n.eq_ignore_ascii_case(l.name.as_str()))
        })
        .filter(|l| !l.host.is_empty() && l.port != 0)
        .map(|l| format!("{}:{}", l.host.as_str(), l.port))
}

/// Kafka's zero Uuid means "no directory id".
fn kafka_uuid(id: Uuid) -> Option<Uuid> {
    (!id.is_nil()).then_some(id)
}

async fn change_voters(
    context: &RequestContext<'_>,
    change: VoterRequest,
    timeout: Duration,
) -> Result<(), (i16, String)> {
    match context
        .broker
        .controller
        .voter_change(change, timeout)
        .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(refusal)) => {
            let code = match &refusal {
                VoterChangeError::Duplicate(_) => ResponseError::DuplicateVoter.code(),
                VoterChangeError::NotFound(_) => ResponseError::VoterNotFound.code(),
                VoterChangeError::TimedOut(_) => errors::REQUEST_TIMED_OUT,
                VoterChangeError::Invalid(_) => errors::INVALID_REQUEST,
                VoterChangeError::Static(_) => errors::UNSUPPORTED_VERSION,
            };
            Err((code, refusal.to_string()))
        }
        Err(error) => Err((errors::controller_error(&error), error.to_string())),
    }
}
