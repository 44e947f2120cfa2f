//! Bad input against the real `oxbow` binary on loopback: every case gets the Kafka error
//! code Kafka would send, or a closed connection and a log line for garbage frames; the
//! broker keeps serving other clients, and the records stored before are untouched.
//!
//! Each test starts its own broker (free loopback ports, a temporary log dir), stores a
//! known batch, sends one kind of bad input, then checks from a fresh connection that the
//! stored records and offsets are exactly as before.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::net::Shutdown;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_topics_request::CreatableTopicConfig;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, BrokerId, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest,
};
use kafka_protocol::protocol::{Decodable, StrBytes};

use oxbow_testkit::BrokerProcess;
use oxbow_testkit::client::*;
use oxbow_testkit::known_records::*;

// ---------------------------------------------------------------------------------------
// Garbage frames: a closed connection and a log line

#[test]
fn malformed_frame_closes_the_connection() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    // A Produce header followed by bytes that are no Produce request.
    let mut payload = BytesMut::new();
    payload.put_i16(ApiKey::Produce as i16);
    payload.put_i16(PRODUCE_VERSION);
    payload.put_i32(7);
    payload.put_slice(&[0xff; 5]);
    client.send_frame(&payload);
    assert!(client.is_closed_by_broker());
    broker.wait_logged("Closing connection");
    broker.assert_serving_and_intact();
}

#[test]
fn frame_shorter_than_a_request_header_closes_the_connection() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    client.send_frame(&[0, 18, 0]);
    assert!(client.is_closed_by_broker());
    broker.wait_logged("too short for a header");
    broker.assert_serving_and_intact();
}

#[test]
fn huge_array_length_is_a_decode_error_not_an_allocation() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    // Produce v3: transactional_id (null), acks, timeout, then a topic array claiming
    // i32::MAX entries in a frame of a few bytes.
    let mut payload = BytesMut::new();
    payload.put_i16(ApiKey::Produce as i16);
    payload.put_i16(3);
    payload.put_i32(1);
    payload.put_i16(-1); // client id: null
    payload.put_i16(-1); // transactional id: null
    payload.put_i16(1);
    payload.put_i32(1000);
    payload.put_i32(i32::MAX);
    client.send_frame(&payload);
    assert!(client.is_closed_by_broker());
    broker.wait_logged("Closing connection");
    broker.assert_serving_and_intact();
}

#[test]
fn truncated_frame_is_dropped_without_harm() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let payload = client.encode(
        ApiKey::Produce,
        PRODUCE_VERSION,
        &produce_request(STORED_TOPIC, 0, batch(&["never stored"], 0)),
    );
    // The size prefix promises the whole request; only half of it arrives.
    let mut frame = (payload.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&payload[..payload.len() / 2]);
    client.stream.write_all(&frame).unwrap();
    client.stream.shutdown(Shutdown::Write).unwrap();
    assert!(client.is_closed_by_broker());
    broker.assert_serving_and_intact();
}

#[test]
fn frame_over_socket_request_max_bytes_closes_the_connection() {
    let mut broker = BrokerProcess::start_with_known_records(&["socket.request.max.bytes=4096"]);
    let mut client = broker.client();
    // Only the size prefix: the broker must not wait for (or buffer) the body.
    client.stream.write_all(&8192i32.to_be_bytes()).unwrap();
    assert!(client.is_closed_by_broker());
    broker.wait_logged("socket.request.max.bytes");
    // A negative size is garbage too.
    let mut client = broker.client();
    client.stream.write_all(&(-5i32).to_be_bytes()).unwrap();
    assert!(client.is_closed_by_broker());
    broker.assert_serving_and_intact();
}

// ---------------------------------------------------------------------------------------
// Bad records: an error code, nothing appended

#[test]
fn wrong_crc_is_corrupt_message() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let mut records = batch(&["corrupted"], 0).to_vec();
    let last = records.len() - 1;
    records[last] ^= 0x55;
    let response = client.produce(STORED_TOPIC, 0, Bytes::from(records));
    assert_eq!(
        partition_error(&response),
        ResponseError::CorruptMessage.code()
    );
    broker.assert_serving_and_intact();
}

#[test]
fn batch_over_max_message_bytes_is_message_too_large() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let records = batch(&["big"], MAX_MESSAGE_BYTES);
    assert!(records.len() > MAX_MESSAGE_BYTES);
    let response = client.produce(STORED_TOPIC, 0, records);
    assert_eq!(
        partition_error(&response),
        ResponseError::MessageTooLarge.code()
    );
    broker.assert_serving_and_intact();
}

#[test]
fn batch_exactly_at_max_message_bytes_is_stored() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    assert_eq!(
        client.create_topics(vec![topic("limit", 1)]).topics[0].error_code,
        0
    );
    let records = batch_of_size(MAX_MESSAGE_BYTES);
    let response = client.produce("limit", 0, records);
    assert_eq!(partition_error(&response), 0);
    let response = client.produce("limit", 0, batch_of_size(MAX_MESSAGE_BYTES + 1));
    assert_eq!(
        partition_error(&response),
        ResponseError::MessageTooLarge.code()
    );
    let fetched = client.fetch("limit", 0, 0);
    let partition = &fetched.responses[0].partitions[0];
    assert_eq!(partition.high_watermark, 1);
    assert_eq!(
        partition.records.as_ref().map(Bytes::len),
        Some(MAX_MESSAGE_BYTES)
    );
    broker.assert_serving_and_intact();
}

// ---------------------------------------------------------------------------------------
// Unknown topics, partitions and invalid names

#[test]
fn unknown_topic_with_auto_create_off_is_unknown_topic_or_partition() {
    let mut broker = BrokerProcess::start_with_known_records(&["auto.create.topics.enable=false"]);
    let mut client = broker.client();
    let metadata = client.metadata(&["nowhere"], true);
    assert_eq!(
        metadata.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    let response = client.produce("nowhere", 0, batch(&["lost"], 0));
    assert_eq!(
        partition_error(&response),
        ResponseError::UnknownTopicOrPartition.code()
    );
    let fetched = client.fetch("nowhere", 0, 0);
    assert_eq!(
        fetched.responses[0].partitions[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    // Still not created.
    let metadata = client.metadata(&["nowhere"], true);
    assert_eq!(
        metadata.topics[0].error_code,
        ResponseError::UnknownTopicOrPartition.code()
    );
    broker.assert_serving_and_intact();
}

#[test]
fn non_existent_partition_is_unknown_topic_or_partition() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let code = ResponseError::UnknownTopicOrPartition.code();
    for partition in [1, 7, -1, i32::MAX] {
        let response = client.produce(STORED_TOPIC, partition, batch(&["lost"], 0));
        assert_eq!(partition_error(&response), code, "produce to {partition}");
        let fetched = client.fetch(STORED_TOPIC, partition, 0);
        assert_eq!(
            fetched.responses[0].partitions[0].error_code, code,
            "fetch from {partition}"
        );
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![
                ListOffsetsTopic::default()
                    .with_name(name(STORED_TOPIC))
                    .with_partitions(vec![
                        ListOffsetsPartition::default()
                            .with_partition_index(partition)
                            .with_timestamp(-1),
                    ]),
            ]);
        let offsets: ListOffsetsResponse =
            client.request(ApiKey::ListOffsets, LIST_OFFSETS_VERSION, &request);
        assert_eq!(
            offsets.topics[0].partitions[0].error_code, code,
            "list offsets of {partition}"
        );
    }
    broker.assert_serving_and_intact();
}

#[test]
fn invalid_topic_names_are_invalid_topic_exception() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let too_long = "x".repeat(250);
    let invalid = [
        "",
        ".",
        "..",
        "with/slash",
        "white space",
        "ünïcode",
        &too_long,
    ];
    let created = client.create_topics(invalid.iter().map(|n| topic(n, 1)).collect());
    for (result, wanted) in created.topics.iter().zip(invalid) {
        assert_eq!(
            result.error_code,
            ResponseError::InvalidTopicException.code(),
            "CreateTopics {wanted:?}"
        );
    }
    let metadata = client.metadata(&invalid[1..], true);
    for (result, wanted) in metadata.topics.iter().zip(&invalid[1..]) {
        assert_eq!(
            result.error_code,
            ResponseError::InvalidTopicException.code(),
            "Metadata {wanted:?}"
        );
    }
    // None of them exists afterwards.
    let all = client.request(
        ApiKey::Metadata,
        METADATA_VERSION,
        &MetadataRequest::default().with_topics(None),
    );
    let names: Vec<String> = all
        .topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        // Internal topics (`__consumer_offsets`, created by the group coordinator) are listed too.
        .filter(|name| !name.starts_with("__"))
        .collect();
    assert_eq!(names, vec![STORED_TOPIC.to_string()]);
    broker.assert_serving_and_intact();
}

#[test]
fn negative_or_absurd_topic_settings_are_refused() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let config = |key: &str, value: &str| {
        topic("configured", 1).with_configs(vec![
            CreatableTopicConfig::default()
                .with_name(StrBytes::from_string(key.to_string()))
                .with_value(Some(StrBytes::from_string(value.to_string()))),
        ])
    };
    let cases = [
        (topic("partitions", -5), ResponseError::InvalidPartitions),
        (topic("zero", 0), ResponseError::InvalidPartitions),
        (
            topic("replicas", 1).with_replication_factor(3),
            ResponseError::InvalidReplicationFactor,
        ),
        (config("segment.bytes", "-1"), ResponseError::InvalidConfig),
        (
            config("max.message.bytes", "lots"),
            ResponseError::InvalidConfig,
        ),
        (
            config("cleanup.policy", "shred"),
            ResponseError::InvalidConfig,
        ),
        (config("no.such.config", "1"), ResponseError::InvalidConfig),
    ];
    for (request, expected) in cases {
        let wanted = request.name.0.to_string();
        let created = client.create_topics(vec![request]);
        assert_eq!(
            created.topics[0].error_code,
            expected.code(),
            "{wanted}: {:?}",
            created.topics[0]
        );
    }
    broker.assert_serving_and_intact();
}

#[test]
fn one_create_topics_request_answers_each_topic_on_its_own() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    assert_eq!(
        client.create_topics(vec![topic("exists", 1)]).topics[0].error_code,
        0
    );
    let mut request: Vec<_> = (0..40).map(|i| topic(&format!("many-{i}"), 2)).collect();
    request.insert(3, topic("exists", 1));
    request.insert(7, topic("bad partitions", 1));
    request.insert(11, topic("zero", 0));
    request.insert(15, topic("twice", 1));
    request.insert(19, topic("twice", 3));
    let created = client.create_topics(request);
    let code = |name: &str| -> Vec<i16> {
        created
            .topics
            .iter()
            .filter(|t| t.name.0.as_str() == name)
            .map(|t| t.error_code)
            .collect()
    };
    assert_eq!(code("exists"), [ResponseError::TopicAlreadyExists.code()]);
    assert_eq!(
        code("bad partitions"),
        [ResponseError::InvalidTopicException.code()]
    );
    assert_eq!(code("zero"), [ResponseError::InvalidPartitions.code()]);
    // Kafka: one result for a name given twice.
    assert_eq!(code("twice"), [ResponseError::InvalidRequest.code()]);
    let mut ids = std::collections::HashSet::new();
    for i in 0..40 {
        let name = format!("many-{i}");
        assert_eq!(code(&name), [0], "{name}");
        let result = created
            .topics
            .iter()
            .find(|t| t.name.0.as_str() == name)
            .unwrap();
        assert_eq!(result.num_partitions, 2);
        assert!(ids.insert(result.topic_id), "{name} has an id of its own");
    }
    let metadata = client.request(
        ApiKey::Metadata,
        METADATA_VERSION,
        &MetadataRequest::default().with_topics(None),
    );
    let mut listed: Vec<String> = metadata
        .topics
        .iter()
        .filter(|t| t.error_code == 0 && t.partitions.len() == 2)
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect();
    listed.sort();
    let mut wanted: Vec<String> = (0..40).map(|i| format!("many-{i}")).collect();
    wanted.sort();
    assert_eq!(
        listed, wanted,
        "every good topic exists with its partitions, no other"
    );
    assert!(
        !metadata
            .topics
            .iter()
            .any(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "twice"))
    );
    // Every partition of them takes records at once (its log exists and it is led here).
    for i in [0, 39] {
        let response = client.produce(&format!("many-{i}"), 1, batch_of_size(100));
        assert_eq!(partition_error(&response), 0);
    }
    broker.assert_serving_and_intact();
}

// ---------------------------------------------------------------------------------------
// APIs and versions the broker does not serve

#[test]
fn unknown_api_key_closes_the_connection() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    for key in [9999i16, -1] {
        let mut client = broker.client();
        let mut payload = BytesMut::new();
        payload.put_i16(key);
        payload.put_i16(0);
        payload.put_i32(1);
        payload.put_i16(-1);
        client.send_frame(&payload);
        assert!(client.is_closed_by_broker(), "API key {key}");
    }
    broker.wait_logged("unknown or unsupported API key");
    broker.assert_serving_and_intact();
}

#[test]
fn api_versions_newer_than_the_broker_gets_unsupported_version_in_v0_format() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let mut payload = BytesMut::new();
    payload.put_i16(ApiKey::ApiVersions as i16);
    payload.put_i16(99);
    payload.put_i32(42);
    payload.put_i16(-1);
    payload.put_u8(0); // a v2 header's (empty) tagged fields
    client.send_frame(&payload);
    let mut body = client
        .read_frame()
        .expect("an answer, not a closed connection");
    // v0 response header: correlation id only; v0 body: error code and the ranges.
    assert_eq!(body.get_i32(), 42);
    let response = ApiVersionsResponse::decode(&mut body, 0).unwrap();
    assert_eq!(
        response.error_code,
        ResponseError::UnsupportedVersion.code()
    );
    assert!(!body.has_remaining(), "trailing bytes after the v0 body");
    let produce = response
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::Produce as i16)
        .expect("Produce is listed");
    assert!(produce.min_version <= PRODUCE_VERSION && PRODUCE_VERSION <= produce.max_version);
    // The connection stays usable: negotiate down, as clients do.
    assert_eq!(client.api_versions(3).error_code, 0);
    broker.assert_serving_and_intact();
}

#[test]
fn unsupported_version_of_another_api_closes_the_connection() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let supported = client.api_versions(3);
    let produce = supported
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::Produce as i16)
        .unwrap();
    // As Kafka does: the request cannot be parsed, so no response can be framed for it.
    let mut payload = BytesMut::new();
    payload.put_i16(ApiKey::Produce as i16);
    payload.put_i16(produce.max_version + 1);
    payload.put_i32(5);
    payload.put_i16(-1);
    payload.put_u8(0);
    client.send_frame(&payload);
    assert!(client.is_closed_by_broker());
    broker.wait_logged("is not supported");
    broker.assert_serving_and_intact();
}

#[test]
fn produce_v0_to_v2_are_listed_and_refused_per_partition_as_kafka_4_does() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut client = broker.client();
    let produce = client
        .api_versions(3)
        .api_keys
        .into_iter()
        .find(|k| k.api_key == ApiKey::Produce as i16)
        .unwrap();
    // KAFKA-18659: librdkafka only compresses when the broker lists Produce v0.
    assert_eq!(produce.min_version, 0);
    let records = batch(&["never stored"], 0);
    for version in 0..=2i16 {
        let mut payload = BytesMut::new();
        payload.put_i16(ApiKey::Produce as i16);
        payload.put_i16(version);
        payload.put_i32(70 + i32::from(version));
        payload.put_i16(-1); // v1 header: null client id
        payload.put_i16(1); // acks
        payload.put_i32(5_000);
        payload.put_i32(1);
        payload.put_i16(STORED_TOPIC.len() as i16);
        payload.put_slice(STORED_TOPIC.as_bytes());
        payload.put_i32(1);
        payload.put_i32(0);
        payload.put_i32(records.len() as i32);
        payload.put_slice(&records);
        client.send_frame(&payload);
        let mut body = client
            .read_frame()
            .expect("an answer, not a closed connection");
        assert_eq!(body.get_i32(), 70 + i32::from(version));
        assert_eq!(body.get_i32(), 1, "one topic");
        let name_length = body.get_i16() as usize;
        assert_eq!(&body.split_to(name_length)[..], STORED_TOPIC.as_bytes());
        assert_eq!(body.get_i32(), 1, "one partition");
        assert_eq!(body.get_i32(), 0);
        assert_eq!(body.get_i16(), ResponseError::UnsupportedVersion.code());
        assert_eq!(body.get_i64(), -1, "no base offset");
        if version >= 2 {
            assert_eq!(body.get_i64(), -1, "no log append time");
        }
        if version >= 1 {
            assert_eq!(body.get_i32(), 0, "throttle time");
        }
        assert!(!body.has_remaining(), "v{version}: trailing bytes");
    }
    broker.wait_logged("Produce v0-2 refused with UNSUPPORTED_VERSION");
    // Nothing was appended: the stored records are exactly as before.
    broker.assert_serving_and_intact();
}

#[test]
fn bad_input_on_one_connection_does_not_disturb_another() {
    let mut broker = BrokerProcess::start_with_known_records(&[]);
    let mut steady = broker.client();
    assert_eq!(steady.api_versions(3).error_code, 0);
    let mut bad = broker.client();
    bad.send_frame(&[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0]);
    assert!(bad.is_closed_by_broker());
    // The connection opened before the garbage keeps working, appends included.
    assert_eq!(
        steady.create_topics(vec![topic("other", 1)]).topics[0].error_code,
        0
    );
    let response = steady.produce("other", 0, batch(&["fine"], 0));
    assert_eq!(partition_error(&response), 0);
    let fetched = steady.fetch("other", 0, 0);
    assert_eq!(fetched.responses[0].partitions[0].high_watermark, 1);
    broker.assert_serving_and_intact();
}
