//! Incremental fetch sessions (KIP-227) against a real broker process, spoken as the Java
//! client speaks them (Fetch v12, by topic name): a full fetch opens a session; an
//! incremental fetch sends nothing for unchanged partitions and hears only about the
//! partitions with news; a parked incremental fetch wakes for an append to a partition it
//! did not name; wrong epochs and unknown sessions get Kafka's errors; forgotten
//! partitions leave the session; epoch -1 closes it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::*;
use oxbow_testkit::client::{batch, name, topic};
use oxbow_testkit::{BrokerProcess, RawClient};

const FETCH_V12: i16 = 12;
const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

fn partition(index: i32, offset: i64) -> FetchPartition {
    FetchPartition::default()
        .with_partition(index)
        .with_fetch_offset(offset)
        .with_partition_max_bytes(1024 * 1024)
}

fn fetch(
    client: &mut RawClient,
    session: (i32, i32),
    partitions: Vec<FetchPartition>,
    forgotten: Vec<i32>,
    max_wait_ms: i32,
) -> FetchResponse {
    let mut request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(max_wait_ms)
        .with_min_bytes(1)
        .with_max_bytes(8 * 1024 * 1024)
        .with_session_id(session.0)
        .with_session_epoch(session.1);
    if !partitions.is_empty() {
        request.topics = vec![
            FetchTopic::default()
                .with_topic(name("sessions"))
                .with_partitions(partitions),
        ];
    }
    if !forgotten.is_empty() {
        request.forgotten_topics_data = vec![
            ForgottenTopic::default()
                .with_topic(name("sessions"))
                .with_partitions(forgotten),
        ];
    }
    client.request(ApiKey::Fetch, FETCH_V12, &request)
}

/// (partition, record bytes, high watermark) of every partition in the response.
fn answered(response: &FetchResponse) -> Vec<(i32, usize, i64)> {
    let mut out: Vec<_> = response
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            (
                p.partition_index,
                p.records.as_ref().map_or(0, |r| r.len()),
                p.high_watermark,
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn incremental_fetches_send_and_answer_only_what_changed() {
    let broker = BrokerProcess::start_temp(&[]);
    let mut client = broker.client();
    let created = client.create_topics(vec![topic("sessions", 3)]);
    assert_eq!(created.topics[0].error_code, 0);
    for p in 0..3 {
        let produced = client.produce("sessions", p, batch(&["a", "b"], 10));
        assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
    }

    // Full fetch, epoch 0: a session is opened and every partition is answered.
    let full = fetch(
        &mut client,
        (0, 0),
        (0..3).map(|p| partition(p, 0)).collect(),
        Vec::new(),
        0,
    );
    assert_eq!(full.error_code, 0);
    let id = full.session_id;
    assert!(id > 0, "no session opened: {full:?}");
    let all = answered(&full);
    assert_eq!(all.len(), 3);
    assert!(
        all.iter().all(|(_, bytes, hw)| *bytes > 0 && *hw == 2),
        "{all:?}"
    );

    // The client moved to offset 2 everywhere and says so; nothing new: no partitions.
    let caught_up = fetch(
        &mut client,
        (id, 1),
        (0..3).map(|p| partition(p, 2)).collect(),
        Vec::new(),
        0,
    );
    assert_eq!((caught_up.error_code, caught_up.session_id), (0, id));
    assert_eq!(answered(&caught_up), Vec::new());

    // An append to partition 1: the next incremental fetch names no partition and hears
    // about partition 1 only.
    client.produce("sessions", 1, batch(&["c"], 10));
    let news = fetch(&mut client, (id, 2), Vec::new(), Vec::new(), 0);
    let news = answered(&news);
    assert_eq!(news.len(), 1, "{news:?}");
    assert_eq!((news[0].0, news[0].2), (1, 3));
    assert!(news[0].1 > 0);

    // A parked incremental fetch wakes for an append to a partition it did not name.
    let producer_port = broker.port;
    let appender = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        RawClient::connect(producer_port).produce("sessions", 2, batch(&["d"], 10))
    });
    let woken = fetch(
        &mut client,
        (id, 3),
        vec![partition(1, 3)],
        Vec::new(),
        10_000,
    );
    assert_eq!(
        appender.join().unwrap().responses[0].partition_responses[0].error_code,
        0
    );
    let woken = answered(&woken);
    assert_eq!(woken.len(), 1, "{woken:?}");
    assert_eq!((woken[0].0, woken[0].2), (2, 3));

    // The same epoch again, and an unknown session: Kafka's errors, no partitions.
    let stale = fetch(&mut client, (id, 3), Vec::new(), Vec::new(), 0);
    assert_eq!(stale.error_code, INVALID_FETCH_SESSION_EPOCH);
    assert!(stale.responses.is_empty());
    let unknown = fetch(&mut client, (id ^ 0x5555, 1), Vec::new(), Vec::new(), 0);
    assert_eq!(unknown.error_code, FETCH_SESSION_ID_NOT_FOUND);

    // Forget partition 2 and rewind partition 0: only partition 0 answers, with records.
    client.produce("sessions", 2, batch(&["e"], 10));
    let rewound = fetch(&mut client, (id, 4), vec![partition(0, 0)], vec![2], 0);
    let rewound = answered(&rewound);
    assert_eq!(rewound.len(), 1, "{rewound:?}");
    assert_eq!(rewound[0].0, 0);
    assert!(rewound[0].1 > 0);

    // Epoch -1 closes the session: a sessionless full answer, and the session is gone.
    let closed = fetch(&mut client, (id, -1), vec![partition(0, 2)], Vec::new(), 0);
    assert_eq!((closed.error_code, closed.session_id), (0, 0));
    assert_eq!(answered(&closed).len(), 1);
    let after = fetch(&mut client, (id, 5), Vec::new(), Vec::new(), 0);
    assert_eq!(after.error_code, FETCH_SESSION_ID_NOT_FOUND);
}
