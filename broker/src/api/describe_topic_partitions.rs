//! DescribeTopicPartitions (KIP-966): the partitions of topics, paged by a cursor so a
//! cluster with many partitions is described in bounded answers (the 3.8+ admin client's
//! `describeTopics`, and so `kafka-topics --describe`, use it when a broker lists it).
//!
//! As Kafka: the topics asked for (all the principal may describe when none are), sorted by
//! name, from the cursor's topic and partition on; at most `response_partition_limit`
//! partitions (capped at [`MAX_PARTITIONS_PER_RESPONSE`], Kafka's
//! `max.request.partition.size.limit`), and a next cursor where the answer stopped.

use bytes::Bytes;
use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::validate_topic_name;
use crate::metadata::image::{ClusterImage, TopicImage};
use crate::security::acl::{Operation, ResourceType};

/// Kafka's default `max.request.partition.size.limit`.
pub const MAX_PARTITIONS_PER_RESPONSE: i32 = 2000;

#[derive(Debug)]
pub struct DescribeTopicPartitionsApi;

impl Api for DescribeTopicPartitionsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeTopicPartitions
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeTopicPartitionsRequest = context.decode(body)?;
            let image = context.broker.controller.image();
            let access = context.access();
            let response = match describe(&request, &image, |name| {
                access.allows(Operation::Describe, ResourceType::Topic, name)
            }) {
                Ok(mut response) => {
                    for topic in &mut response.topics {
                        if topic.error_code == 0
                            && let Some(name) = &topic.name
                        {
                            topic.topic_authorized_operations =
                                access.operations(ResourceType::Topic, name);
                        }
                    }
                    response
                }
                Err(reason) => {
                    tracing::info!(%reason, "Refusing a DescribeTopicPartitions request");
                    refused(&request)
                }
            };
            context.respond(&response)
        })
    }
}

/// The answer to `request` from `image`, for a principal that may describe the topics
/// `may_describe` allows; `Err` for a cursor Kafka refuses (INVALID_REQUEST).
fn describe(
    request: &DescribeTopicPartitionsRequest,
    image: &ClusterImage,
    may_describe: impl Fn(&str) -> bool,
) -> Result<DescribeTopicPartitionsResponse, String> {
    let all = request.topics.is_empty();
    let (cursor_topic, cursor_partition) = match &request.cursor {
        Some(cursor) => (cursor.topic_name.0.as_str(), cursor.partition_index),
        None => ("", 0),
    };
    let mut names: Vec<&str> = if all {
        image.topics.keys().map(String::as_str).collect()
    } else {
        request.topics.iter().map(|t| t.name.0.as_str()).collect()
    };
    names.retain(|name| *name >= cursor_topic);
    names.sort_unstable();
    names.dedup();
    if request.cursor.is_some() && !all && !names.contains(&cursor_topic) {
        return Err(format!(
            "the topic list should contain the cursor's topic {cursor_topic}"
        ));
    }
    if cursor_partition < 0 {
        return Err(format!(
            "the cursor's partition {cursor_partition} is not valid"
        ));
    }
    let mut remaining = request
        .response_partition_limit
        .clamp(1, MAX_PARTITIONS_PER_RESPONSE);
    let mut response = DescribeTopicPartitionsResponse::default();
    // Topics the principal may not describe are not disclosed; named ones are answered
    // TOPIC_AUTHORIZATION_FAILED after the others, as Kafka does.
    let mut unauthorized = Vec::new();
    for name in names {
        if !may_describe(name) {
            if !all {
                unauthorized.push(error_topic(name, errors::TOPIC_AUTHORIZATION_FAILED));
            }
            continue;
        }
        if remaining == 0 {
            response.next_cursor = Some(cursor(name, 0));
            break;
        }
        let Some(topic) = image.topics.get(name) else {
            if !all {
                let code = match validate_topic_name(name) {
                    Ok(()) => errors::UNKNOWN_TOPIC_OR_PARTITION,
                    Err(_) => errors::INVALID_TOPIC_EXCEPTION,
                };
                response.topics.push(error_topic(name, code));
            }
            continue;
        };
        let start = if name == cursor_topic {
            cursor_partition
        } else {
            0
        };
        let count = i32::try_from(topic.partitions.len()).unwrap_or(i32::MAX);
        let end = count.min(start.saturating_add(remaining));
        response.topics.push(topic_entry(image, topic, start, end));
        if end < count {
            response.next_cursor = Some(cursor(name, end));
            break;
        }
        remaining -= (end - start).max(0);
    }
    response.topics.extend(unauthorized);
    Ok(response)
}

fn cursor(topic: &str, partition: i32) -> Cursor {
    Cursor::default()
        .with_topic_name(TopicName(StrBytes::from_string(topic.to_string())))
        .with_partition_index(partition)
}

fn error_topic(name: &str, code: i16) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic::default()
        .with_error_code(code)
        .with_name(Some(TopicName(StrBytes::from_string(name.to_string()))))
        .with_is_internal(is_internal(name))
}

/// Kafka's internal topics (Oxbow's own start with `__` too).
fn is_internal(name: &str) -> bool {
    name.starts_with("__")
}

/// Partitions `start..end` of `topic`.
fn topic_entry(
    image: &ClusterImage,
    topic: &TopicImage,
    start: i32,
    end: i32,
) -> DescribeTopicPartitionsResponseTopic {
    let ids = |nodes: &[i32]| nodes.iter().map(|n| BrokerId(*n)).collect::<Vec<_>>();
    let partitions = (start..end)
        .filter_map(|index| {
            let state = topic.partitions.get(usize::try_from(index).ok()?)?;
            let offline: Vec<i32> = state
                .replicas
                .iter()
                .copied()
                .filter(|r| !image.is_live(*r))
                .collect();
            // A leader that is not alive is answered as none, as Kafka does.
            let leader = if state.leader >= 0 && image.is_live(state.leader) {
                state.leader
            } else {
                -1
            };
            Some(
                DescribeTopicPartitionsResponsePartition::default()
                    .with_partition_index(index)
                    .with_leader_id(BrokerId(leader))
                    .with_leader_epoch(state.leader_epoch)
                    .with_replica_nodes(ids(&state.replicas))
                    .with_isr_nodes(ids(&state.in_sync_replicas))
                    .with_offline_replicas(ids(&offline))
                    // Eligible leader replicas (KIP-966) are not kept: Kafka's answer without
                    // them (`eligible.leader.replicas.version` 0) is empty lists.
                    .with_eligible_leader_replicas(Some(Vec::new()))
                    .with_last_known_elr(Some(Vec::new())),
            )
        })
        .collect();
    DescribeTopicPartitionsResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_string(topic.name.clone()))))
        .with_topic_id(topic.topic_id)
        .with_is_internal(is_internal(&topic.name))
        .with_partitions(partitions)
}

/// Kafka's answer to a request it refuses: every topic asked for, INVALID_REQUEST.
fn refused(request: &DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse {
    DescribeTopicPartitionsResponse::default().with_topics(
        request
            .topics
            .iter()
            .map(|t| error_topic(t.name.0.as_str(), errors::INVALID_REQUEST))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::testing::image;
    use kafka_protocol::messages::describe_topic_partitions_request::{
        Cursor as RequestCursor, TopicRequest,
    };

    fn request(
        topics: &[&str],
        limit: i32,
        cursor: Option<(&str, i32)>,
    ) -> DescribeTopicPartitionsRequest {
        DescribeTopicPartitionsRequest::default()
            .with_topics(
                topics
                    .iter()
                    .map(|t| {
                        TopicRequest::default()
                            .with_name(TopicName(StrBytes::from_string(t.to_string())))
                    })
                    .collect(),
            )
            .with_response_partition_limit(limit)
            .with_cursor(cursor.map(|(topic, partition)| {
                RequestCursor::default()
                    .with_topic_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partition_index(partition)
            }))
    }

    /// (topic, first partition, partition count, error) of an answered topic.
    type Page = (String, i32, usize, i16);

    /// Each answered topic, and the next cursor.
    fn pages(response: &DescribeTopicPartitionsResponse) -> (Vec<Page>, Option<(String, i32)>) {
        (
            response
                .topics
                .iter()
                .map(|t| {
                    (
                        t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
                        t.partitions.first().map_or(-1, |p| p.partition_index),
                        t.partitions.len(),
                        t.error_code,
                    )
                })
                .collect(),
            response
                .next_cursor
                .as_ref()
                .map(|c| (c.topic_name.0.to_string(), c.partition_index)),
        )
    }

    /// Topics of `partitions` partitions each, every replica on broker 1.
    fn image_with_topics(topics: &[(&str, usize)]) -> ClusterImage {
        let replicas: &[i32] = &[1];
        let lists: Vec<(&str, Vec<&[i32]>)> = topics
            .iter()
            .map(|(name, count)| (*name, vec![replicas; *count]))
            .collect();
        let specs: Vec<(&str, &[&[i32]])> = lists
            .iter()
            .map(|(name, l)| (*name, l.as_slice()))
            .collect();
        image(&specs)
    }

    #[test]
    fn every_partition_is_described_once_across_the_pages() {
        let image = image_with_topics(&[("b", 3), ("a", 2), ("c", 1)]);
        let everyone = |_: &str| true;
        let first = describe(&request(&[], 4, None), &image, everyone).unwrap();
        assert_eq!(
            pages(&first),
            (
                vec![("a".into(), 0, 2, 0), ("b".into(), 0, 2, 0)],
                Some(("b".into(), 2))
            )
        );
        let second = describe(&request(&[], 4, Some(("b", 2))), &image, everyone).unwrap();
        assert_eq!(
            pages(&second),
            (vec![("b".into(), 2, 1, 0), ("c".into(), 0, 1, 0)], None)
        );
        // A page that ends exactly at a topic's end points at the next topic's start.
        let exact = describe(&request(&[], 2, None), &image, everyone).unwrap();
        assert_eq!(
            pages(&exact),
            (vec![("a".into(), 0, 2, 0)], Some(("b".into(), 0)))
        );
    }

    #[test]
    fn named_topics_get_their_errors_and_unauthorized_ones_are_not_disclosed() {
        let image = image_with_topics(&[("a", 1), ("secret", 1)]);
        let not_secret = |name: &str| name != "secret";
        let named = describe(
            &request(&["secret", "a", "missing", "bad/name"], 100, None),
            &image,
            not_secret,
        )
        .unwrap();
        let (topics, next) = pages(&named);
        assert_eq!(next, None);
        assert_eq!(
            topics,
            vec![
                ("a".into(), 0, 1, 0),
                ("bad/name".into(), -1, 0, errors::INVALID_TOPIC_EXCEPTION),
                ("missing".into(), -1, 0, errors::UNKNOWN_TOPIC_OR_PARTITION),
                ("secret".into(), -1, 0, errors::TOPIC_AUTHORIZATION_FAILED),
            ]
        );
        let all = describe(&request(&[], 100, None), &image, not_secret).unwrap();
        assert_eq!(pages(&all).0, vec![("a".into(), 0, 1, 0)]);
    }

    #[test]
    fn a_cursor_outside_the_asked_topics_is_an_invalid_request() {
        let image = image_with_topics(&[("a", 1), ("b", 1)]);
        assert!(describe(&request(&["a"], 10, Some(("b", 0))), &image, |_| true).is_err());
        assert!(describe(&request(&[], 10, Some(("a", -1))), &image, |_| true).is_err());
        let answer = refused(&request(&["a", "b"], 10, Some(("c", 0))));
        assert!(
            answer
                .topics
                .iter()
                .all(|t| t.error_code == errors::INVALID_REQUEST)
        );
        assert_eq!(answer.topics.len(), 2);
    }
}
