//! Idempotent produce against a real broker process: a retried batch is acknowledged
//! with its original offset and not appended twice, a sequence gap is refused with
//! OUT_OF_ORDER_SEQUENCE_NUMBER, and both still hold after a SIGKILL and restart
//! (producer state is rebuilt from the log).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use oxbow_broker::storage::batch_builder::{ProducerFields, SimpleRecord, build_batch};

const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;

fn produce(client: &mut common::RawClient, producer: ProducerFields, records: usize) -> (i16, i64) {
    let batch: Vec<SimpleRecord> = (0..records)
        .map(|i| SimpleRecord {
            value: Some(Bytes::from(format!("v{i}"))),
            timestamp: 1,
            ..Default::default()
        })
        .collect();
    let records = build_batch(&batch, Compression::None, producer)
        .unwrap()
        .freeze();
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("idem")))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records)),
                ]),
        ]);
    let response: ProduceResponse = client.request(ApiKey::Produce, 9, &request);
    let partition = &response.responses[0].partition_responses[0];
    (partition.error_code, partition.base_offset)
}

fn log_end(client: &mut common::RawClient) -> i64 {
    let request = ListOffsetsRequest::default().with_topics(vec![
        list_offsets_request::ListOffsetsTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("idem")))
            .with_partitions(vec![
                list_offsets_request::ListOffsetsPartition::default().with_timestamp(-1),
            ]),
    ]);
    let response: ListOffsetsResponse = client.request(ApiKey::ListOffsets, 7, &request);
    response.topics[0].partitions[0].offset
}

#[test]
fn duplicates_are_acknowledged_once_and_gaps_refused_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let broker = common::Broker::start(&data, &[]);
    let mut client = broker.client();
    let created: CreateTopicsResponse = client.request(
        ApiKey::CreateTopics,
        5,
        &CreateTopicsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("idem")))
                    .with_num_partitions(1)
                    .with_replication_factor(1),
            ]),
    );
    assert_eq!(created.topics[0].error_code, 0);
    let init: InitProducerIdResponse = client.request(
        ApiKey::InitProducerId,
        4,
        &InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    );
    assert_eq!(init.error_code, 0);
    let producer = |base_sequence| ProducerFields {
        producer_id: init.producer_id.0,
        producer_epoch: init.producer_epoch,
        base_sequence,
    };

    assert_eq!(produce(&mut client, producer(0), 3), (0, 0));
    assert_eq!(produce(&mut client, producer(3), 2), (0, 3));
    // A retry of the second batch: same offsets, nothing appended.
    assert_eq!(produce(&mut client, producer(3), 2), (0, 3));
    assert_eq!(log_end(&mut client), 5);
    // A gap: sequence 9 where 5 is expected.
    assert_eq!(
        produce(&mut client, producer(9), 1).0,
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert_eq!(log_end(&mut client), 5);

    let port = broker.port;
    broker.kill();
    let broker = common::Broker::start_on(&data, port, common::free_port(), &[]);
    let mut client = broker.client();
    assert_eq!(
        produce(&mut client, producer(3), 2),
        (0, 3),
        "duplicate detected after restart"
    );
    assert_eq!(
        produce(&mut client, producer(9), 1).0,
        OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert_eq!(produce(&mut client, producer(5), 1), (0, 5));
    assert_eq!(log_end(&mut client), 6);
}
