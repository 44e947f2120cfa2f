//! The classic state machine, driven with explicit timestamps.

use super::*;

fn join_request(member_id: &str, instance: Option<&str>, protocol: &str) -> JoinRequest {
    JoinRequest {
        member_id: member_id.to_string(),
        group_instance_id: instance.map(str::to_string),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![(protocol.to_string(), Bytes::from_static(b"meta"))],
        require_known_member_id: true,
    }
}

fn joined(actions: &[Action]) -> Vec<(String, JoinResponseData)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::CompleteJoin {
                member_id,
                response,
            } => Some((member_id.clone(), response.clone())),
            _ => None,
        })
        .collect()
}

/// Joins a member through MEMBER_ID_REQUIRED; returns its id.
fn join_new(group: &mut ClassicGroup, now: i64, actions: &mut Vec<Action>) -> String {
    let Reply::Now(first) = group.join(join_request("", None, "range"), now, actions) else {
        panic!("expected MEMBER_ID_REQUIRED");
    };
    assert_eq!(first.error, Some(GroupError::MemberIdRequired));
    let Reply::Wait(id) = group.join(join_request(&first.member_id, None, "range"), now, actions)
    else {
        panic!("expected the join to park");
    };
    id
}

#[test]
fn two_members_rebalance_sync_and_heartbeat() {
    let mut group = ClassicGroup::new(0, 0);
    let mut actions = Vec::new();
    let a = join_new(&mut group, 0, &mut actions);
    // Alone: the join completes at once (no initial delay here).
    assert_eq!(joined(&actions).len(), 1);
    assert_eq!(group.state, ClassicState::CompletingRebalance);
    actions.clear();
    let b = join_new(&mut group, 10, &mut actions);
    assert_eq!(group.state, ClassicState::PreparingRebalance);
    assert_eq!(
        group.heartbeat(&a, None, 1, 20),
        Err(GroupError::RebalanceInProgress)
    );
    let Reply::Wait(_) = group.join(join_request(&a, None, "range"), 20, &mut actions) else {
        panic!("a re-joins and parks");
    };
    let responses = joined(&actions);
    assert_eq!(responses.len(), 2);
    let leader = responses[0].1.leader.clone();
    assert_eq!(leader, a, "the previous leader stays leader");
    let for_leader = responses
        .iter()
        .find(|(id, _)| *id == a)
        .map(|(_, r)| r.clone())
        .unwrap();
    assert_eq!(for_leader.members.len(), 2);
    assert_eq!(for_leader.generation_id, 2);
    assert_eq!(for_leader.protocol_name.as_deref(), Some("range"));
    actions.clear();
    // The follower syncs first and parks; the leader's assignment completes both.
    assert!(matches!(
        group.sync(&b, None, 2, None, None, vec![], 30, &mut actions),
        Reply::Wait(_)
    ));
    let assignments = vec![
        (a.clone(), Bytes::from_static(b"A")),
        (b.clone(), Bytes::from_static(b"B")),
    ];
    assert!(matches!(
        group.sync(&a, None, 2, None, None, assignments, 30, &mut actions),
        Reply::Wait(_)
    ));
    assert!(actions.contains(&Action::CompleteSync {
        member_id: b.clone(),
        result: Ok(Bytes::from_static(b"B"))
    }));
    assert!(actions.contains(&Action::Persist));
    assert_eq!(group.state, ClassicState::Stable);
    assert_eq!(group.heartbeat(&b, None, 2, 40), Ok(()));
    assert_eq!(
        group.heartbeat(&b, None, 1, 40),
        Err(GroupError::IllegalGeneration)
    );
    assert_eq!(
        group.heartbeat("nobody", None, 2, 40),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(
        group.validate_commit(&b, None, 1, 40),
        Err(GroupError::IllegalGeneration)
    );
    assert_eq!(
        group.validate_commit("", None, -1, 40),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(group.validate_commit(&b, None, 2, 40), Ok(()));
}

#[test]
fn session_timeout_evicts_a_silent_member() {
    let mut group = ClassicGroup::new(0, 0);
    let mut actions = Vec::new();
    let a = join_new(&mut group, 0, &mut actions);
    let _ = group.sync(&a, None, 1, None, None, vec![], 0, &mut actions);
    let b = join_new(&mut group, 0, &mut actions);
    let _ = group.join(join_request(&a, None, "range"), 0, &mut actions);
    let _ = group.sync(&a, None, 2, None, None, vec![], 0, &mut actions);
    let _ = group.sync(&b, None, 2, None, None, vec![], 0, &mut actions);
    assert_eq!(group.state, ClassicState::Stable);
    // a heartbeats, b goes silent.
    group.heartbeat(&a, None, 2, 9_000).unwrap();
    group.tick(10_000, &mut actions);
    assert!(
        group.members.contains_key(&b),
        "not yet: b's last heartbeat was at 0 + 10 s"
    );
    group.tick(10_001, &mut actions);
    assert!(!group.members.contains_key(&b));
    assert_eq!(group.state, ClassicState::PreparingRebalance);
}

/// Two members, a and b, stable in generation 2 at time 0.
fn stable_pair(group: &mut ClassicGroup, actions: &mut Vec<Action>) -> (String, String) {
    let a = join_new(group, 0, actions);
    let _ = group.sync(&a, None, 1, None, None, vec![], 0, actions);
    let b = join_new(group, 0, actions);
    let _ = group.join(join_request(&a, None, "range"), 0, actions);
    let _ = group.sync(&a, None, 2, None, None, vec![], 0, actions);
    let _ = group.sync(&b, None, 2, None, None, vec![], 0, actions);
    assert_eq!(group.state, ClassicState::Stable);
    actions.clear();
    (a, b)
}

#[test]
fn rebalance_timeout_evicts_a_member_that_heartbeats_but_never_rejoins() {
    // The rebalance timeout is the client's max.poll.interval.ms: an application that
    // stopped polling still heartbeats from the client's background thread, but never
    // re-joins; the rebalance goes on without it once the timeout (30 s here) passes.
    let mut group = ClassicGroup::new(0, 0);
    let mut actions = Vec::new();
    let (a, b) = stable_pair(&mut group, &mut actions);
    let c = join_new(&mut group, 1_000, &mut actions);
    assert_eq!(group.state, ClassicState::PreparingRebalance);
    let Reply::Wait(_) = group.join(join_request(&b, None, "range"), 1_000, &mut actions) else {
        panic!("b re-joins and parks");
    };
    for now in (1_500..31_000).step_by(500) {
        assert_eq!(
            group.heartbeat(&a, None, 2, now),
            Err(GroupError::RebalanceInProgress)
        );
        group.tick(now, &mut actions);
        assert!(group.members.contains_key(&a), "a is kept until {now} ms");
        assert_eq!(group.state, ClassicState::PreparingRebalance);
    }
    assert!(
        joined(&actions).is_empty(),
        "nobody is answered while a may re-join"
    );
    let _ = group.heartbeat(&a, None, 2, 31_000);
    group.tick(31_000, &mut actions);
    assert!(!group.members.contains_key(&a));
    assert_eq!(group.state, ClassicState::CompletingRebalance);
    assert_eq!(group.generation_id, 3);
    let mut answered: Vec<String> = joined(&actions).into_iter().map(|(id, _)| id).collect();
    answered.sort();
    let mut expected = vec![b.clone(), c.clone()];
    expected.sort();
    assert_eq!(answered, expected);
    assert_eq!(
        group.heartbeat(&a, None, 2, 31_100),
        Err(GroupError::UnknownMemberId),
        "the evicted member learns it must join again"
    );
}

#[test]
fn a_member_waiting_for_the_leaders_assignment_is_not_expired() {
    // As in Kafka, a member parked in SyncGroup cannot heartbeat on that connection;
    // only the sync timeout (the rebalance timeout) may end its wait.
    let mut group = ClassicGroup::new(0, 0);
    let mut actions = Vec::new();
    let (a, b) = stable_pair(&mut group, &mut actions);
    let c = join_new(&mut group, 1_000, &mut actions);
    let _ = group.join(join_request(&a, None, "range"), 1_000, &mut actions);
    let _ = group.join(join_request(&b, None, "range"), 1_000, &mut actions);
    assert_eq!(group.state, ClassicState::CompletingRebalance);
    let leader = group.leader.clone().unwrap();
    let follower = [&a, &b, &c]
        .into_iter()
        .find(|m| **m != leader)
        .unwrap()
        .clone();
    assert!(matches!(
        group.sync(&follower, None, 3, None, None, vec![], 1_000, &mut actions),
        Reply::Wait(_)
    ));
    // Past the follower's 10 s session timeout but within the 30 s sync timeout.
    for now in (1_500..=20_000).step_by(500) {
        for member in [&a, &b, &c] {
            if *member != follower {
                let _ = group.heartbeat(member, None, 3, now);
            }
        }
        group.tick(now, &mut actions);
    }
    assert!(group.members.contains_key(&follower));
    assert_eq!(group.state, ClassicState::CompletingRebalance);
}

#[test]
fn static_member_rejoins_without_rebalance() {
    let mut group = ClassicGroup::new(0, 0);
    let mut actions = Vec::new();
    let Reply::Wait(first) = group.join(join_request("", Some("i1"), "range"), 0, &mut actions)
    else {
        panic!("a static member joins at once");
    };
    let _ = group.sync(
        &first,
        Some("i1"),
        1,
        None,
        None,
        vec![(first.clone(), Bytes::from_static(b"A"))],
        0,
        &mut actions,
    );
    assert_eq!(group.state, ClassicState::Stable);
    let rebalances = group.rebalances;
    // Restart: same instance id, new member id, same metadata.
    let Reply::Now(response) = group.join(join_request("", Some("i1"), "range"), 100, &mut actions)
    else {
        panic!("no rebalance for a known static member");
    };
    assert_eq!(response.error, None);
    assert_ne!(response.member_id, first);
    assert_eq!(group.rebalances, rebalances);
    assert_eq!(group.state, ClassicState::Stable);
    // The old member id is fenced; the new one gets the stored assignment.
    assert_eq!(
        group.heartbeat(&first, Some("i1"), 1, 100),
        Err(GroupError::UnknownMemberId)
    );
    let Reply::Now(Ok(assignment)) = group.sync(
        &response.member_id,
        Some("i1"),
        1,
        None,
        None,
        vec![],
        100,
        &mut actions,
    ) else {
        panic!("sync in Stable answers at once");
    };
    assert_eq!(assignment, Bytes::from_static(b"A"));
}

#[test]
fn inconsistent_protocols_are_refused() {
    let mut group = ClassicGroup::new(0, 0);
    let mut actions = Vec::new();
    let _ = join_new(&mut group, 0, &mut actions);
    let Reply::Now(response) = group.join(join_request("", None, "roundrobin"), 0, &mut actions)
    else {
        panic!("refused at once");
    };
    assert_eq!(response.error, Some(GroupError::InconsistentGroupProtocol));
}

#[test]
fn records_round_trip_through_the_group() {
    let mut group = ClassicGroup::new(0, 0);
    let mut actions = Vec::new();
    let a = join_new(&mut group, 0, &mut actions);
    let _ = group.sync(
        &a,
        None,
        1,
        None,
        None,
        vec![(a.clone(), Bytes::from_static(b"A"))],
        0,
        &mut actions,
    );
    let loaded = ClassicGroup::from_record(group.to_record(), 5, 0);
    assert_eq!(loaded.state, ClassicState::Stable);
    assert_eq!(loaded.generation_id, 1);
    assert_eq!(loaded.members[&a].assignment, Bytes::from_static(b"A"));
}

#[test]
fn a_standalone_commit_is_accepted_while_the_group_is_empty_whatever_member_id_it_sends() {
    let mut group = ClassicGroup::new(0, 0);
    assert_eq!(group.validate_commit("", None, -1, 0), Ok(()));
    assert_eq!(group.validate_commit("self-chosen", None, -1, 0), Ok(()));
    let mut actions = Vec::new();
    join_new(&mut group, 0, &mut actions);
    assert_eq!(
        group.validate_commit("self-chosen", None, -1, 0),
        Err(GroupError::UnknownMemberId)
    );
}
