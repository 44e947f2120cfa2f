use super::*;

fn topic(name: &str, partitions: &[(i32, i64)]) -> FetchTopic {
    FetchTopic::default()
        .with_topic(TopicName(name.to_string().into()))
        .with_partitions(
            partitions
                .iter()
                .map(|&(partition, offset)| {
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                })
                .collect(),
        )
}

fn request(session_id: i32, epoch: i32, topics: Vec<FetchTopic>) -> FetchRequest {
    FetchRequest::default()
        .with_session_id(session_id)
        .with_session_epoch(epoch)
        .with_topics(topics)
}

fn key(name: &str, partition: i32) -> SessionKey {
    SessionKey {
        topic_id: Uuid::nil(),
        topic: TopicName(StrBytes::from_string(name.to_string())),
        partition,
    }
}

fn quiet(high_watermark: i64) -> Outcome {
    Outcome {
        has_records: false,
        high_watermark,
        log_start_offset: 0,
        last_stable_offset: 0,
        must_answer: false,
    }
}

/// (topic, partition, fetch offset) of a plan's partitions, in order.
fn listed(topics: &[FetchTopic]) -> Vec<(String, i32, i64)> {
    topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.topic.0.to_string(), p.partition, p.fetch_offset))
        })
        .collect()
}

fn open(sessions: &FetchSessions, topics: Vec<FetchTopic>) -> i32 {
    match sessions.plan(&request(0, 0, topics), 12) {
        FetchPlan::Full { session_id } => session_id,
        other => panic!("a full fetch was planned as {other:?}"),
    }
}

fn incremental(sessions: &FetchSessions, request: &FetchRequest) -> Vec<(String, i32, i64)> {
    match sessions.plan(request, 12) {
        FetchPlan::Incremental { session_id, topics } => {
            assert_eq!(session_id, request.session_id);
            listed(&topics)
        }
        other => panic!("an incremental fetch was planned as {other:?}"),
    }
}

#[test]
fn sessionless_requests_keep_no_session() {
    let sessions = FetchSessions::new(10);
    let topics = vec![topic("a", &[(0, 5)])];
    for (version, epoch) in [(6, 0), (12, -1)] {
        match sessions.plan(&request(0, epoch, topics.clone()), version) {
            FetchPlan::Full { session_id } => assert_eq!(session_id, 0),
            other => panic!("{other:?}"),
        }
    }
    assert!(sessions.is_empty());
}

#[test]
fn a_session_serves_incremental_fetches_and_checks_their_epochs() {
    let sessions = FetchSessions::new(10);
    let id = open(&sessions, vec![topic("a", &[(0, 5), (1, 7)])]);
    assert!(id > 0);
    assert_eq!(sessions.len(), 1);
    // Nothing changed: the session still fetches both partitions at their last positions.
    assert_eq!(
        incremental(&sessions, &request(id, 1, Vec::new())),
        vec![("a".into(), 0, 5), ("a".into(), 1, 7)]
    );
    // The same epoch again (a resend or a second client) is refused; so is a skipped one.
    for epoch in [1, 3] {
        assert!(matches!(
            sessions.plan(&request(id, epoch, Vec::new()), 12),
            FetchPlan::Refused(code) if code == ResponseError::InvalidFetchSessionEpoch.code()
        ));
    }
    // A changed position, a new partition, a forgotten one.
    let mut next = request(id, 2, vec![topic("a", &[(1, 9)]), topic("b", &[(0, 0)])]);
    next.forgotten_topics_data = vec![
        kafka_protocol::messages::fetch_request::ForgottenTopic::default()
            .with_topic(TopicName("a".to_string().into()))
            .with_partitions(vec![0]),
    ];
    assert_eq!(
        incremental(&sessions, &next),
        vec![("a".into(), 1, 9), ("b".into(), 0, 0)]
    );
    assert!(matches!(
        sessions.plan(&request(id + 1, 1, Vec::new()), 12),
        FetchPlan::Refused(code) if code == ResponseError::FetchSessionIdNotFound.code()
    ));
}

#[test]
fn incremental_answers_name_only_what_changed() {
    let sessions = FetchSessions::new(10);
    let id = open(
        &sessions,
        vec![topic("a", &[(0, 0), (1, 0), (2, 0), (3, 0)])],
    );
    let keys: Vec<SessionKey> = (0..4).map(|p| key("a", p)).collect();
    sessions.record_full(
        id,
        &keys
            .iter()
            .map(|k| (k.clone(), quiet(10)))
            .collect::<Vec<_>>(),
    );
    let _ = incremental(&sessions, &request(id, 1, Vec::new()));
    let outcomes = vec![
        (keys[0].clone(), quiet(10)),
        (keys[1].clone(), quiet(11)),
        (
            keys[2].clone(),
            Outcome {
                has_records: true,
                ..quiet(10)
            },
        ),
        (
            keys[3].clone(),
            Outcome {
                must_answer: true,
                ..quiet(10)
            },
        ),
    ];
    assert_eq!(
        sessions.select_changed(id, &outcomes),
        vec![false, true, true, true]
    );
    // The moved high watermark was told: the next answer leaves it out.
    let _ = incremental(&sessions, &request(id, 2, Vec::new()));
    let again: Vec<_> = keys.iter().map(|k| (k.clone(), quiet(11))).collect();
    assert_eq!(
        sessions.select_changed(id, &again),
        vec![true, false, true, true],
        "partitions 0, 2, 3 were last told 10, partition 1 was told 11"
    );
}

#[test]
fn partitions_that_returned_records_go_to_the_back() {
    let sessions = FetchSessions::new(10);
    let id = open(&sessions, vec![topic("a", &[(0, 0), (1, 0), (2, 0)])]);
    let mut outcomes: Vec<_> = (0..3).map(|p| (key("a", p), quiet(5))).collect();
    outcomes[0].1.has_records = true;
    sessions.record_full(id, &outcomes);
    assert_eq!(
        incremental(&sessions, &request(id, 1, Vec::new())),
        vec![("a".into(), 1, 0), ("a".into(), 2, 0), ("a".into(), 0, 0)]
    );
}

#[test]
fn full_fetches_close_sessions_and_the_least_recently_used_is_evicted() {
    let sessions = FetchSessions::new(2);
    let first = open(&sessions, vec![topic("a", &[(0, 0)])]);
    let second = open(&sessions, vec![topic("b", &[(0, 0)])]);
    // Using the first makes the second the least recently used.
    let _ = incremental(&sessions, &request(first, 1, Vec::new()));
    let third = open(&sessions, vec![topic("c", &[(0, 0)])]);
    assert_eq!(sessions.len(), 2);
    assert!(matches!(
        sessions.plan(&request(second, 1, Vec::new()), 12),
        FetchPlan::Refused(code) if code == ResponseError::FetchSessionIdNotFound.code()
    ));
    let _ = incremental(&sessions, &request(first, 2, Vec::new()));
    // Closing (epoch -1) is a sessionless full fetch; a full fetch naming a session
    // replaces it.
    match sessions.plan(&request(third, -1, vec![topic("c", &[(0, 3)])]), 12) {
        FetchPlan::Full { session_id } => assert_eq!(session_id, 0),
        other => panic!("{other:?}"),
    }
    assert_eq!(sessions.len(), 1);
    let replaced = match sessions.plan(&request(first, 0, vec![topic("a", &[(0, 4)])]), 12) {
        FetchPlan::Full { session_id } => session_id,
        other => panic!("{other:?}"),
    };
    assert_ne!(replaced, first);
    assert_eq!(sessions.len(), 1);
    let none = FetchSessions::new(0);
    assert_eq!(open(&none, vec![topic("a", &[(0, 0)])]), 0);
}

#[test]
fn epochs_wrap_past_the_full_fetch_markers() {
    assert_eq!(next_epoch(1), 2);
    assert_eq!(next_epoch(i32::MAX), 1);
}

#[test]
fn sessions_keep_their_own_copy_of_topic_names() {
    // A decoded request's names are views into its frame; a session must not pin the frame.
    let frame = bytes::Bytes::from_static(b"....orders....");
    let range = frame.as_ptr() as usize..frame.as_ptr() as usize + frame.len();
    let name = StrBytes::from_utf8(frame.slice(4..10)).expect("ASCII");
    let named = FetchTopic::default()
        .with_topic(TopicName(name))
        .with_partitions(vec![FetchPartition::default().with_partition(0)]);
    let sessions = FetchSessions::new(10);
    let id = open(&sessions, vec![named.clone()]);
    let inner = sessions.inner.lock();
    let session = &inner.sessions[&id];
    let kept: Vec<usize> = session
        .partitions
        .iter()
        .flat_map(|(key, cached)| [key.topic.as_ptr() as usize, cached.topic.as_ptr() as usize])
        .chain(session.order.iter().map(|key| key.topic.as_ptr() as usize))
        .collect();
    assert_eq!(kept.len(), 3);
    assert!(
        kept.iter().all(|ptr| !range.contains(ptr)),
        "{kept:?} in {range:?}"
    );
    // Lookups by a key viewing the request still find the partition.
    assert!(session.partitions.contains_key(&SessionKey::of(&named, 0)));
}
