use super::*;
use proptest::prelude::*;

fn brokers(racks: &[&str]) -> Vec<BrokerSlot> {
    racks
        .iter()
        .enumerate()
        .map(|(id, rack)| BrokerSlot {
            id: id as i32,
            rack: Some((*rack).to_string()),
        })
        .collect()
}

#[test]
fn three_zones_put_every_partition_in_three_zones() {
    let brokers = brokers(&["a", "b", "c", "a", "b", "c"]);
    let assignment = assign_replicas(&brokers, 12, 3, 0).unwrap();
    for replicas in &assignment {
        let zones: BTreeSet<_> = replicas
            .iter()
            .map(|id| &brokers[*id as usize].rack)
            .collect();
        assert_eq!(
            zones.len(),
            3,
            "replicas {replicas:?} not spread over zones"
        );
    }
}

#[test]
fn rejects_impossible_requests() {
    let brokers = brokers(&["a", "b"]);
    assert_eq!(
        assign_replicas(&brokers, 1, 3, 0),
        Err(PlacementError::ReplicationFactorTooLarge {
            replication_factor: 3,
            brokers: 2
        })
    );
    assert_eq!(
        assign_replicas(&brokers, 1, 0, 0),
        Err(PlacementError::ReplicationFactorZero(0))
    );
    let twice = vec![brokers[0].clone(), brokers[0].clone()];
    assert_eq!(
        assign_replicas(&twice, 1, 1, 0),
        Err(PlacementError::DuplicateBroker(0))
    );
}

proptest! {
    #[test]
    fn placement_invariants(
        rack_of_broker in prop::collection::vec(0u8..4, 1..9),
        partitions in 0usize..40,
        rf_seed in 1usize..4,
        start in 0usize..20,
    ) {
        let brokers: Vec<BrokerSlot> = rack_of_broker
            .iter()
            .enumerate()
            .map(|(id, rack)| BrokerSlot { id: id as i32 * 10, rack: Some(format!("zone-{rack}")) })
            .collect();
        let rf = rf_seed.min(brokers.len());
        let assignment = assign_replicas(&brokers, partitions, rf, start).unwrap();
        prop_assert_eq!(assignment.len(), partitions);
        let rack_count = rack_of_broker.iter().collect::<BTreeSet<_>>().len();
        let mut leaders: BTreeMap<i32, usize> = BTreeMap::new();
        for replicas in &assignment {
            prop_assert_eq!(replicas.len(), rf);
            let distinct: BTreeSet<_> = replicas.iter().collect();
            prop_assert_eq!(distinct.len(), rf, "duplicate broker in {:?}", replicas);
            let racks: BTreeSet<_> = replicas
                .iter()
                .map(|id| brokers.iter().find(|b| b.id == *id).map(|b| b.rack.clone()))
                .collect();
            prop_assert_eq!(racks.len(), rf.min(rack_count), "replicas {:?} share racks needlessly", replicas);
            *leaders.entry(replicas[0]).or_default() += 1;
        }
        // Leaders are spread round-robin: no broker leads more than one partition above another.
        if partitions >= brokers.len() {
            let most = leaders.values().max().copied().unwrap_or(0);
            let least = brokers.iter().map(|b| leaders.get(&b.id).copied().unwrap_or(0)).min().unwrap_or(0);
            prop_assert!(most - least <= 1, "leaders unbalanced: {:?}", leaders);
        }
    }
}
