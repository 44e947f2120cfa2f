//! Moving existing replicas: the plan that empties leaving brokers (scale-in) and evens
//! out replicas and preferred leaders over the brokers that stay (scale-out), in one
//! reassignment.
//!
//! Four passes over the current assignment, each moving as little as it can:
//! 1. every replica on a broker that is not a target moves, in place (same position in
//!    the list), to the target with the fewest replicas that keeps the partition's racks
//!    apart; the biggest partitions go first, while the choice is widest;
//! 2. each topic's replicas are evened out over the targets (a topic's traffic spreads
//!    with its partitions), moving its smallest partitions;
//! 3. while one target holds two replicas more than another, the smallest partition that
//!    can move between them (not already on the receiver, racks kept apart, preferably
//!    one whose topic stays even) moves: the fewest bytes for the balance;
//! 4. preferred leaders (first replicas) are evened out by reordering replica lists, which
//!    moves no data: a chain of swaps hands one preferred leadership from the broker with
//!    the most to one with at least two fewer, through partitions that hold both ends of
//!    each link.
//!
//! The plan lists only the partitions whose replica list changes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;

use crate::Candidate;

/// A partition of a topic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// A partition as the plan sees it: its replicas (preferred leader first) and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub replicas: Vec<i32>,
    /// Bytes a new replica copies (the leader's log size).
    pub bytes: u64,
}

/// A reassignment: the new replica lists of the partitions that change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub assignments: BTreeMap<TopicPartition, Vec<i32>>,
    /// Replicas created on brokers that did not hold them.
    pub replica_moves: usize,
    /// Bytes those replicas copy.
    pub bytes_moved: u64,
}

/// Why no plan can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "{partition} has {replicas} replicas but only {brokers} broker(s) would remain: lower its replication factor first"
    )]
    TooFewBrokers {
        partition: TopicPartition,
        replicas: usize,
        brokers: usize,
    },
    #[error(
        "topic {topic} cannot have replication factor {replication_factor} on {brokers} broker(s)"
    )]
    ReplicationFactor {
        topic: String,
        replication_factor: usize,
        brokers: usize,
    },
}

/// The reassignment that gives every partition of `topic` `replication_factor` replicas:
/// new replicas go at the end of the list (the preferred leader stays) to the target with
/// the fewest replicas, racks apart; removed ones are the non-leading replicas on the
/// targets with the most, keeping racks apart. Other topics only weigh the load.
pub fn change_replication_factor(
    targets: &[Candidate],
    current: &BTreeMap<TopicPartition, PartitionState>,
    topic: &str,
    replication_factor: usize,
) -> Result<Plan, PlanError> {
    if replication_factor == 0 || replication_factor > targets.len() {
        return Err(PlanError::ReplicationFactor {
            topic: topic.to_string(),
            replication_factor,
            brokers: targets.len(),
        });
    }
    let mut work = Work::new(targets, current)?;
    let partitions: Vec<&TopicPartition> = current.keys().filter(|p| p.topic == topic).collect();
    // One replica per partition per round, so each round sees the load the last one left.
    let longest = partitions
        .iter()
        .map(|p| current[*p].replicas.len())
        .max()
        .unwrap_or(0);
    for size in (longest.min(replication_factor) + 1)..=replication_factor {
        for partition in &partitions {
            work.resize(partition, size);
        }
    }
    for partition in &partitions {
        work.resize(partition, replication_factor);
    }
    // Greedy rounds can corner the last partitions (the least loaded broker is already
    // theirs): even out by moving only replicas this change adds.
    work.balance_added(topic);
    Ok(work.into_plan(current))
}

/// The reassignment that puts every replica of `current` on `targets`, balanced.
/// Brokers that hold replicas but are not targets are drained.
pub fn plan(
    targets: &[Candidate],
    current: &BTreeMap<TopicPartition, PartitionState>,
) -> Result<Plan, PlanError> {
    let mut work = Work::new(targets, current)?;
    work.evacuate();
    work.balance_topics();
    work.balance_replicas();
    work.balance_leaders();
    Ok(work.into_plan(current))
}

struct Work<'a> {
    current: &'a BTreeMap<TopicPartition, PartitionState>,
    lists: BTreeMap<&'a TopicPartition, Vec<i32>>,
    rack: BTreeMap<i32, Option<&'a str>>,
    /// Racks matter only when every target has one.
    racks: usize,
    replicas: BTreeMap<i32, usize>,
    /// Each topic's replicas per target.
    topic_replicas: BTreeMap<(&'a str, i32), usize>,
    bytes: BTreeMap<i32, u64>,
    /// Each target's partitions, smallest first.
    hosted: BTreeMap<i32, BTreeSet<(u64, &'a TopicPartition)>>,
}

impl<'a> Work<'a> {
    fn new(
        targets: &'a [Candidate],
        current: &'a BTreeMap<TopicPartition, PartitionState>,
    ) -> Result<Self, PlanError> {
        let rack: BTreeMap<i32, Option<&str>> = targets
            .iter()
            .map(|c| (c.node_id, c.rack.as_deref()))
            .collect();
        let racks = if rack.values().all(Option::is_some) {
            rack.values().collect::<BTreeSet<_>>().len()
        } else {
            0
        };
        for (partition, state) in current {
            if state.replicas.len() > rack.len() {
                return Err(PlanError::TooFewBrokers {
                    partition: partition.clone(),
                    replicas: state.replicas.len(),
                    brokers: rack.len(),
                });
            }
        }
        let mut work = Self {
            current,
            lists: current
                .iter()
                .map(|(p, s)| (p, s.replicas.clone()))
                .collect(),
            replicas: rack.keys().map(|id| (*id, 0)).collect(),
            topic_replicas: BTreeMap::new(),
            bytes: rack.keys().map(|id| (*id, 0)).collect(),
            hosted: rack.keys().map(|id| (*id, BTreeSet::new())).collect(),
            rack,
            racks,
        };
        for (partition, state) in current {
            for id in &state.replicas {
                work.add(*id, partition, 1);
            }
        }
        Ok(work)
    }

    fn size(&self, partition: &TopicPartition) -> u64 {
        self.current.get(partition).map_or(0, |s| s.bytes)
    }

    fn add(&mut self, broker: i32, partition: &'a TopicPartition, sign: i64) {
        let size = self.size(partition);
        if let Some(hosted) = self.hosted.get_mut(&broker) {
            if sign > 0 {
                hosted.insert((size, partition));
            } else {
                hosted.remove(&(size, partition));
            }
        }
        if self.rack.contains_key(&broker) {
            let count = self
                .topic_replicas
                .entry((partition.topic.as_str(), broker))
                .or_default();
            *count = if sign > 0 {
                *count + 1
            } else {
                count.saturating_sub(1)
            };
        }
        if let (Some(count), Some(bytes)) =
            (self.replicas.get_mut(&broker), self.bytes.get_mut(&broker))
        {
            if sign > 0 {
                *count += 1;
                *bytes += size;
            } else {
                *count = count.saturating_sub(1);
                *bytes = bytes.saturating_sub(size);
            }
        }
    }

    /// Whether `broker` may join `others` (the partition's other replicas) without putting
    /// two replicas in one rack while a rack without one is left.
    fn racks_apart(&self, broker: i32, others: &[i32]) -> bool {
        if self.racks == 0 {
            return true;
        }
        let used: BTreeSet<Option<&str>> = others
            .iter()
            .filter_map(|id| self.rack.get(id).copied())
            .collect();
        let rack = self.rack.get(&broker).copied().flatten();
        !used.contains(&rack) || used.len() >= self.racks
    }

    fn move_replica(&mut self, partition: &'a TopicPartition, position: usize, to: i32) {
        let Some(from) = self
            .lists
            .get(partition)
            .and_then(|l| l.get(position))
            .copied()
        else {
            return;
        };
        self.add(from, partition, -1);
        self.add(to, partition, 1);
        if let Some(slot) = self
            .lists
            .get_mut(partition)
            .and_then(|l| l.get_mut(position))
        {
            *slot = to;
        }
    }

    fn evacuate(&mut self) {
        let mut order: Vec<&'a TopicPartition> = self.lists.keys().copied().collect();
        order.sort_by_key(|p| std::cmp::Reverse(self.size(p)));
        for partition in order {
            for position in 0..self.lists[partition].len() {
                let list = &self.lists[partition];
                if self.rack.contains_key(&list[position]) {
                    continue;
                }
                let others: Vec<i32> = list
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != position)
                    .map(|(_, id)| *id)
                    .collect();
                let best = self
                    .rack
                    .keys()
                    .filter(|id| !others.contains(id))
                    .min_by_key(|id| {
                        (
                            !self.racks_apart(**id, &others),
                            self.replicas[*id],
                            self.bytes[*id],
                            **id,
                        )
                    })
                    .copied();
                if let Some(to) = best {
                    self.move_replica(partition, position, to);
                }
            }
        }
    }

    /// Grows or shrinks one partition's replica list to `size`.
    fn resize(&mut self, partition: &'a TopicPartition, size: usize) {
        while self.lists[partition].len() < size {
            let others = self.lists[partition].clone();
            let best = self
                .rack
                .keys()
                .filter(|id| !others.contains(id))
                .min_by_key(|id| {
                    (
                        !self.racks_apart(**id, &others),
                        self.replicas[*id],
                        self.bytes[*id],
                        **id,
                    )
                })
                .copied();
            let Some(to) = best else {
                return;
            };
            self.add(to, partition, 1);
            if let Some(list) = self.lists.get_mut(partition) {
                list.push(to);
            }
        }
        while self.lists[partition].len() > size {
            let list = self.lists[partition].clone();
            // A replica whose rack another replica shares goes first, then the busiest.
            let shares_rack = |id: i32| {
                self.racks > 0
                    && list
                        .iter()
                        .filter(|other| **other != id)
                        .any(|other| self.rack.get(other) == self.rack.get(&id))
            };
            let Some(position) = (1..list.len()).max_by_key(|i| {
                let id = list[*i];
                (
                    !self.rack.contains_key(&id),
                    shares_rack(id),
                    self.replicas.get(&id).copied().unwrap_or(0),
                    self.bytes.get(&id).copied().unwrap_or(0),
                    id,
                )
            }) else {
                return;
            };
            self.add(list[position], partition, -1);
            if let Some(list) = self.lists.get_mut(partition) {
                list.remove(position);
            }
        }
    }

    fn in_topic(&self, topic: &str, broker: i32) -> usize {
        self.topic_replicas
            .get(&(topic, broker))
            .copied()
            .unwrap_or(0)
    }

    /// Spreads each topic's replicas over the targets within one of each other (so a
    /// topic's traffic spreads too), moving its smallest partitions; ties go from the
    /// busiest broker overall to the least busy.
    fn balance_topics(&mut self) {
        let topics: BTreeSet<&'a str> = self.lists.keys().map(|p| p.topic.as_str()).collect();
        for topic in topics {
            let size = self.lists.keys().filter(|p| p.topic == topic).count();
            for _ in 0..=size * 4 {
                let mut by_load: Vec<i32> = self.replicas.keys().copied().collect();
                by_load.sort_by_key(|id| (self.in_topic(topic, *id), self.replicas[id], *id));
                let step = by_load.iter().rev().find_map(|hi| {
                    by_load
                        .iter()
                        .take_while(|lo| self.in_topic(topic, **lo) + 1 < self.in_topic(topic, *hi))
                        .find_map(|lo| {
                            self.movable(*hi, *lo, |p, _| p.topic == topic)
                                .map(|m| (m, *lo))
                        })
                });
                let Some(((partition, position), to)) = step else {
                    break;
                };
                self.move_replica(partition, position, to);
            }
        }
    }

    fn balance_replicas(&mut self) {
        let total: usize = self.lists.values().map(Vec::len).sum();
        for _ in 0..=total {
            let mut by_load: Vec<i32> = self.replicas.keys().copied().collect();
            by_load.sort_by_key(|id| (self.replicas[id], self.bytes[id], *id));
            // A move that keeps its topic even is preferred to one that does not.
            let step = by_load.iter().rev().find_map(|hi| {
                by_load
                    .iter()
                    .take_while(|lo| self.replicas[*lo] + 1 < self.replicas[hi])
                    .find_map(|lo| {
                        self.movable(*hi, *lo, |p, from| {
                            self.in_topic(&p.topic, *lo) < self.in_topic(&p.topic, from)
                        })
                        .map(|m| (m, *lo))
                    })
            });
            let step = step.or_else(|| {
                by_load.iter().rev().find_map(|hi| {
                    by_load
                        .iter()
                        .take_while(|lo| self.replicas[*lo] + 1 < self.replicas[hi])
                        .find_map(|lo| self.smallest_movable(*hi, *lo).map(|m| (m, *lo)))
                })
            });
            let Some(((partition, position), to)) = step else {
                return;
            };
            self.move_replica(partition, position, to);
        }
    }

    /// Like `balance_replicas`, moving only replicas of `topic` that the plan adds.
    fn balance_added(&mut self, topic: &str) {
        let total: usize = self.lists.values().map(Vec::len).sum();
        for _ in 0..=total {
            let mut by_load: Vec<i32> = self.replicas.keys().copied().collect();
            by_load.sort_by_key(|id| (self.replicas[id], self.bytes[id], *id));
            let step = by_load.iter().rev().find_map(|hi| {
                by_load
                    .iter()
                    .take_while(|lo| self.replicas[*lo] + 1 < self.replicas[hi])
                    .find_map(|lo| {
                        self.movable(*hi, *lo, |p, id| {
                            p.topic == topic && !self.current[p].replicas.contains(&id)
                        })
                        .map(|m| (m, *lo))
                    })
            });
            let Some(((partition, position), to)) = step else {
                return;
            };
            self.move_replica(partition, position, to);
        }
    }

    /// The smallest partition on `from` that `to` can take.
    fn smallest_movable(&self, from: i32, to: i32) -> Option<(&'a TopicPartition, usize)> {
        self.movable(from, to, |_, _| true)
    }

    /// The smallest partition on `from` that `to` can take whose replica on `from` passes
    /// `may_move`.
    fn movable(
        &self,
        from: i32,
        to: i32,
        may_move: impl Fn(&TopicPartition, i32) -> bool,
    ) -> Option<(&'a TopicPartition, usize)> {
        let same_rack = self.rack.get(&from) == self.rack.get(&to);
        self.hosted.get(&from)?.iter().find_map(|(_, partition)| {
            if !may_move(partition, from) {
                return None;
            }
            let list = &self.lists[*partition];
            let position = list.iter().position(|id| *id == from)?;
            if list.contains(&to) {
                return None;
            }
            let others: Vec<i32> = list.iter().copied().filter(|id| *id != from).collect();
            (same_rack || self.racks_apart(to, &others)).then_some((*partition, position))
        })
    }

    fn leaders(&self) -> BTreeMap<i32, usize> {
        let mut leaders: BTreeMap<i32, usize> = self.rack.keys().map(|id| (*id, 0)).collect();
        for list in self.lists.values() {
            if let Some(count) = list.first().and_then(|id| leaders.get_mut(id)) {
                *count += 1;
            }
        }
        leaders
    }

    fn balance_leaders(&mut self) {
        for _ in 0..=self.lists.len() {
            let leaders = self.leaders();
            let mut by_count: Vec<i32> = leaders.keys().copied().collect();
            by_count.sort_by_key(|id| (std::cmp::Reverse(leaders[id]), *id));
            let chain = by_count
                .iter()
                .find_map(|hi| self.leadership_chain(*hi, &leaders));
            let Some(chain) = chain else {
                return;
            };
            for (partition, to) in chain {
                if let Some(list) = self.lists.get_mut(partition)
                    && let Some(position) = list.iter().position(|id| *id == to)
                {
                    list.swap(0, position);
                }
            }
        }
    }

    /// Partitions (and who leads each next) that pass one preferred leadership from `hi`
    /// to a broker with at least two fewer, each link a partition led by one broker and
    /// holding the next. Partitions whose list changes anyway are preferred.
    fn leadership_chain(
        &self,
        hi: i32,
        leaders: &BTreeMap<i32, usize>,
    ) -> Option<Vec<(&'a TopicPartition, i32)>> {
        let mut led_by: BTreeMap<i32, Vec<&'a TopicPartition>> = BTreeMap::new();
        for (partition, list) in &self.lists {
            if let Some(first) = list.first() {
                led_by.entry(*first).or_default().push(partition);
            }
        }
        for partitions in led_by.values_mut() {
            partitions.sort_by_key(|p| (self.lists[*p] == self.current[*p].replicas, *p));
        }
        let mut came_from: BTreeMap<i32, (i32, &'a TopicPartition)> = BTreeMap::new();
        let mut queue = VecDeque::from([hi]);
        while let Some(broker) = queue.pop_front() {
            for partition in led_by.get(&broker).into_iter().flatten() {
                for next in self.lists[*partition].iter().skip(1) {
                    if *next == hi || came_from.contains_key(next) {
                        continue;
                    }
                    came_from.insert(*next, (broker, partition));
                    if leaders.get(next).is_some_and(|n| n + 1 < leaders[&hi]) {
                        let mut chain = Vec::new();
                        let mut at = *next;
                        while let Some((from, partition)) = came_from.get(&at) {
                            chain.push((*partition, at));
                            if *from == hi {
                                break;
                            }
                            at = *from;
                        }
                        return Some(chain);
                    }
                    queue.push_back(*next);
                }
            }
        }
        None
    }

    fn into_plan(self, current: &BTreeMap<TopicPartition, PartitionState>) -> Plan {
        let mut plan = Plan::default();
        for (partition, list) in self.lists {
            let before = &current[partition];
            if *list == before.replicas {
                continue;
            }
            let added = list
                .iter()
                .filter(|id| !before.replicas.contains(id))
                .count();
            plan.replica_moves += added;
            plan.bytes_moved += before.bytes * added as u64;
            plan.assignments.insert(partition.clone(), list);
        }
        plan
    }
}

#[cfg(test)]
mod tests;
