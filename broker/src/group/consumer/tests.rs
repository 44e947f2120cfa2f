//! The KIP-848 state machine: joins, revocation before re-assignment, leaving, expiry.

use super::*;

fn topics() -> TopicsView {
    TopicsView::from([("t".to_string(), (Uuid::from_u128(1), 6))])
}

fn join(group: &mut ConsumerGroup, id: &str, now: i64) -> HeartbeatResponse {
    group
        .heartbeat(
            HeartbeatRequest {
                member_id: id.into(),
                member_epoch: 0,
                rebalance_timeout_ms: 30_000,
                subscribed_topic_names: Some(vec!["t".into()]),
                owned: Some(Assignment::new()),
                ..HeartbeatRequest::default()
            },
            &topics(),
            now,
        )
        .unwrap()
}

fn beat(
    group: &mut ConsumerGroup,
    id: &str,
    epoch: i32,
    owned: Option<Assignment>,
    now: i64,
) -> Result<HeartbeatResponse, GroupError> {
    group.heartbeat(
        HeartbeatRequest {
            member_id: id.into(),
            member_epoch: epoch,
            owned,
            ..HeartbeatRequest::default()
        },
        &topics(),
        now,
    )
}

fn count(assignment: &Assignment) -> usize {
    assignment.values().map(BTreeSet::len).sum()
}

#[test]
fn a_second_member_gets_partitions_only_after_revocation() {
    let mut group = ConsumerGroup::new(0);
    let a = join(&mut group, "a", 0);
    assert_eq!(a.member_epoch, 1);
    let a_owned = a.assignment.unwrap();
    assert_eq!(count(&a_owned), 6);
    let b = join(&mut group, "b", 10);
    assert_eq!(b.member_epoch, 2);
    // Everything is still owned by a: b gets nothing yet.
    assert_eq!(b.assignment.map(|x| count(&x)), Some(0));
    // a is told to keep 3 (revoke 3) at its old epoch.
    let a2 = beat(&mut group, "a", 1, None, 20).unwrap();
    assert_eq!(a2.member_epoch, 1);
    let keep = a2.assignment.unwrap();
    assert_eq!(count(&keep), 3);
    assert_eq!(group.state_name(), "Reconciling");
    // a acknowledges; it moves to epoch 2; then b picks up the freed partitions.
    let a3 = beat(&mut group, "a", 1, Some(keep.clone()), 30).unwrap();
    assert_eq!(a3.member_epoch, 2);
    let b2 = beat(&mut group, "b", 2, None, 40).unwrap();
    let b_owned = b2.assignment.unwrap();
    assert_eq!(count(&b_owned), 3);
    assert!(
        intersect(&keep, &b_owned).is_empty(),
        "no partition owned twice"
    );
    assert_eq!(group.state_name(), "Stable");
    assert_eq!(group.rebalances_completed.len(), 2);
}

#[test]
fn fencing_and_unknown_members() {
    let mut group = ConsumerGroup::new(0);
    join(&mut group, "a", 0);
    assert_eq!(
        beat(&mut group, "a", 7, None, 1),
        Err(GroupError::FencedMemberEpoch)
    );
    assert_eq!(
        beat(&mut group, "zz", 1, None, 1),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(
        group.validate_commit("a", 5),
        Err(GroupError::StaleMemberEpoch)
    );
    assert_eq!(group.validate_commit("a", 1), Ok(()));
    let bad = group.heartbeat(
        HeartbeatRequest {
            member_id: "x".into(),
            server_assignor: Some("nope".into()),
            ..HeartbeatRequest::default()
        },
        &topics(),
        1,
    );
    assert_eq!(bad, Err(GroupError::UnsupportedAssignor));
}

#[test]
fn leaving_and_expiry_free_partitions() {
    let mut group = ConsumerGroup::new(0);
    join(&mut group, "a", 0);
    join(&mut group, "b", 0);
    let left = beat(&mut group, "b", -1, None, 5).unwrap();
    assert_eq!(left.member_epoch, -1);
    assert_eq!(group.members.len(), 1);
    assert_eq!(count(&group.target["a"]), 6);
    group.session_timeout_ms = 1_000;
    // a's last heartbeat was its join at 0: still within the session at 900.
    group.tick(900);
    assert!(
        group.members.contains_key("a"),
        "a expired within its session"
    );
    assert_eq!(count(&group.target["a"]), 6);
    group.tick(1_001);
    assert!(group.members.is_empty(), "a outlived its session");
    assert!(
        group.target.is_empty(),
        "the expired member still has a target assignment"
    );
    assert_eq!(group.state_name(), "Empty");
}

fn regex_join(
    group: &mut ConsumerGroup,
    id: &str,
    regex: &str,
    topics: &TopicsView,
    now: i64,
) -> Result<HeartbeatResponse, GroupError> {
    group.heartbeat(
        HeartbeatRequest {
            member_id: id.into(),
            member_epoch: 0,
            rebalance_timeout_ms: 30_000,
            subscribed_topic_regex: Some(regex.into()),
            owned: Some(Assignment::new()),
            ..HeartbeatRequest::default()
        },
        topics,
        now,
    )
}

#[test]
fn a_regex_subscribes_to_whole_matching_names_including_topics_created_later() {
    let orders = Uuid::from_u128(1);
    let mut view = TopicsView::from([
        ("orders-eu".to_string(), (orders, 2)),
        ("orders-us".to_string(), (Uuid::from_u128(2), 2)),
        // Matches the pattern only as a substring: RE2/J's matches() needs the whole name.
        ("old-orders-eu".to_string(), (Uuid::from_u128(3), 2)),
        ("payments".to_string(), (Uuid::from_u128(4), 2)),
    ]);
    let mut group = ConsumerGroup::new(0);
    let joined = regex_join(&mut group, "a", "orders-.*", &view, 0).unwrap();
    let assigned: BTreeSet<Uuid> = joined.assignment.unwrap().keys().copied().collect();
    assert_eq!(assigned, BTreeSet::from([orders, Uuid::from_u128(2)]));
    let epoch = joined.member_epoch;

    view.insert("orders-apac".into(), (Uuid::from_u128(5), 3));
    let later = group
        .heartbeat(
            HeartbeatRequest {
                member_id: "a".into(),
                member_epoch: epoch,
                ..HeartbeatRequest::default()
            },
            &view,
            10,
        )
        .unwrap();
    assert!(
        later.member_epoch > epoch,
        "a new matching topic bumps the epoch"
    );
    let assignment = later.assignment.unwrap();
    assert_eq!(
        assignment.get(&Uuid::from_u128(5)).map(BTreeSet::len),
        Some(3)
    );
    assert_eq!(count(&assignment), 7);
}

#[test]
fn an_invalid_regex_is_refused_before_the_member_joins() {
    let mut group = ConsumerGroup::new(0);
    assert!(matches!(
        regex_join(&mut group, "a", "orders-(", &topics(), 0),
        Err(GroupError::InvalidRegularExpression { .. })
    ));
    assert!(group.members.is_empty());
}

#[test]
fn a_memberless_commit_is_accepted_while_the_group_is_empty() {
    let mut group = ConsumerGroup::new(0);
    // A consumer with manual assignment may send its own member id with epoch -1.
    assert_eq!(group.validate_commit("", -1), Ok(()));
    assert_eq!(group.validate_commit("client-chosen-id", -1), Ok(()));
    join(&mut group, "a", 0);
    assert_eq!(
        group.validate_commit("client-chosen-id", -1),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(
        group.validate_commit("", -1),
        Err(GroupError::UnknownMemberId)
    );
}
