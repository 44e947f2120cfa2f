//! Transaction verification at the partition leader (KIP-890 part 1), against a real
//! broker process and its own transaction coordinator, over the raw protocol: a
//! transactional write to a partition the producer did not add to its transaction is
//! INVALID_TXN_STATE and opens nothing; a late write of a transaction that already ended
//! is refused the same way (no hanging transaction holds the last stable offset); writes
//! inside the transaction pass; transactional records need a transactional id; clients
//! that know TRANSACTION_ABORTABLE are told it; a TxnOffsetCommit for a group the
//! transaction did not add (no AddOffsetsToTxn) is refused the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod txn_support;

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use oxbow_testkit::client::{name, topic};
use oxbow_testkit::{BrokerProcess, RawClient};
use txn_support::{batch, find_coordinator, init, latest, settled, until_coordinated};

const INVALID_TXN_STATE: i16 = 48;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const TRANSACTION_ABORTABLE: i16 = 120;
const TOPIC: &str = "v";
const TXN: &str = "verified-txn";

fn txn_id() -> TransactionalId {
    TransactionalId(StrBytes::from_static_str(TXN))
}

fn produce(client: &mut RawClient, id: Option<&str>, partition: i32, records: Bytes) -> i16 {
    produce_at(client, 9, id, partition, records)
}

fn produce_at(
    client: &mut RawClient,
    version: i16,
    id: Option<&str>,
    partition: i32,
    records: Bytes,
) -> i16 {
    let request = ProduceRequest::default()
        .with_transactional_id(id.map(|id| TransactionalId(StrBytes::from_string(id.into()))))
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name("v"))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records)),
                ]),
        ]);
    let response: ProduceResponse = client.request(ApiKey::Produce, version, &request);
    response.responses[0].partition_responses[0].error_code
}

fn add_partitions(client: &mut RawClient, producer: (i64, i16), partitions: &[i32]) {
    until_coordinated(|| {
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(txn_id())
            .with_v3_and_below_producer_id(ProducerId(producer.0))
            .with_v3_and_below_producer_epoch(producer.1)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(name("v"))
                    .with_partitions(partitions.to_vec()),
            ]);
        let response: AddPartitionsToTxnResponse =
            client.request(ApiKey::AddPartitionsToTxn, 3, &request);
        let codes: Vec<i16> = response.results_by_topic_v3_and_below[0]
            .results_by_partition
            .iter()
            .map(|p| p.partition_error_code)
            .collect();
        (codes.iter().copied().find(|c| *c != 0).unwrap_or(0), ())
    });
}

fn end(client: &mut RawClient, producer: (i64, i16), commit: bool) {
    until_coordinated(|| {
        let request = EndTxnRequest::default()
            .with_transactional_id(txn_id())
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1)
            .with_committed(commit);
        let response: EndTxnResponse = client.request(ApiKey::EndTxn, 3, &request);
        (response.error_code, ())
    });
}

/// TxnOffsetCommit at `version` of offset 5 of `v`-0 for group `g`; its code.
fn txn_offset_commit(client: &mut RawClient, producer: (i64, i16), version: i16) -> i16 {
    let request = TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id())
        .with_group_id(GroupId(StrBytes::from_static_str("g")))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                .with_name(name("v"))
                .with_partitions(vec![
                    txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(5)
                        .with_committed_leader_epoch(-1),
                ]),
        ]);
    let response: TxnOffsetCommitResponse =
        client.request(ApiKey::TxnOffsetCommit, version, &request);
    response.topics[0].partitions[0].error_code
}

fn add_offsets(client: &mut RawClient, producer: (i64, i16)) {
    until_coordinated(|| {
        let request = AddOffsetsToTxnRequest::default()
            .with_transactional_id(txn_id())
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1)
            .with_group_id(GroupId(StrBytes::from_static_str("g")));
        let response: AddOffsetsToTxnResponse =
            client.request(ApiKey::AddOffsetsToTxn, 3, &request);
        (response.error_code, ())
    });
}

#[test]
fn only_writes_of_the_ongoing_transaction_open_it_at_a_partition() {
    let broker = BrokerProcess::start_temp(&[
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "transaction.state.log.num.partitions=3",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=1",
    ]);
    let mut client = broker.client();
    assert_eq!(
        client.create_topics(vec![topic("v", 2)]).topics[0].error_code,
        0
    );
    let producer = init(&mut client, TXN, 4);

    // Partition 0 is in the transaction; partition 1 is not.
    add_partitions(&mut client, producer, &[0]);
    assert_eq!(produce(&mut client, Some(TXN), 0, batch(producer, 0, 2)), 0);
    assert_eq!(
        produce(&mut client, Some(TXN), 1, batch(producer, 0, 2)),
        INVALID_TXN_STATE,
        "a write to a partition the transaction did not add"
    );
    assert_eq!(
        latest(&mut client, TOPIC, 1),
        (0, 0),
        "nothing written, no transaction opened"
    );
    // Later writes of the open transaction need no new check.
    assert_eq!(produce(&mut client, Some(TXN), 0, batch(producer, 2, 1)), 0);
    // Transactional records need a transactional id.
    assert_eq!(
        produce(&mut client, None, 0, batch(producer, 3, 1)),
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    assert_eq!(
        latest(&mut client, TOPIC, 0),
        (0, 3),
        "the transaction is open"
    );

    end(&mut client, producer, true);
    let end_offset = settled(&mut client, TOPIC, 0);
    assert_eq!(end_offset, 4, "3 records and the COMMIT marker");

    // A write of the ended transaction arriving late opens nothing.
    assert_eq!(
        produce(&mut client, Some(TXN), 0, batch(producer, 3, 1)),
        INVALID_TXN_STATE,
        "a late write after the commit"
    );
    assert_eq!(
        latest(&mut client, TOPIC, 0),
        (4, 4),
        "no hanging transaction"
    );

    // The next transaction adds both partitions and writes to both; aborted, it is gone.
    add_partitions(&mut client, producer, &[0, 1]);
    assert_eq!(produce(&mut client, Some(TXN), 0, batch(producer, 3, 1)), 0);
    assert_eq!(produce(&mut client, Some(TXN), 1, batch(producer, 0, 1)), 0);
    end(&mut client, producer, false);
    assert_eq!(settled(&mut client, TOPIC, 0), 6);
    assert_eq!(settled(&mut client, TOPIC, 1), 2);

    // Clients that know TRANSACTION_ABORTABLE (Produce v11) are told it instead.
    assert_eq!(
        produce_at(&mut client, 11, Some(TXN), 1, batch(producer, 1, 1)),
        TRANSACTION_ABORTABLE
    );
    assert_eq!(latest(&mut client, TOPIC, 1), (2, 2), "nothing opened");

    // Offsets of a group the transaction did not add (no AddOffsetsToTxn) are refused,
    // instead of waiting forever for a marker; once added, they are taken.
    find_coordinator(&mut client, 0, "g");
    add_partitions(&mut client, producer, &[0]);
    assert_eq!(
        txn_offset_commit(&mut client, producer, 3),
        INVALID_TXN_STATE
    );
    assert_eq!(
        txn_offset_commit(&mut client, producer, 4),
        TRANSACTION_ABORTABLE
    );
    add_offsets(&mut client, producer);
    assert_eq!(txn_offset_commit(&mut client, producer, 3), 0);
    end(&mut client, producer, true);
}
