//! Server-side assignors of KIP-848 groups: `uniform` (the default; balanced and
//! sticky) and `range` (contiguous ranges per topic, co-partitioned). Pure functions of
//! the members' subscriptions, the topics and the previous target assignment.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

/// Partitions by topic id.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// Assignor names the broker accepts (`group.consumer.assignors`), default first.
pub const ASSIGNORS: &[&str] = &["uniform", "range"];

/// What an assignor sees.
#[derive(Debug, Clone, Default)]
pub struct AssignmentSpec {
    /// Member id → subscribed topic names.
    pub members: BTreeMap<String, BTreeSet<String>>,
    /// Topic name → (id, partition count), for subscribed topics that exist.
    pub topics: BTreeMap<String, (Uuid, i32)>,
    /// The previous target assignment, for stickiness.
    pub previous: BTreeMap<String, Assignment>,
}

impl AssignmentSpec {
    fn subscribers(&self, topic: &str) -> Vec<&String> {
        self.members
            .iter()
            .filter(|(_, topics)| topics.contains(topic))
            .map(|(id, _)| id)
            .collect()
    }
}

pub fn assign(name: &str, spec: &AssignmentSpec) -> BTreeMap<String, Assignment> {
    match name {
        "range" => range(spec),
        _ => uniform(spec),
    }
}

/// Range: for each topic, its subscribers in member-id order get contiguous ranges;
/// the first `partitions % members` get one more.
pub fn range(spec: &AssignmentSpec) -> BTreeMap<String, Assignment> {
    let mut result: BTreeMap<String, Assignment> = spec
        .members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    for (topic, (id, partitions)) in &spec.topics {
        let subscribers = spec.subscribers(topic);
        if subscribers.is_empty() {
            continue;
        }
        let count = subscribers.len() as i32;
        let (base, extra) = (partitions / count, partitions % count);
        let mut next = 0;
        for (index, member) in subscribers.into_iter().enumerate() {
            let take = base + i32::from((index as i32) < extra);
            if take > 0
                && let Some(assignment) = result.get_mut(member)
            {
                assignment.entry(*id).or_default().extend(next..next + take);
            }
            next += take;
        }
    }
    result
}

/// Uniform: every member gets `floor(P/M)` or one more partition; a partition stays
/// with its previous owner while that keeps the balance.
pub fn uniform(spec: &AssignmentSpec) -> BTreeMap<String, Assignment> {
    let mut result: BTreeMap<String, Assignment> = spec
        .members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect();
    let mut counts: BTreeMap<&String, usize> = spec.members.keys().map(|m| (m, 0)).collect();
    let mut partitions: Vec<(&String, Uuid, i32)> = Vec::new();
    for (topic, (id, count)) in &spec.topics {
        if spec.members.values().any(|t| t.contains(topic)) {
            partitions.extend((0..*count).map(|p| (topic, *id, p)));
        }
    }
    if spec.members.is_empty() {
        return result;
    }
    let total = partitions.len();
    let floor = total / spec.members.len();
    let mut extra = total % spec.members.len();
    let owner_of = |id: Uuid, partition: i32| {
        spec.previous
            .iter()
            .find(|(_, a)| a.get(&id).is_some_and(|p| p.contains(&partition)))
            .map(|(member, _)| member)
    };
    let mut unassigned = Vec::new();
    // Pass 1: previous owners keep up to the floor.
    for (topic, id, partition) in &partitions {
        let keeper = owner_of(*id, *partition).filter(|m| {
            spec.members.get(*m).is_some_and(|t| t.contains(*topic))
                && counts.get(m).is_some_and(|c| *c < floor)
        });
        match keeper {
            Some(member) => {
                if let Some(c) = counts.get_mut(member) {
                    *c += 1;
                }
                if let Some(a) = result.get_mut(member) {
                    a.entry(*id).or_default().insert(*partition);
                }
            }
            None => unassigned.push((*topic, *id, *partition)),
        }
    }
    // Pass 2: previous owners keep one more while extra slots remain.
    let mut remaining = Vec::new();
    for (topic, id, partition) in unassigned {
        let keeper = owner_of(id, partition).filter(|m| {
            extra > 0
                && spec.members.get(*m).is_some_and(|t| t.contains(topic))
                && counts.get(m).is_some_and(|c| *c == floor)
        });
        match keeper {
            Some(member) => {
                extra -= 1;
                if let Some(c) = counts.get_mut(member) {
                    *c += 1;
                }
                if let Some(a) = result.get_mut(member) {
                    a.entry(id).or_default().insert(partition);
                }
            }
            None => remaining.push((topic, id, partition)),
        }
    }
    // Pass 3: the rest go to the eligible member with the fewest partitions.
    for (topic, id, partition) in remaining {
        let target = counts
            .iter()
            .filter(|(m, _)| spec.members.get(**m).is_some_and(|t| t.contains(topic)))
            .min_by_key(|(m, c)| (**c, m.to_string()))
            .map(|(m, _)| (*m).clone());
        if let Some(member) = target {
            if let Some(c) = counts.get_mut(&member) {
                *c += 1;
            }
            if let Some(a) = result.get_mut(&member) {
                a.entry(id).or_default().insert(partition);
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(members: &[&str], partitions: i32) -> (AssignmentSpec, Uuid) {
        let id = Uuid::from_u128(7);
        let topics = BTreeMap::from([("t".to_string(), (id, partitions))]);
        let members = members
            .iter()
            .map(|m| (m.to_string(), BTreeSet::from(["t".to_string()])))
            .collect();
        (
            AssignmentSpec {
                members,
                topics,
                previous: BTreeMap::new(),
            },
            id,
        )
    }

    fn sizes(result: &BTreeMap<String, Assignment>, id: Uuid) -> Vec<usize> {
        result
            .values()
            .map(|a| a.get(&id).map_or(0, |p| p.len()))
            .collect()
    }

    #[test]
    fn range_gives_contiguous_ranges() {
        let (spec, id) = spec(&["a", "b", "c"], 7);
        let result = range(&spec);
        assert_eq!(result["a"][&id], BTreeSet::from([0, 1, 2]));
        assert_eq!(result["b"][&id], BTreeSet::from([3, 4]));
        assert_eq!(result["c"][&id], BTreeSet::from([5, 6]));
    }

    #[test]
    fn uniform_is_balanced_and_sticky() {
        let (mut spec, id) = spec(&["a", "b"], 6);
        let first = uniform(&spec);
        assert_eq!(sizes(&first, id), vec![3, 3]);
        spec.previous = first.clone();
        spec.members
            .insert("c".into(), BTreeSet::from(["t".to_string()]));
        let second = uniform(&spec);
        assert_eq!(sizes(&second, id), vec![2, 2, 2]);
        // a and b only lose partitions; nothing moves between them.
        for member in ["a", "b"] {
            assert!(second[member][&id].is_subset(&first[member][&id]));
        }
        let all: BTreeSet<i32> = second
            .values()
            .flat_map(|a| a[&id].iter().copied())
            .collect();
        assert_eq!(all.len(), 6);
    }

    #[test]
    fn uniform_respects_subscriptions() {
        let (mut spec, id) = spec(&["a"], 4);
        spec.members
            .insert("b".into(), BTreeSet::from(["other".to_string()]));
        let result = uniform(&spec);
        assert_eq!(result["a"][&id].len(), 4);
        assert!(result["b"].is_empty());
    }
}
