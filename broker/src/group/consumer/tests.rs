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
