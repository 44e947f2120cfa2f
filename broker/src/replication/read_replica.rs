//! Follower fetching (KIP-392): which replica a consumer that names its rack should read
//! from. Kafka's `RackAwareReplicaSelector`: the leader when the consumer names no rack,
//! when no candidate shares its rack, or when the leader itself does; otherwise the
//! most caught-up candidate in its rack. Candidates are in-sync followers that already
//! hold the fetch offset, so the consumer finds its next record there.

use crate::metadata::image::ClusterImage;

use super::Partition;

/// Where the leader of `partition` sends a consumer in `client_rack` instead of serving it,
/// if anywhere: a caught-up in-sync follower on an unfenced broker of that rack.
pub fn preferred_read_replica(
    partition: &Partition,
    image: &ClusterImage,
    client_rack: &str,
    own_rack: Option<&str>,
    fetch_offset: u64,
) -> Option<i32> {
    if client_rack.is_empty() || !partition.is_leader() {
        return None;
    }
    let candidates: Vec<Candidate<'_>> = partition
        .read_replica_candidates(fetch_offset)
        .into_iter()
        .filter_map(|(node_id, log_end_offset)| {
            let registered = image.brokers.get(&node_id).filter(|b| !b.fenced)?;
            Some(Candidate {
                node_id,
                rack: registered.rack.as_deref(),
                log_end_offset,
            })
        })
        .collect();
    select(client_rack, own_rack, &candidates)
}

/// A follower the leader could send a consumer to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub node_id: i32,
    pub rack: Option<&'a str>,
    pub log_end_offset: u64,
}

/// The replica (other than the leader) that a consumer in `client_rack` should read from,
/// or `None` to keep reading from the leader.
pub fn select(
    client_rack: &str,
    leader_rack: Option<&str>,
    candidates: &[Candidate<'_>],
) -> Option<i32> {
    if client_rack.is_empty() || leader_rack == Some(client_rack) {
        return None;
    }
    candidates
        .iter()
        .filter(|c| c.rack == Some(client_rack))
        // Ties go to the lower node id, so every fetch of a consumer gets the same answer.
        .max_by_key(|c| (c.log_end_offset, std::cmp::Reverse(c.node_id)))
        .map(|c| c.node_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(node_id: i32, rack: &str, log_end_offset: u64) -> Candidate<'_> {
        Candidate {
            node_id,
            rack: Some(rack),
            log_end_offset,
        }
    }

    #[test]
    fn a_consumer_without_a_rack_stays_on_the_leader() {
        assert_eq!(select("", Some("a"), &[candidate(2, "", 10)]), None);
    }

    #[test]
    fn the_leader_in_the_consumers_rack_serves_it() {
        assert_eq!(select("a", Some("a"), &[candidate(2, "a", 10)]), None);
    }

    #[test]
    fn a_follower_in_the_consumers_rack_serves_it() {
        let candidates = [candidate(2, "b", 10), candidate(3, "c", 10)];
        assert_eq!(select("c", Some("a"), &candidates), Some(3));
        assert_eq!(select("b", None, &candidates), Some(2));
    }

    #[test]
    fn no_replica_in_the_consumers_rack_means_the_leader() {
        let candidates = [candidate(2, "b", 10), candidate(3, "c", 10)];
        assert_eq!(select("d", Some("a"), &candidates), None);
        let rackless = [Candidate {
            node_id: 2,
            rack: None,
            log_end_offset: 10,
        }];
        assert_eq!(select("b", Some("a"), &rackless), None);
    }

    #[test]
    fn the_most_caught_up_follower_of_the_rack_wins_and_ties_are_stable() {
        let candidates = [
            candidate(4, "b", 7),
            candidate(2, "b", 9),
            candidate(3, "b", 9),
        ];
        assert_eq!(select("b", Some("a"), &candidates), Some(2));
    }
}
