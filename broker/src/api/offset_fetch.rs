//! OffsetFetch: committed offsets of one group (v0-v7) or several (v8+); partitions
//! without a commit answer offset -1.

use bytes::Bytes;
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{ApiKey, OffsetFetchRequest, OffsetFetchResponse, TopicName};
use kafka_protocol::protocol::{StrBytes, VersionRange};
use uuid::Uuid;

use super::Access;
use super::{Api, HandlerFuture, RequestContext, errors};
use crate::group::offsets::FetchedOffset;
use crate::model::TopicPartition;
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct OffsetFetchApi;

impl Api for OffsetFetchApi {
    fn key(&self) -> ApiKey {
        ApiKey::OffsetFetch
    }

    /// v10 names topics by id (KIP-848): not yet; clients negotiate down to v9.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 9)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: OffsetFetchRequest = context.decode(body)?;
            let groups = &context.broker.groups;
            let access = context.access();
            if context.version < 8 {
                if !access.allows(Operation::Describe, ResourceType::Group, &request.group_id) {
                    return context.respond(
                        &OffsetFetchResponse::default()
                            .with_error_code(errors::GROUP_AUTHORIZATION_FAILED),
                    );
                }
                if let Err(error) = groups.check_coordinator(&request.group_id.0) {
                    return context.respond(
                        &OffsetFetchResponse::default()
                            .with_error_code(errors::group_error(&error)),
                    );
                }
                let named = request.topics.is_some();
                let partitions = request.topics.map(|topics| {
                    topics
                        .iter()
                        .flat_map(|t| {
                            t.partition_indexes
                                .iter()
                                .map(|p| TopicPartition::new(t.name.0.to_string(), *p))
                        })
                        .collect()
                });
                let fetched = groups.fetch_offsets(&request.group_id.0, partitions);
                let fetched = authorized(&access, fetched, named);
                let fetched = stable(groups, &request.group_id.0, request.require_stable, fetched);
                let topics = group_by_topic(fetched)
                    .into_iter()
                    .map(|(topic, partitions)| {
                        OffsetFetchResponseTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic)))
                            .with_partitions(
                                partitions
                                    .into_iter()
                                    .map(|(f, code)| {
                                        let (offset, epoch, metadata) = values(&f);
                                        OffsetFetchResponsePartition::default()
                                            .with_error_code(code)
                                            .with_partition_index(f.partition)
                                            .with_committed_offset(offset)
                                            .with_committed_leader_epoch(epoch)
                                            .with_metadata(Some(StrBytes::from_string(metadata)))
                                    })
                                    .collect(),
                            )
                    })
                    .collect();
                return context.respond(
                    &OffsetFetchResponse::default()
                        .with_topics(topics)
                        .with_error_code(errors::NONE),
                );
            }
            let image = context.broker.controller.image();
            let name_of = |name: &TopicName, id: &Uuid| -> String {
                if context.version >= 10 {
                    image
                        .topics
                        .values()
                        .find(|t| &t.topic_id == id)
                        .map(|t| t.name.clone())
                        .unwrap_or_default()
                } else {
                    name.0.to_string()
                }
            };
            let id_of = |name: &str| {
                image
                    .topics
                    .get(name)
                    .map(|t| t.topic_id)
                    .unwrap_or_default()
            };
            let response_groups = request
                .groups
                .iter()
                .map(|group| {
                    if !access.allows(Operation::Describe, ResourceType::Group, &group.group_id) {
                        return OffsetFetchResponseGroup::default()
                            .with_group_id(group.group_id.clone())
                            .with_error_code(errors::GROUP_AUTHORIZATION_FAILED);
                    }
                    if let Err(error) = groups.check_coordinator(&group.group_id.0) {
                        return OffsetFetchResponseGroup::default()
                            .with_group_id(group.group_id.clone())
                            .with_error_code(errors::group_error(&error));
                    }
                    let partitions = group.topics.as_ref().map(|topics| {
                        topics
                            .iter()
                            .flat_map(|t| {
                                let name = name_of(&t.name, &t.topic_id);
                                t.partition_indexes
                                    .iter()
                                    .map(move |p| TopicPartition::new(name.clone(), *p))
                            })
                            .collect()
                    });
                    let named = partitions.is_some();
                    let fetched = groups.fetch_offsets(&group.group_id.0, partitions);
                    let fetched = authorized(&access, fetched, named);
                    let fetched =
                        stable(groups, &group.group_id.0, request.require_stable, fetched);
                    let topics = group_by_topic(fetched)
                        .into_iter()
                        .map(|(topic, partitions)| {
                            OffsetFetchResponseTopics::default()
                                .with_topic_id(id_of(&topic))
                                .with_name(TopicName(StrBytes::from_string(topic)))
                                .with_partitions(
                                    partitions
                                        .into_iter()
                                        .map(|(f, code)| {
                                            let (offset, epoch, metadata) = values(&f);
                                            OffsetFetchResponsePartitions::default()
                                                .with_error_code(code)
                                                .with_partition_index(f.partition)
                                                .with_committed_offset(offset)
                                                .with_committed_leader_epoch(epoch)
                                                .with_metadata(Some(StrBytes::from_string(
                                                    metadata,
                                                )))
                                        })
                                        .collect(),
                                )
                        })
                        .collect();
                    OffsetFetchResponseGroup::default()
                        .with_group_id(group.group_id.clone())
                        .with_topics(topics)
                })
                .collect();
            context.respond(&OffsetFetchResponse::default().with_groups(response_groups))
        })
    }
}

/// KIP-447: with `require_stable`, a partition whose offset a transaction has written
/// and not yet decided is answered UNSTABLE_OFFSET_COMMIT (the consumer asks again)
/// rather than with an offset the transaction may still replace.
fn stable(
    groups: &crate::group::GroupCoordinator,
    group: &str,
    require_stable: bool,
    fetched: Vec<(FetchedOffset, i16)>,
) -> Vec<(FetchedOffset, i16)> {
    if !require_stable {
        return fetched;
    }
    fetched
        .into_iter()
        .map(|(mut f, code)| {
            let tp = TopicPartition::new(f.topic.clone(), f.partition);
            if code == errors::NONE && groups.has_pending_offset(group, &tp) {
                f.offset = None;
                (f, errors::UNSTABLE_OFFSET_COMMIT)
            } else {
                (f, code)
            }
        })
        .collect()
}

fn values(fetched: &FetchedOffset) -> (i64, i32, String) {
    match &fetched.offset {
        Some(v) => (v.offset, v.leader_epoch, v.metadata.clone()),
        None => (-1, -1, String::new()),
    }
}

/// Each offset with its error: the partitions of a topic the principal may not describe
/// are answered TOPIC_AUTHORIZATION_FAILED when named, and left out of an "all offsets"
/// answer, as Kafka does.
fn authorized(
    access: &Access<'_>,
    fetched: Vec<FetchedOffset>,
    named: bool,
) -> Vec<(FetchedOffset, i16)> {
    fetched
        .into_iter()
        .filter_map(|mut f| {
            if access.sees(Operation::Describe, ResourceType::Topic, &f.topic) {
                return Some((f, errors::NONE));
            }
            named.then(|| {
                access.allows(Operation::Describe, ResourceType::Topic, &f.topic);
                f.offset = None;
                (f, errors::TOPIC_AUTHORIZATION_FAILED)
            })
        })
        .collect()
}

type Grouped = Vec<(String, Vec<(FetchedOffset, i16)>)>;

fn group_by_topic(fetched: Vec<(FetchedOffset, i16)>) -> Grouped {
    let mut topics: Grouped = Vec::new();
    for (f, code) in fetched {
        match topics.iter_mut().find(|(t, _)| *t == f.topic) {
            Some((_, list)) => list.push((f, code)),
            None => topics.push((f.topic.clone(), vec![(f, code)])),
        }
    }
    topics
}
