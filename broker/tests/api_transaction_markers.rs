//! The data path of transactions against a real broker process, with the coordinator's
//! part played by the test (InitProducerId, then WriteTxnMarkers as a coordinator sends
//! it): transactional batches of two producers across three partitions hold the last
//! stable offset back until their markers are written; a `read_committed` Fetch stops
//! there and names the aborted transaction of its range; ListOffsets agrees; a marker of
//! a stale epoch and a client's own control batch are refused; all of it is rebuilt
//! from the log after a SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{
    ProducerFields, SimpleRecord, build_batch, build_marker, build_transactional_batch,
};
use oxbow_testkit::client::{name, topic};
use oxbow_testkit::{BrokerProcess, RawClient};

/// The coordinator is the test's: the broker does not verify transactional writes with
/// its own (KIP-890 part 1 is `api_transaction_verification`'s).
const UNVERIFIED: &[&str] = &["transaction.partition.verification.enable=false"];
const INVALID_PRODUCER_EPOCH: i16 = 47;
const TRANSACTION_COORDINATOR_FENCED: i16 = 52;
const INVALID_RECORD: i16 = 87;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn records(prefix: &str, count: usize) -> Vec<SimpleRecord> {
    (0..count)
        .map(|i| SimpleRecord {
            value: Some(Bytes::from(format!("{prefix}-{i}"))),
            timestamp: 1,
            ..Default::default()
        })
        .collect()
}

fn produce(client: &mut RawClient, partition: i32, batch: Bytes) -> (i16, i64) {
    // The test plays the coordinator: its transactional id is not checked with one.
    let request = ProduceRequest::default()
        .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(
            "played-by-the-test",
        ))))
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name("txn"))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(batch)),
                ]),
        ]);
    let response: ProduceResponse = client.request(ApiKey::Produce, 9, &request);
    let partition = &response.responses[0].partition_responses[0];
    (partition.error_code, partition.base_offset)
}

fn transactional(producer: (i64, i16), sequence: i32, prefix: &str, count: usize) -> Bytes {
    build_transactional_batch(
        &records(prefix, count),
        Compression::Lz4,
        ProducerFields {
            producer_id: producer.0,
            producer_epoch: producer.1,
            base_sequence: sequence,
        },
    )
    .unwrap()
    .freeze()
}

fn init_producer(client: &mut RawClient) -> (i64, i16) {
    let init: InitProducerIdResponse = client.request(
        ApiKey::InitProducerId,
        4,
        &InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1),
    );
    assert_eq!(init.error_code, 0);
    (init.producer_id.0, init.producer_epoch)
}

/// Writes one marker to `partitions` of `txn`; the error code of each.
fn write_markers(
    client: &mut RawClient,
    producer: (i64, i16),
    commit: bool,
    partitions: &[i32],
) -> Vec<i16> {
    write_markers_as(client, 0, producer, commit, partitions)
}

/// `write_markers` from a coordinator of epoch `coordinator_epoch`.
fn write_markers_as(
    client: &mut RawClient,
    coordinator_epoch: i32,
    producer: (i64, i16),
    commit: bool,
    partitions: &[i32],
) -> Vec<i16> {
    let request = WriteTxnMarkersRequest::default().with_markers(vec![
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1)
            .with_transaction_result(commit)
            .with_coordinator_epoch(coordinator_epoch)
            .with_topics(vec![
                WritableTxnMarkerTopic::default()
                    .with_name(name("txn"))
                    .with_partition_indexes(partitions.to_vec()),
            ]),
    ]);
    let response: WriteTxnMarkersResponse = client.request(ApiKey::WriteTxnMarkers, 1, &request);
    response.markers[0].topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// A Fetch of partition `partition` from 0 at `isolation` (0 uncommitted, 1 committed):
/// (high watermark, last stable offset, aborted transactions as (producer, first offset),
/// the offsets of the data records returned).
fn fetch(
    client: &mut RawClient,
    partition: i32,
    isolation: i8,
) -> (i64, i64, Vec<(i64, i64)>, Vec<i64>) {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_isolation_level(isolation)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(name("txn"))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let response: FetchResponse = client.request(ApiKey::Fetch, 12, &request);
    let data = &response.responses[0].partitions[0];
    assert_eq!(data.error_code, 0);
    let aborted = data
        .aborted_transactions
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect();
    let mut bytes = data.records.clone().unwrap_or_default();
    let mut offsets = Vec::new();
    if !bytes.is_empty() {
        let batches = kafka_protocol::records::RecordBatchDecoder::decode_all(&mut bytes).unwrap();
        for batch in batches {
            for record in batch.records {
                if !record.control {
                    offsets.push(record.offset);
                }
            }
        }
    }
    (
        data.high_watermark,
        data.last_stable_offset,
        aborted,
        offsets,
    )
}

fn latest(client: &mut RawClient, partition: i32, isolation: i8) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_isolation_level(isolation)
        .with_topics(vec![
            list_offsets_request::ListOffsetsTopic::default()
                .with_name(name("txn"))
                .with_partitions(vec![
                    list_offsets_request::ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(-1),
                ]),
        ]);
    let response: ListOffsetsResponse = client.request(ApiKey::ListOffsets, 7, &request);
    response.topics[0].partitions[0].offset
}

#[test]
fn markers_decide_what_read_committed_consumers_see_across_restarts() {
    let mut broker = BrokerProcess::start_temp(UNVERIFIED);
    let mut client = broker.client();
    assert_eq!(
        client.create_topics(vec![topic("txn", 3)]).topics[0].error_code,
        0
    );
    let a = init_producer(&mut client);
    let b = init_producer(&mut client);

    // Partition 0: 3 of A (0-2), 2 of B (3-4), 2 plain (5-6). Partition 1: A. Partition 2: B.
    assert_eq!(produce(&mut client, 0, transactional(a, 0, "a", 3)), (0, 0));
    assert_eq!(produce(&mut client, 0, transactional(b, 0, "b", 2)), (0, 3));
    let plain = build_batch(
        &records("plain", 2),
        Compression::None,
        ProducerFields::default(),
    )
    .unwrap()
    .freeze();
    assert_eq!(produce(&mut client, 0, plain), (0, 5));
    assert_eq!(produce(&mut client, 1, transactional(a, 0, "a", 2)), (0, 0));
    assert_eq!(produce(&mut client, 2, transactional(b, 0, "b", 2)), (0, 0));

    // Undecided: read_committed sees nothing past A's first record; read_uncommitted all.
    let (hw, lso, _, seen) = fetch(&mut client, 0, 1);
    assert_eq!((hw, lso), (7, 0));
    assert!(
        seen.is_empty(),
        "read_committed saw {seen:?} of open transactions"
    );
    assert_eq!(fetch(&mut client, 0, 0).3, (0..7).collect::<Vec<_>>());
    assert_eq!(
        (latest(&mut client, 0, 1), latest(&mut client, 0, 0)),
        (0, 7)
    );

    // A client may not write markers itself.
    let forged = build_marker(b.0, b.1, true, 0, 1).unwrap().freeze();
    assert_eq!(produce(&mut client, 0, forged).0, INVALID_RECORD);

    // The coordinator commits A and aborts B.
    assert_eq!(write_markers(&mut client, a, true, &[0, 1]), vec![0, 0]);
    assert_eq!(write_markers(&mut client, b, false, &[0, 2]), vec![0, 0]);
    let check = |client: &mut RawClient| {
        // Partition 0 now: A 0-2, B 3-4, plain 5-6, A's COMMIT 7, B's ABORT 8.
        let (hw, lso, aborted, seen) = fetch(client, 0, 1);
        assert_eq!((hw, lso), (9, 9));
        assert_eq!(aborted, vec![(b.0, 3)], "B's aborted transaction named");
        // The broker returns B's batch; the client drops it by the aborted list.
        assert_eq!(seen, (0..7).collect::<Vec<_>>());
        assert_eq!(latest(client, 0, 1), 9);
        assert!(fetch(client, 1, 1).2.is_empty());
        assert_eq!(fetch(client, 2, 1).2, vec![(b.0, 0)]);
    };
    check(&mut client);
    assert_eq!(fetch(&mut client, 1, 1).1, 3);

    // A marker of an older epoch than the producer's is a zombie coordinator's.
    let bumped = (a.0, a.1 + 1);
    assert_eq!(
        produce(&mut client, 1, transactional(bumped, 0, "a2", 1)).0,
        0
    );
    assert_eq!(
        write_markers(&mut client, a, false, &[1]),
        vec![INVALID_PRODUCER_EPOCH]
    );
    assert_eq!(fetch(&mut client, 1, 1).1, 3, "A's new transaction is open");
    assert_eq!(write_markers(&mut client, bumped, true, &[1]), vec![0]);
    // Markers for a partition that does not exist.
    assert_eq!(
        write_markers(&mut client, bumped, true, &[7]),
        vec![UNKNOWN_TOPIC_OR_PARTITION]
    );

    broker.sigkill();
    broker.restart(UNVERIFIED);
    let mut client = broker.client();
    check(&mut client);
    assert_eq!(fetch(&mut client, 1, 1).1, 5);

    // A deposed coordinator's late marker (an older coordinator epoch than the last
    // marker's) must not end the producer's next transaction.
    assert_eq!(
        produce(&mut client, 1, transactional(bumped, 1, "a3", 1)),
        (0, 5)
    );
    assert_eq!(
        write_markers_as(&mut client, 3, bumped, true, &[1]),
        vec![0]
    );
    assert_eq!(
        produce(&mut client, 1, transactional(bumped, 2, "a4", 1)),
        (0, 7)
    );
    assert_eq!(
        write_markers_as(&mut client, 2, bumped, false, &[1]),
        vec![TRANSACTION_COORDINATOR_FENCED]
    );
    assert_eq!(
        fetch(&mut client, 1, 1).1,
        7,
        "the next transaction is open"
    );
    assert_eq!(
        write_markers_as(&mut client, 3, bumped, true, &[1]),
        vec![0]
    );
    assert_eq!(fetch(&mut client, 1, 1).1, 9);
}
