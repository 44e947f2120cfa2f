//! ElectLeaders: leadership back to preferred replicas (PREFERRED), or a leader for a
//! leaderless partition from any live replica (UNCLEAN), decided by the active
//! controller. Kafka's `kafka-leader-election` tool speaks it.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::{ApiKey, ElectLeadersRequest, ElectLeadersResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::ElectionType;
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct ElectLeadersApi;

impl Api for ElectLeadersApi {
    fn key(&self) -> ApiKey {
        ApiKey::ElectLeaders
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ElectLeadersRequest = context.decode(body)?;
            let election = match request.election_type {
                0 => Some(ElectionType::Preferred),
                1 => Some(ElectionType::Unclean),
                _ => None,
            };
            let asked: Option<Vec<(String, i32)>> = request.topic_partitions.as_ref().map(|t| {
                t.iter()
                    .flat_map(|topic| {
                        topic
                            .partitions
                            .iter()
                            .map(|p| (topic.topic.0.to_string(), *p))
                    })
                    .collect()
            });
            if !context.access().allows_cluster(Operation::Alter) {
                let code = errors::CLUSTER_AUTHORIZATION_FAILED;
                let message = format!("{} may not elect leaders", context.principal);
                return context.respond(&response(code, refuse_all(&asked, code, &message)));
            }
            let Some(election) = election else {
                tracing::info!(
                    election_type = request.election_type,
                    "ElectLeaders refused: unknown election type"
                );
                let outcomes = refuse_all(&asked, errors::INVALID_REQUEST, "unknown election type");
                return context.respond(&response(0, outcomes));
            };
            match context
                .broker
                .controller
                .elect_leaders(election, asked.clone())
                .await
            {
                Ok(outcomes) => {
                    for outcome in &outcomes {
                        if let Some(error) = &outcome.error {
                            tracing::info!(topic = %outcome.topic, partition = outcome.partition, %error, "ElectLeaders: no election");
                        }
                    }
                    let elected = outcomes.iter().filter(|o| o.error.is_none()).count();
                    tracing::info!(?election, elected, "ElectLeaders");
                    let outcomes = outcomes
                        .into_iter()
                        .map(|o| {
                            let (code, message) = match &o.error {
                                None => (errors::NONE, None),
                                Some(error) => {
                                    (errors::controller_error(error), Some(error.to_string()))
                                }
                            };
                            (o.topic, o.partition, code, message)
                        })
                        .collect();
                    context.respond(&response(0, outcomes))
                }
                Err(error) => {
                    tracing::warn!(%error, "ElectLeaders failed");
                    // The request as a whole failed: every asked partition gets the error.
                    let code = errors::controller_error(&error);
                    let outcomes = refuse_all(&asked, code, &error.to_string());
                    context.respond(&response(code, outcomes))
                }
            }
        })
    }
}

type Row = (String, i32, i16, Option<String>);

fn refuse_all(asked: &Option<Vec<(String, i32)>>, code: i16, message: &str) -> Vec<Row> {
    asked
        .iter()
        .flatten()
        .map(|(t, p)| (t.clone(), *p, code, Some(message.to_string())))
        .collect()
}

fn response(code: i16, rows: Vec<Row>) -> ElectLeadersResponse {
    let mut by_topic: BTreeMap<String, Vec<PartitionResult>> = BTreeMap::new();
    for (topic, partition, error_code, message) in rows {
        by_topic.entry(topic).or_default().push(
            PartitionResult::default()
                .with_partition_id(partition)
                .with_error_code(error_code)
                .with_error_message(message.map(StrBytes::from_string)),
        );
    }
    ElectLeadersResponse::default()
        .with_error_code(code)
        .with_replica_election_results(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    ReplicaElectionResult::default()
                        .with_topic(TopicName(StrBytes::from_string(topic)))
                        .with_partition_result(partitions)
                })
                .collect(),
        )
}
