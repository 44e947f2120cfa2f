use super::*;
use crate::place_partitions;
use proptest::prelude::*;

fn brokers(ids: impl IntoIterator<Item = i32>, racks: usize) -> Vec<Candidate> {
    ids.into_iter()
        .map(|id| Candidate {
            node_id: id,
            rack: (racks > 0).then(|| format!("zone-{}", id as usize % racks)),
        })
        .collect()
}

/// `topics` topics of `partitions` partitions each, placed by the controller's placement
/// over `on`, with sizes from `seed`.
fn cluster(
    on: &[Candidate],
    topics: usize,
    partitions: usize,
    rf: usize,
    seed: u64,
) -> BTreeMap<TopicPartition, PartitionState> {
    let mut out = BTreeMap::new();
    for t in 0..topics {
        let placed = place_partitions(on, &[], partitions, rf, t * 7 + seed as usize).unwrap();
        for (p, replicas) in placed.into_iter().enumerate() {
            let bytes = (seed
                .wrapping_mul(31)
                .wrapping_add((t * 131 + p * 17) as u64))
                % 10_000;
            out.insert(
                TopicPartition {
                    topic: format!("t{t}"),
                    partition: p as i32,
                },
                PartitionState { replicas, bytes },
            );
        }
    }
    out
}

fn apply(
    current: &BTreeMap<TopicPartition, PartitionState>,
    plan: &Plan,
) -> BTreeMap<TopicPartition, Vec<i32>> {
    current
        .iter()
        .map(|(p, s)| {
            let list = plan.assignments.get(p).unwrap_or(&s.replicas).clone();
            (p.clone(), list)
        })
        .collect()
}

fn spread(counts: &BTreeMap<i32, usize>) -> usize {
    counts.values().max().unwrap_or(&0) - counts.values().min().unwrap_or(&0)
}

struct Outcome {
    replicas: BTreeMap<i32, usize>,
    leaders: BTreeMap<i32, usize>,
}

/// Checks what every plan must hold and returns the per-broker counts.
fn check(
    targets: &[Candidate],
    current: &BTreeMap<TopicPartition, PartitionState>,
    plan: &Plan,
) -> Outcome {
    let ids: BTreeSet<i32> = targets.iter().map(|c| c.node_id).collect();
    let after = apply(current, plan);
    let mut replicas: BTreeMap<i32, usize> = ids.iter().map(|id| (*id, 0)).collect();
    let mut leaders = replicas.clone();
    let mut moves = 0;
    for (partition, list) in &after {
        let before = &current[partition].replicas;
        assert_eq!(
            list.len(),
            before.len(),
            "{partition}: {before:?} -> {list:?}"
        );
        let distinct: BTreeSet<_> = list.iter().collect();
        assert_eq!(
            distinct.len(),
            list.len(),
            "{partition}: a broker twice in {list:?}"
        );
        for id in list {
            assert!(
                ids.contains(id),
                "{partition}: {id} is not a target: {list:?}"
            );
            *replicas.get_mut(id).unwrap() += 1;
        }
        *leaders.get_mut(&list[0]).unwrap() += 1;
        moves += list.iter().filter(|id| !before.contains(id)).count();
        // Replicas that stay keep their broker: only what must move, moves.
        if let Some(planned) = plan.assignments.get(partition) {
            assert_ne!(planned, before, "{partition}: listed without a change");
        }
    }
    assert_eq!(moves, plan.replica_moves);
    Outcome { replicas, leaders }
}

/// Each topic's replicas per target.
fn per_topic(
    targets: &[Candidate],
    lists: &BTreeMap<TopicPartition, Vec<i32>>,
) -> BTreeMap<String, BTreeMap<i32, usize>> {
    let mut out: BTreeMap<String, BTreeMap<i32, usize>> = BTreeMap::new();
    for (partition, list) in lists {
        let counts = out
            .entry(partition.topic.clone())
            .or_insert_with(|| targets.iter().map(|c| (c.node_id, 0)).collect());
        for id in list {
            *counts.entry(*id).or_default() += 1;
        }
    }
    out
}

fn racks_apart(targets: &[Candidate], list: &[i32]) -> bool {
    let rack = |id: &i32| {
        targets
            .iter()
            .find(|c| c.node_id == *id)
            .unwrap()
            .rack
            .clone()
    };
    let all: BTreeSet<_> = targets.iter().map(|c| c.rack.clone()).collect();
    let used: BTreeSet<_> = list.iter().map(rack).collect();
    used.len() == list.len().min(all.len())
}

proptest! {
    #[test]
    fn scale_out_balances_replicas_and_leaders(
        before in 1usize..5, added in 1usize..4, topics in 1usize..4, partitions in 1usize..12,
        rf in 1usize..4, seed in 0u64..1000,
    ) {
        let rf = rf.min(before);
        let old = brokers(0..before as i32, 0);
        let current = cluster(&old, topics, partitions, rf, seed);
        let targets = brokers(0..(before + added) as i32, 0);
        let plan = plan(&targets, &current).unwrap();
        let outcome = check(&targets, &current, &plan);
        prop_assert!(spread(&outcome.replicas) <= 1, "replicas {:?}", outcome.replicas);
        prop_assert!(spread(&outcome.leaders) <= 1, "leaders {:?}", outcome.leaders);
        for (topic, counts) in per_topic(&targets, &apply(&current, &plan)) {
            prop_assert!(spread(&counts) <= 1, "{} replicas {:?}", topic, counts);
        }
        // Only what the new brokers need moves: their share, no more.
        let total: usize = outcome.replicas.values().sum();
        let share = total.div_ceil(before + added) * added;
        prop_assert!(plan.replica_moves <= share, "{} moves for a share of {share}", plan.replica_moves);
    }

    #[test]
    fn scale_in_drains_the_leaving_brokers_in_one_plan(
        after in 1usize..5, leaving in 1usize..3, topics in 1usize..4, partitions in 1usize..12,
        rf in 1usize..4, seed in 0u64..1000,
    ) {
        let rf = rf.min(after);
        let all = brokers(0..(after + leaving) as i32, 0);
        let current = cluster(&all, topics, partitions, rf, seed);
        let targets = brokers(0..after as i32, 0);
        let plan = plan(&targets, &current).unwrap();
        let outcome = check(&targets, &current, &plan);
        prop_assert!(spread(&outcome.replicas) <= 1, "replicas {:?}", outcome.replicas);
        prop_assert!(spread(&outcome.leaders) <= 1, "leaders {:?}", outcome.leaders);
        for (topic, counts) in per_topic(&targets, &apply(&current, &plan)) {
            prop_assert!(spread(&counts) <= 1, "{} replicas {:?}", topic, counts);
        }
        let on_leaving = current
            .values()
            .flat_map(|s| s.replicas.iter())
            .filter(|id| **id >= after as i32)
            .count();
        prop_assert!(plan.replica_moves >= on_leaving);
    }

    #[test]
    fn racks_stay_apart(
        racks in 2usize..4, per_rack in 1usize..3, leaving_racks in 0usize..2,
        partitions in 1usize..15, rf in 1usize..4, seed in 0u64..1000,
    ) {
        // Brokers 0.. in zones id % racks; the highest ids leave (or join).
        let n = racks * per_rack;
        let rf = rf.min(racks);
        let all = brokers(0..(n + leaving_racks * racks) as i32, racks);
        let current = cluster(&all, 2, partitions, rf, seed);
        let targets = brokers(0..n as i32, racks);
        let plan = plan(&targets, &current).unwrap();
        let outcome = check(&targets, &current, &plan);
        for (partition, list) in apply(&current, &plan) {
            prop_assert!(racks_apart(&targets, &list), "{}: {:?}", partition, list);
        }
        prop_assert!(spread(&outcome.replicas) <= 1, "replicas {:?}", outcome.replicas);
    }

    #[test]
    fn a_balanced_cluster_needs_no_plan(
        n in 1usize..6, topics in 1usize..3, partitions in 1usize..12, rf in 1usize..4,
        seed in 0u64..1000,
    ) {
        let rf = rf.min(n);
        let targets = brokers(0..n as i32, 0);
        let current = cluster(&targets, topics, partitions, rf, seed);
        let first = plan(&targets, &current).unwrap();
        // Several topics each balanced alone may add up uneven: one plan evens them out,
        // after which there is nothing left to do.
        let settled: BTreeMap<TopicPartition, PartitionState> = apply(&current, &first)
            .into_iter()
            .map(|(p, replicas)| {
                let bytes = current[&p].bytes;
                (p, PartitionState { replicas, bytes })
            })
            .collect();
        prop_assert_eq!(plan(&targets, &settled).unwrap(), Plan::default());
        if topics == 1 {
            prop_assert_eq!(first.replica_moves, 0);
        }
    }
}

#[test]
fn a_replication_factor_above_the_remaining_brokers_is_refused() {
    let all = brokers(0..3, 0);
    let current = cluster(&all, 1, 2, 3, 1);
    let error = plan(&brokers(0..2, 0), &current).unwrap_err();
    assert_eq!(
        error,
        PlanError::TooFewBrokers {
            partition: TopicPartition {
                topic: "t0".into(),
                partition: 0
            },
            replicas: 3,
            brokers: 2
        }
    );
    assert!(error.to_string().contains("t0-0 has 3 replicas"), "{error}");
}

#[test]
fn the_smallest_partitions_move_to_balance() {
    // Broker 0 holds three partitions of sizes 5, 500 and 50; broker 1 holds none.
    let current: BTreeMap<TopicPartition, PartitionState> = [(0, 5), (1, 500), (2, 50)]
        .into_iter()
        .map(|(p, bytes)| {
            (
                TopicPartition {
                    topic: "t".into(),
                    partition: p,
                },
                PartitionState {
                    replicas: vec![0],
                    bytes,
                },
            )
        })
        .collect();
    let plan = plan(&brokers(0..2, 0), &current).unwrap();
    assert_eq!(plan.replica_moves, 1);
    assert_eq!(plan.bytes_moved, 5);
    assert_eq!(
        plan.assignments
            .keys()
            .map(|p| p.partition)
            .collect::<Vec<_>>(),
        [0]
    );
}

/// Checks an RF change of topic `t0`: every partition has `rf` distinct replicas on
/// targets, its preferred leader kept, growth only adds and shrinking only removes, and
/// other topics are untouched. Returns replicas per broker afterwards.
fn check_resized(
    targets: &[Candidate],
    current: &BTreeMap<TopicPartition, PartitionState>,
    plan: &Plan,
    rf: usize,
) -> BTreeMap<i32, usize> {
    let ids: BTreeSet<i32> = targets.iter().map(|c| c.node_id).collect();
    let mut replicas: BTreeMap<i32, usize> = ids.iter().map(|id| (*id, 0)).collect();
    let mut added = 0;
    for (partition, list) in apply(current, plan) {
        let before = &current[&partition].replicas;
        for id in &list {
            *replicas.get_mut(id).unwrap() += 1;
        }
        if partition.topic != "t0" {
            assert_eq!(&list, before, "{partition} is not the resized topic");
            continue;
        }
        assert_eq!(list.len(), rf, "{partition}: {before:?} -> {list:?}");
        assert_eq!(list.iter().collect::<BTreeSet<_>>().len(), rf, "{list:?}");
        assert_eq!(
            list[0], before[0],
            "{partition}: the preferred leader changed"
        );
        assert!(list.iter().all(|id| ids.contains(id)), "{list:?}");
        if rf >= before.len() {
            assert_eq!(&list[..before.len()], &before[..], "growth moved a replica");
        } else {
            assert!(
                list.iter().all(|id| before.contains(id)),
                "shrink added one"
            );
        }
        added += list.iter().filter(|id| !before.contains(id)).count();
    }
    assert_eq!(added, plan.replica_moves);
    replicas
}

proptest! {
    #[test]
    fn replication_factor_changes_keep_leaders_and_load_even(
        n in 1usize..7, topics in 1usize..3, partitions in 1usize..12,
        from in 1usize..5, to in 1usize..5, seed in 0u64..1000,
    ) {
        let (from, to) = (from.min(n), to.min(n));
        let targets = brokers(0..n as i32, 0);
        let current = cluster(&targets, topics, partitions, from, seed);
        let before = check_resized(&targets, &current, &Plan::default(), from);
        let plan = change_replication_factor(&targets, &current, "t0", to).unwrap();
        let after = check_resized(&targets, &current, &plan, to);
        // No added replica could move to a broker with two fewer replicas: new replicas
        // went to the least loaded brokers the partitions left free.
        for (partition, list) in apply(&current, &plan) {
            let old = &current[&partition].replicas;
            for hi in list.iter().filter(|id| !old.contains(id)) {
                for (lo, count) in &after {
                    prop_assert!(
                        list.contains(lo) || count + 1 >= after[hi],
                        "{}: {:?} -> {:?}; {:?} -> {:?}", partition, old, list, before, after
                    );
                }
            }
        }
    }

    #[test]
    fn replication_factor_changes_keep_racks_apart(
        racks in 2usize..4, per_rack in 1usize..3, partitions in 1usize..12,
        from in 1usize..4, to in 1usize..4, seed in 0u64..1000,
    ) {
        let n = racks * per_rack;
        let (from, to) = (from.min(racks), to.min(racks));
        let targets = brokers(0..n as i32, racks);
        let current = cluster(&targets, 2, partitions, from, seed);
        let plan = change_replication_factor(&targets, &current, "t0", to).unwrap();
        check_resized(&targets, &current, &plan, to);
        for (partition, list) in apply(&current, &plan) {
            prop_assert!(racks_apart(&targets, &list), "{}: {:?}", partition, list);
        }
    }
}

#[test]
fn a_replication_factor_above_the_broker_count_is_refused() {
    let targets = brokers(0..2, 0);
    let current = cluster(&targets, 1, 2, 1, 1);
    let error = change_replication_factor(&targets, &current, "t0", 3).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("replication factor 3 on 2 broker(s)"),
        "{error}"
    );
    let unchanged = change_replication_factor(&targets, &current, "t0", 1).unwrap();
    assert_eq!(unchanged, Plan::default());
}

#[test]
fn growing_one_topic_spreads_the_new_replicas_evenly() {
    // Six single-replica partitions, one per broker, grow to three replicas: 3 per broker.
    let targets = brokers(0..6, 0);
    let current = cluster(&targets, 1, 6, 1, 0);
    let plan = change_replication_factor(&targets, &current, "t0", 3).unwrap();
    let after = check_resized(&targets, &current, &plan, 3);
    assert!(after.values().all(|n| *n == 3), "{after:?}");
    assert_eq!(plan.replica_moves, 12);
}
