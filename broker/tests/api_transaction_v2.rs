//! Transaction version 2 (KIP-890 part 2) against a real broker process and its own
//! transaction coordinator, over the raw protocol, as a Kafka 4 client speaks it:
//! ApiVersions finalizes `transaction.version` 2; a producer writes (Produce v12) and
//! commits offsets (TxnOffsetCommit v5) with no AddPartitionsToTxn or AddOffsetsToTxn,
//! the leader adding the partitions; EndTxn v5 bumps the epoch at every end and answers
//! the new one; a retried end is recognised by the epoch before the bump, across a
//! SIGKILL of the coordinator; the old epoch's late writes are fenced; an empty abort
//! hands out the next epoch. Downgraded to `transaction.version` 1 with UpdateFeatures,
//! the cluster offers the older protocol only, across a restart, until upgraded again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod txn_support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use oxbow_testkit::client::{name, topic};
use oxbow_testkit::{BrokerProcess, RawClient};
use txn_support::{batch, find_coordinator, init, latest, settled, until_coordinated};

const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const NOT_ENOUGH_REPLICAS: i16 = 19;
const PRODUCER_FENCED: i16 = 90;
const TOPIC: &str = "w";
const TXN: &str = "v2-txn";
const GROUP: &str = "v2-group";

fn txn_id() -> TransactionalId {
    TransactionalId(StrBytes::from_static_str(TXN))
}

/// Produce v12 (transaction version 2), retried while the leader says NOT_ENOUGH_REPLICAS
/// (the coordinator still writing the previous transaction's markers), as producers do.
fn produce(client: &mut RawClient, partition: i32, records: Bytes) -> i16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let request = ProduceRequest::default()
            .with_transactional_id(Some(txn_id()))
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(name("w"))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(partition)
                            .with_records(Some(records.clone())),
                    ]),
            ]);
        let response: ProduceResponse = client.request(ApiKey::Produce, 12, &request);
        let code = response.responses[0].partition_responses[0].error_code;
        if code != NOT_ENOUGH_REPLICAS || Instant::now() > deadline {
            return code;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// EndTxn v5 once (no retry): its code and the producer id and epoch it answers.
fn end_once(client: &mut RawClient, producer: (i64, i16), commit: bool) -> (i16, (i64, i16)) {
    let request = EndTxnRequest::default()
        .with_transactional_id(txn_id())
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_committed(commit);
    let response: EndTxnResponse = client.request(ApiKey::EndTxn, 5, &request);
    (
        response.error_code,
        (response.producer_id.0, response.producer_epoch),
    )
}

fn end(client: &mut RawClient, producer: (i64, i16), commit: bool) -> (i64, i16) {
    until_coordinated(|| end_once(client, producer, commit))
}

/// EndTxn v5's refusal, once the coordinator is done with the last end
/// (CONCURRENT_TRANSACTIONS is retried).
fn end_refused(client: &mut RawClient, producer: (i64, i16), commit: bool) -> i16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, _) = end_once(client, producer, commit);
        if code != 51 {
            return code;
        }
        assert!(
            Instant::now() < deadline,
            "still CONCURRENT_TRANSACTIONS after 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// TxnOffsetCommit v5 of `offset` for `w`-0, with no AddOffsetsToTxn before it.
fn txn_offset_commit(client: &mut RawClient, producer: (i64, i16), offset: i64) -> i16 {
    let request = TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id())
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                .with_name(name("w"))
                .with_partitions(vec![
                    txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset)
                        .with_committed_leader_epoch(-1),
                ]),
        ]);
    let response: TxnOffsetCommitResponse = client.request(ApiKey::TxnOffsetCommit, 5, &request);
    response.topics[0].partitions[0].error_code
}

/// The group's committed offset of `w`-0 (-1 when none).
fn committed_offset(client: &mut RawClient) -> i64 {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(name("w"))
                .with_partition_indexes(vec![0]),
        ]));
    let response: OffsetFetchResponse = client.request(ApiKey::OffsetFetch, 7, &request);
    response.topics[0].partitions[0].committed_offset
}

/// The transactional id's state and producer epoch (DescribeTransactions).
fn describe(client: &mut RawClient) -> (String, i16) {
    let request = DescribeTransactionsRequest::default().with_transactional_ids(vec![txn_id()]);
    let response: DescribeTransactionsResponse =
        client.request(ApiKey::DescribeTransactions, 0, &request);
    let state = &response.transaction_states[0];
    (state.transaction_state.to_string(), state.producer_epoch)
}

/// (max EndTxn version, supported transaction.version range, finalized level) from
/// ApiVersions v4.
fn versions(client: &mut RawClient) -> (i16, Option<(i16, i16)>, Option<i16>, i64) {
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("oxbow-test"))
        .with_client_software_version(StrBytes::from_static_str("1"));
    let response: ApiVersionsResponse = client.request(ApiKey::ApiVersions, 4, &request);
    assert_eq!(response.error_code, 0);
    let end_txn = response
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::EndTxn as i16)
        .map(|k| k.max_version)
        .unwrap();
    let supported = response
        .supported_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| (f.min_version, f.max_version));
    let finalized = response
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| {
            assert_eq!(f.min_version_level, f.max_version_level);
            f.max_version_level
        });
    (
        end_txn,
        supported,
        finalized,
        response.finalized_features_epoch,
    )
}

#[test]
fn version_2_producers_add_partitions_with_their_writes_and_every_end_bumps_the_epoch() {
    let mut broker = BrokerProcess::start_temp(&[
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "transaction.state.log.num.partitions=3",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=1",
    ]);
    let mut client = broker.client();
    let (end_txn_max, supported, finalized, epoch) = versions(&mut client);
    assert_eq!(end_txn_max, 5);
    assert_eq!(supported, Some((0, 2)));
    assert_eq!(finalized, Some(2), "transaction.version finalized at 2");
    assert!(epoch >= 0, "a valid finalized features epoch");
    assert_eq!(
        client.create_topics(vec![topic("w", 2)]).topics[0].error_code,
        0
    );
    find_coordinator(&mut client, 0, GROUP);
    let first = init(&mut client, TXN, 5);

    // No AddPartitionsToTxn: the leader adds each partition on the transaction's first
    // write there, and the transaction holds the last stable offset.
    assert_eq!(produce(&mut client, 0, batch(first, 0, 2)), 0);
    assert_eq!(produce(&mut client, 1, batch(first, 0, 1)), 0);
    assert_eq!(
        latest(&mut client, TOPIC, 0),
        (0, 2),
        "open: LSO held at its start"
    );
    assert_eq!(describe(&mut client), ("Ongoing".to_string(), first.1));
    // Offsets with no AddOffsetsToTxn: the group coordinator adds its partition.
    assert_eq!(txn_offset_commit(&mut client, first, 2), 0);
    assert_eq!(
        committed_offset(&mut client),
        -1,
        "pending until the commit"
    );

    let second = end(&mut client, first, true);
    assert_eq!(
        second,
        (first.0, first.1 + 1),
        "the epoch bumped by the commit"
    );
    assert_eq!(
        settled(&mut client, TOPIC, 0),
        3,
        "2 records and the COMMIT marker"
    );
    assert_eq!(settled(&mut client, TOPIC, 1), 2);
    let deadline = Instant::now() + Duration::from_secs(30);
    while committed_offset(&mut client) != 2 {
        assert!(
            Instant::now() < deadline,
            "the offsets never became visible"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // A retry of that commit names the epoch before the bump and gets the same answer;
    // the new epoch has nothing to commit.
    assert_eq!(end(&mut client, first, true), second);
    assert_eq!(end_refused(&mut client, second, true), INVALID_TXN_STATE);
    assert_eq!(end_refused(&mut client, first, false), INVALID_TXN_STATE);

    // A late write of the old epoch is fenced and opens nothing.
    assert_eq!(
        produce(&mut client, 0, batch(first, 2, 1)),
        INVALID_PRODUCER_EPOCH
    );
    assert_eq!(latest(&mut client, TOPIC, 0), (3, 3));

    // The next transaction starts its sequences again under the new epoch; aborted, its
    // records are gone, and the abort bumps the epoch again.
    assert_eq!(produce(&mut client, 0, batch(second, 0, 3)), 0);
    let third = end(&mut client, second, false);
    assert_eq!(third, (first.0, first.1 + 2));
    assert_eq!(
        settled(&mut client, TOPIC, 0),
        7,
        "3 aborted records and the ABORT marker"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while describe(&mut client) != ("CompleteAbort".to_string(), third.1) {
        assert!(
            Instant::now() < deadline,
            "never CompleteAbort at the bumped epoch"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // An empty abort with the current epoch hands out the next one.
    let fourth = end(&mut client, third, false);
    assert_eq!(fourth, (first.0, first.1 + 3));
    assert_eq!(end_refused(&mut client, first, false), PRODUCER_FENCED);

    // The coordinator's state (transaction version, epochs) survives a SIGKILL: the
    // retry of the empty abort is still recognised.
    broker.sigkill();
    broker.restart(&[]);
    let mut client = broker.client();
    find_coordinator(&mut client, 1, TXN);
    assert_eq!(end(&mut client, third, false), fourth);
    assert_eq!(produce(&mut client, 1, batch(fourth, 0, 1)), 0);
    let fifth = end(&mut client, fourth, true);
    assert_eq!(fifth, (first.0, first.1 + 4));
    assert_eq!(settled(&mut client, TOPIC, 1), 4);

    // `kafka-features downgrade --feature transaction.version=1`: finalized 1 in the
    // metadata log, so the broker offers EndTxn up to v4 and Kafka 4 clients keep to the
    // older protocol, across a restart; a plain upgrade request cannot lower it, and the
    // finalized features epoch moves forward with the change.
    assert_eq!(
        update_feature(&mut client, "transaction.version", 1, 1),
        (INVALID_UPDATE_VERSION, true),
        "a downgrade needs the downgrade type"
    );
    assert_eq!(
        update_feature(&mut client, "transaction.version", 1, 2),
        (0, false)
    );
    let (end_txn_max, supported, finalized, later_epoch) = versions(&mut client);
    assert_eq!(
        (end_txn_max, supported, finalized),
        (4, Some((0, 2)), Some(1))
    );
    assert!(later_epoch > epoch, "{later_epoch} after {epoch}");
    broker.stop();
    broker.restart(&[]);
    let mut client = broker.client();
    let (end_txn_max, _, finalized, _) = versions(&mut client);
    assert_eq!((end_txn_max, finalized), (4, Some(1)));
    assert_eq!(
        update_feature(&mut client, "transaction.version", 3, 1),
        (INVALID_UPDATE_VERSION, true),
        "a level beyond the supported range"
    );
    assert_eq!(
        update_feature(&mut client, "transaction.version", 2, 1),
        (0, false)
    );
    assert_eq!(versions(&mut client).2, Some(2));
}

const INVALID_UPDATE_VERSION: i16 = 95;

/// UpdateFeatures v1 for one feature (`upgrade_type` 1 upgrade, 2 safe downgrade): the
/// error code and whether a message came with it.
fn update_feature(client: &mut RawClient, name: &str, level: i16, upgrade_type: i8) -> (i16, bool) {
    let request = UpdateFeaturesRequest::default()
        .with_timeout_ms(30_000)
        .with_feature_updates(vec![
            FeatureUpdateKey::default()
                .with_feature(StrBytes::from_string(name.into()))
                .with_max_version_level(level)
                .with_upgrade_type(upgrade_type),
        ]);
    let response: UpdateFeaturesResponse = client.request(ApiKey::UpdateFeatures, 1, &request);
    assert_eq!(response.results.len(), 1, "v1 answers per feature");
    assert_eq!(response.results[0].error_code, response.error_code);
    (response.error_code, response.error_message.is_some())
}
