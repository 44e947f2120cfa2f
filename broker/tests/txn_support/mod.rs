//! What the transaction tests share: transactional batches, reading the last stable
//! offset, and waiting for a transaction coordinator, over the raw protocol.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_transactional_batch};
use oxbow_testkit::RawClient;
use oxbow_testkit::client::name;

/// A transactional batch of `count` records of `producer` (id, epoch) from `sequence`.
pub fn batch(producer: (i64, i16), sequence: i32, count: usize) -> Bytes {
    let records: Vec<SimpleRecord> = (0..count)
        .map(|i| SimpleRecord {
            value: Some(Bytes::from(format!("r-{}-{sequence}-{i}", producer.1))),
            timestamp: 1,
            ..Default::default()
        })
        .collect();
    build_transactional_batch(
        &records,
        Compression::None,
        ProducerFields {
            producer_id: producer.0,
            producer_epoch: producer.1,
            base_sequence: sequence,
        },
    )
    .unwrap()
    .freeze()
}

/// LATEST of `topic`-`partition` at read_committed and at read_uncommitted.
pub fn latest(client: &mut RawClient, topic: &str, partition: i32) -> (i64, i64) {
    let mut at = |isolation: i8| {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(isolation)
            .with_topics(vec![
                ListOffsetsTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![
                        ListOffsetsPartition::default()
                            .with_partition_index(partition)
                            .with_timestamp(-1),
                    ]),
            ]);
        let response: ListOffsetsResponse = client.request(ApiKey::ListOffsets, 5, &request);
        response.topics[0].partitions[0].offset
    };
    (at(1), at(0))
}

/// Waits until `topic`-`partition`'s markers are in (its last stable offset caught up
/// with its end); its end offset.
pub fn settled(client: &mut RawClient, topic: &str, partition: i32) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (stable, end) = latest(client, topic, partition);
        if stable == end {
            return end;
        }
        assert!(Instant::now() < deadline, "markers not written after 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Retries a coordinator request while the coordinator is created, loaded or busy.
pub fn until_coordinated<T>(mut call: impl FnMut() -> (i16, T)) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, value) = call();
        if code == 0 {
            return value;
        }
        // COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
        // CONCURRENT_TRANSACTIONS: the coordinator is on its way.
        assert!(
            [15, 16, 14, 51].contains(&code),
            "unexpected coordinator error {code}"
        );
        assert!(Instant::now() < deadline, "no coordinator after 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// FindCoordinator of `key` (0 group, 1 transactional id), until there is one: the first
/// creates `__consumer_offsets` / `__transaction_state`.
pub fn find_coordinator(client: &mut RawClient, key_type: i8, key: &'static str) {
    until_coordinated(|| {
        let request = FindCoordinatorRequest::default()
            .with_key_type(key_type)
            .with_coordinator_keys(vec![StrBytes::from_static_str(key)]);
        let response: FindCoordinatorResponse =
            client.request(ApiKey::FindCoordinator, 4, &request);
        (response.coordinators[0].error_code, ())
    });
}

/// InitProducerId (at `version`) of transactional id `id`, once it has a coordinator.
pub fn init(client: &mut RawClient, id: &'static str, version: i16) -> (i64, i16) {
    find_coordinator(client, 1, id);
    until_coordinated(|| {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str(id))))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let response: InitProducerIdResponse =
            client.request(ApiKey::InitProducerId, version, &request);
        (
            response.error_code,
            (response.producer_id.0, response.producer_epoch),
        )
    })
}
