//! DescribeClientQuotas and AlterClientQuotas (`kafka-configs --entity-type users|clients`):
//! quotas are checked here and kept in the metadata log by the controller; enforcement is
//! [`crate::quota`]'s. Describing needs DESCRIBE_CONFIGS on the cluster, altering
//! ALTER_CONFIGS.

use bytes::Bytes;
use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlteredEntity, EntryData as AlteredEntry,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::QuotaChange;
use crate::quota::{CLIENT_ID, Match, QuotaEntity, QuotaKey, USER, filter_matches};
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct DescribeClientQuotasApi;

impl Api for DescribeClientQuotasApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeClientQuotas
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeClientQuotasRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::DescribeConfigs) {
                return context.respond(
                    &DescribeClientQuotasResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::DescribeConfigs)),
                );
            }
            let filter = match components(&request) {
                Ok(filter) => filter,
                Err(reason) => {
                    tracing::info!(%reason, "DescribeClientQuotas refused");
                    return context.respond(
                        &DescribeClientQuotasResponse::default()
                            .with_error_code(errors::INVALID_REQUEST)
                            .with_error_message(Some(StrBytes::from_string(reason))),
                    );
                }
            };
            let image = context.broker.controller.image();
            let entries = image
                .client_quotas
                .iter()
                .filter(|(entity, _)| filter_matches(&filter, request.strict, entity))
                .map(|(entity, values)| {
                    EntryData::default()
                        .with_entity(
                            entity
                                .components()
                                .into_iter()
                                .map(|(kind, name)| {
                                    EntityData::default()
                                        .with_entity_type(StrBytes::from_static_str(kind))
                                        .with_entity_name(
                                            name.map(|n| StrBytes::from_string(n.to_string())),
                                        )
                                })
                                .collect(),
                        )
                        .with_values(
                            values
                                .iter()
                                .map(|(key, value)| {
                                    ValueData::default()
                                        .with_key(StrBytes::from_static_str(key.name()))
                                        .with_value(value.0)
                                })
                                .collect(),
                        )
                })
                .collect();
            context.respond(&DescribeClientQuotasResponse::default().with_entries(Some(entries)))
        })
    }
}

/// The request's filter, or Kafka's INVALID_REQUEST message.
fn components(request: &DescribeClientQuotasRequest) -> Result<Vec<(String, Match)>, String> {
    let mut filter: Vec<(String, Match)> = Vec::new();
    for component in &request.components {
        let kind = component.entity_type.to_string();
        if kind != USER && kind != CLIENT_ID {
            return Err(format!("Custom entity type `{kind}` is not supported"));
        }
        if filter.iter().any(|(k, _)| *k == kind) {
            return Err(format!("Duplicate {kind} filter component"));
        }
        let wanted = match (component.match_type, &component._match) {
            (0, Some(name)) => Match::Exact(name.to_string()),
            (0, None) => return Err(format!("Exact match of {kind} names no entity")),
            (1, _) => Match::Default,
            (2, _) => Match::Any,
            (other, _) => return Err(format!("Unknown match type {other}")),
        };
        filter.push((kind, wanted));
    }
    Ok(filter)
}

#[derive(Debug)]
pub struct AlterClientQuotasApi;

impl Api for AlterClientQuotasApi {
    fn key(&self) -> ApiKey {
        ApiKey::AlterClientQuotas
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AlterClientQuotasRequest = context.decode(body)?;
            let allowed = context.access().allows_cluster(Operation::AlterConfigs);
            // Each entry is answered on its own; the valid ones are committed together.
            let mut answers: Vec<Result<Vec<QuotaChange>, (i16, String)>> = request
                .entries
                .iter()
                .map(|entry| {
                    if !allowed {
                        return Err((
                            errors::CLUSTER_AUTHORIZATION_FAILED,
                            format!("{} may not alter client quotas", context.principal),
                        ));
                    }
                    checked_entry(entry).map_err(|reason| (errors::INVALID_REQUEST, reason))
                })
                .collect();
            let changes: Vec<QuotaChange> = answers
                .iter()
                .filter_map(|a| a.as_ref().ok())
                .flatten()
                .cloned()
                .collect();
            if !changes.is_empty() && !request.validate_only {
                match context
                    .broker
                    .controller
                    .alter_client_quotas(changes.clone())
                    .await
                {
                    Ok(()) => {
                        for change in &changes {
                            tracing::info!(by = %context.principal, entity = ?change.entity, key = change.key.name(), value = ?change.value, "Altered a client quota");
                        }
                    }
                    Err(error) => {
                        let failed = (errors::controller_error(&error), error.to_string());
                        for answer in answers.iter_mut().filter(|a| a.is_ok()) {
                            *answer = Err(failed.clone());
                        }
                    }
                }
            }
            let entries = request
                .entries
                .iter()
                .zip(answers)
                .map(|(entry, answer)| {
                    let (code, message) = match answer {
                        Ok(_) => (errors::NONE, None),
                        Err((code, reason)) => {
                            tracing::info!(code, %reason, "AlterClientQuotas refused an entry");
                            (code, Some(StrBytes::from_string(reason)))
                        }
                    };
                    AlteredEntry::default()
                        .with_error_code(code)
                        .with_error_message(message)
                        .with_entity(
                            entry
                                .entity
                                .iter()
                                .map(|e| {
                                    AlteredEntity::default()
                                        .with_entity_type(e.entity_type.clone())
                                        .with_entity_name(e.entity_name.clone())
                                })
                                .collect(),
                        )
                })
                .collect();
            context.respond(&AlterClientQuotasResponse::default().with_entries(entries))
        })
    }
}

fn checked_entry(
    entry: &kafka_protocol::messages::alter_client_quotas_request::EntryData,
) -> Result<Vec<QuotaChange>, String> {
    let entity = QuotaEntity::from_components(
        entry
            .entity
            .iter()
            .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
    )?;
    let mut changes: Vec<QuotaChange> = Vec::new();
    for op in &entry.ops {
        let (key, value) = if op.remove {
            let key = QuotaKey::checked(&op.key, 1.0)?.0;
            (key, None)
        } else {
            let (key, value) = QuotaKey::checked(&op.key, op.value)?;
            (key, Some(value))
        };
        if changes.iter().any(|c| c.key == key) {
            return Err(format!("Duplicate quota key {}", key.name()));
        }
        changes.push(QuotaChange {
            entity: entity.clone(),
            key,
            value,
        });
    }
    Ok(changes)
}
