//! Consumer groups against a real broker process with exact requests: unknown member
//! ids, stale generations, oversized metadata, unknown partitions, invalid timeouts and
//! protocols each get Kafka's error code; nothing committed is lost; a garbage record in
//! `__consumer_offsets` and a garbage request frame neither crash nor corrupt anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use kafka_protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_testkit::client::topic;
use oxbow_testkit::{BrokerProcess, RawClient};

const NONE: i16 = 0;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const OFFSET_METADATA_TOO_LARGE: i16 = 12;
const ILLEGAL_GENERATION: i16 = 22;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const INVALID_GROUP_ID: i16 = 24;
const UNKNOWN_MEMBER_ID: i16 = 25;
const INVALID_SESSION_TIMEOUT: i16 = 26;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const MEMBER_ID_REQUIRED: i16 = 79;
const UNSUPPORTED_ASSIGNOR: i16 = 112;

fn s(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

fn join(
    client: &mut RawClient,
    group: &str,
    member: &str,
    session: i32,
    protocol_type: &str,
) -> JoinGroupResponse {
    client.request(
        ApiKey::JoinGroup,
        5,
        &JoinGroupRequest::default()
            .with_group_id(GroupId(s(group)))
            .with_session_timeout_ms(session)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(s(member))
            .with_protocol_type(s(protocol_type))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(s("range"))
                    .with_metadata(Bytes::from_static(b"\x00\x00\x00\x00\x00\x00\x00\x00")),
            ]),
    )
}

fn commit(
    client: &mut RawClient,
    member: &str,
    generation: i32,
    topic: &str,
    partition: i32,
    metadata: &str,
) -> i16 {
    let response: OffsetCommitResponse = client.request(
        ApiKey::OffsetCommit,
        8,
        &OffsetCommitRequest::default()
            .with_group_id(GroupId(s("g")))
            .with_generation_id_or_member_epoch(generation)
            .with_member_id(s(member))
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(TopicName(s(topic)))
                    .with_partitions(vec![
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(partition)
                            .with_committed_offset(5)
                            .with_committed_metadata(Some(s(metadata))),
                    ]),
            ]),
    );
    response.topics[0].partitions[0].error_code
}

fn fetch_offset(client: &mut RawClient) -> i64 {
    let response: OffsetFetchResponse = client.request(
        ApiKey::OffsetFetch,
        7,
        &OffsetFetchRequest::default()
            .with_group_id(GroupId(s("g")))
            .with_topics(Some(vec![
                OffsetFetchRequestTopic::default()
                    .with_name(TopicName(s("t")))
                    .with_partition_indexes(vec![0]),
            ])),
    );
    response.topics[0].partitions[0].committed_offset
}

#[test]
fn bad_group_requests_get_kafka_error_codes_and_lose_nothing() {
    let overrides = [
        "group.initial.rebalance.delay.ms=0",
        "offsets.topic.num.partitions=1",
    ];
    let mut broker = BrokerProcess::start_temp(&overrides);
    let mut client = broker.client();
    let created = client.create_topics(vec![topic("t", 2)]);
    assert_eq!(created.topics[0].error_code, NONE);
    // As every client does first: find the coordinator (which creates
    // __consumer_offsets on first use, as in Kafka).
    let found: FindCoordinatorResponse = client.request(
        ApiKey::FindCoordinator,
        3,
        &FindCoordinatorRequest::default().with_key(s("g")),
    );
    assert_eq!(found.error_code, NONE);
    assert_eq!(found.port, i32::from(broker.port));

    // Join: a member id is required first, then the member leads generation 1.
    let first = join(&mut client, "g", "", 10_000, "consumer");
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let member = first.member_id.to_string();
    let joined = join(&mut client, "g", &member, 10_000, "consumer");
    assert_eq!(joined.error_code, NONE);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader.as_str(), member);
    let synced: SyncGroupResponse = client.request(
        ApiKey::SyncGroup,
        3,
        &SyncGroupRequest::default()
            .with_group_id(GroupId(s("g")))
            .with_generation_id(1)
            .with_member_id(s(&member))
            .with_assignments(vec![
                SyncGroupRequestAssignment::default()
                    .with_member_id(s(&member))
                    .with_assignment(Bytes::from_static(b"assignment")),
            ]),
    );
    assert_eq!(synced.error_code, NONE);
    assert_eq!(synced.assignment.as_ref(), b"assignment");

    // Heartbeats from strangers and from the past.
    let heartbeat = |client: &mut RawClient, member: &str, generation: i32| -> i16 {
        let response: HeartbeatResponse = client.request(
            ApiKey::Heartbeat,
            3,
            &HeartbeatRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_generation_id(generation)
                .with_member_id(s(member)),
        );
        response.error_code
    };
    assert_eq!(heartbeat(&mut client, &member, 1), NONE);
    assert_eq!(heartbeat(&mut client, "stranger", 1), UNKNOWN_MEMBER_ID);
    assert_eq!(heartbeat(&mut client, &member, 0), ILLEGAL_GENERATION);

    // Commits: one good, then each kind of bad one; the good offset survives them all.
    assert_eq!(commit(&mut client, &member, 1, "t", 0, "m"), NONE);
    assert_eq!(
        commit(&mut client, "stranger", 1, "t", 0, ""),
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        commit(&mut client, &member, 0, "t", 0, ""),
        ILLEGAL_GENERATION
    );
    assert_eq!(commit(&mut client, "", -1, "t", 0, ""), UNKNOWN_MEMBER_ID);
    assert_eq!(
        commit(&mut client, &member, 1, "t", 0, &"x".repeat(5000)),
        OFFSET_METADATA_TOO_LARGE
    );
    assert_eq!(
        commit(&mut client, &member, 1, "nope", 0, ""),
        UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(
        commit(&mut client, &member, 1, "t", 99, ""),
        UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(fetch_offset(&mut client), 5);

    // Joins that cannot be accepted.
    assert_eq!(
        join(&mut client, "g", "", 1, "consumer").error_code,
        INVALID_SESSION_TIMEOUT
    );
    assert_eq!(
        join(&mut client, "", "", 10_000, "consumer").error_code,
        INVALID_GROUP_ID
    );
    assert_eq!(
        join(&mut client, "g", "", 10_000, "connect").error_code,
        INCONSISTENT_GROUP_PROTOCOL
    );
    assert_eq!(
        join(&mut client, "g", "stranger", 10_000, "consumer").error_code,
        UNKNOWN_MEMBER_ID
    );

    // Deleting a live group, or one that does not exist.
    let delete = |client: &mut RawClient, group: &str| -> i16 {
        let response: DeleteGroupsResponse = client.request(
            ApiKey::DeleteGroups,
            2,
            &DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s(group))]),
        );
        response.results[0].error_code
    };
    assert_eq!(delete(&mut client, "g"), NON_EMPTY_GROUP);
    assert_eq!(delete(&mut client, "nobody"), GROUP_ID_NOT_FOUND);

    // KIP-848: an unknown member, an unknown assignor.
    let cgh = |client: &mut RawClient, request: ConsumerGroupHeartbeatRequest| -> i16 {
        let response: ConsumerGroupHeartbeatResponse =
            client.request(ApiKey::ConsumerGroupHeartbeat, 0, &request);
        response.error_code
    };
    let base = ConsumerGroupHeartbeatRequest::default().with_group_id(GroupId(s("new-g")));
    assert_eq!(
        cgh(
            &mut client,
            base.clone().with_member_id(s("m")).with_member_epoch(5)
        ),
        UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        cgh(
            &mut client,
            base.with_member_id(s("m"))
                .with_member_epoch(0)
                .with_rebalance_timeout_ms(1000)
                .with_subscribed_topic_names(Some(vec![TopicName(s("t"))]))
                .with_server_assignor(Some(s("nope")))
        ),
        UNSUPPORTED_ASSIGNOR
    );

    // A garbage JoinGroup frame closes that connection only.
    let mut garbage = RawClient::connect(broker.port);
    garbage.send_frame(&[0, 11, 0, 5, 0, 0, 0, 1, 0xff, 0xff, 0xff]);
    assert!(garbage.read_frame().is_none());

    // A record in __consumer_offsets that is not ours to read: skipped at load.
    let junk = build_batch(
        &[SimpleRecord {
            key: Some(Bytes::from_static(b"\x7f\x7fjunk")),
            value: Some(Bytes::from_static(b"\x00")),
            timestamp: 1,
            headers: Vec::new(),
        }],
        Compression::None,
        ProducerFields::default(),
    )
    .unwrap()
    .freeze();
    let produced: ProduceResponse = client.request(
        ApiKey::Produce,
        9,
        &ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(s("__consumer_offsets")))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(junk)),
                    ]),
            ]),
    );
    assert_eq!(
        produced.responses[0].partition_responses[0].error_code,
        NONE
    );
    broker.sigkill();
    broker.restart(&[]);
    let mut client = broker.client();
    assert_eq!(
        fetch_offset(&mut client),
        5,
        "the commit survives the restart and the junk"
    );
    assert!(
        broker
            .run_log()
            .contains("Skipping a __consumer_offsets record")
    );
}
