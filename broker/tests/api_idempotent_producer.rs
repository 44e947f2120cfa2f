//! Idempotent produce against a real broker process: a retried batch is acknowledged
//! with its original offset and not appended twice, a sequence gap is refused with
//! OUT_OF_ORDER_SEQUENCE_NUMBER, and both still hold after a SIGKILL and restart
//! (producer state is rebuilt from the log).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_testkit::client::topic;
use oxbow_testkit::{BrokerProcess, RawClient};

const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;

fn produce(client: &mut RawClient, producer: ProducerFields, records: usize) -> (i16, i64) {
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

fn log_end(client: &mut RawClient) -> i64 {
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
    let mut broker = BrokerProcess::start_temp(&[]);
    let mut client = broker.client();
    let created = client.create_topics(vec![topic("idem", 1)]);
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

    broker.sigkill();
    broker.restart(&[]);
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
