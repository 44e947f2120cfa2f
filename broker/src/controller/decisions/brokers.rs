//! Brokers' lifecycle: registration, heartbeats (unfencing once caught up), fencing on an
//! expired session or a controlled shutdown, unregistration.

use uuid::Uuid;

use super::{
    CommandOutcome, ControllerError, Decision, DecisionInputs, elect, partition_changed,
    unclean_allowed,
};
use crate::metadata::features::{SupportedFeatures, unsupported_by};
use crate::metadata::image::ClusterImage;
use crate::metadata::records::{Endpoint, ListenerEndpoints, MetadataRecord};

/// A RegisterBroker command's fields.
pub(super) struct Registration<'a> {
    pub node_id: i32,
    pub incarnation: Uuid,
    pub endpoint: &'a Endpoint,
    pub rack: &'a Option<String>,
    pub listeners: &'a ListenerEndpoints,
    pub supported_features: &'a Option<SupportedFeatures>,
}

pub(super) fn register(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    broker: Registration<'_>,
) -> Decision {
    let Registration {
        node_id,
        incarnation,
        endpoint,
        rack,
        listeners,
        supported_features,
    } = broker;
    // Kafka refuses a broker that cannot run the finalized levels; so does Oxbow, with the
    // level named, and the broker stops instead of misreading the log.
    if let Some(support) = supported_features
        && let Some(reason) = unsupported_by(
            &image.features.levels,
            support,
            &format!("broker {node_id}"),
        )
    {
        return Err(ControllerError::Refused(reason));
    }
    if let Some(existing) = image.brokers.get(&node_id)
        && existing.incarnation != incarnation
        && !existing.fenced
        && inputs.live_sessions.contains(&node_id)
    {
        return Err(ControllerError::DuplicateBrokerRegistration {
            node_id,
            incarnation: existing.incarnation,
        });
    }
    if image
        .brokers
        .get(&node_id)
        .is_some_and(|b| b.incarnation == incarnation)
    {
        return Ok((Vec::new(), CommandOutcome::Done));
    }
    let mut records = fence(image, node_id, inputs);
    records.push(MetadataRecord::BrokerRegistered {
        node_id,
        incarnation,
        endpoint: endpoint.clone(),
        rack: rack.clone(),
        listeners: listeners.clone(),
        supported_features: supported_features.clone(),
    });
    Ok((records, CommandOutcome::Done))
}

pub(super) fn heartbeat(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    node_id: i32,
    incarnation: Uuid,
    applied_index: u64,
) -> Decision {
    let broker = image
        .brokers
        .get(&node_id)
        .filter(|b| b.incarnation == incarnation)
        .ok_or(ControllerError::UnknownBroker(node_id))?;
    if broker.fenced && applied_index >= inputs.caught_up_index {
        return Ok((
            unfence(image, node_id),
            CommandOutcome::Heartbeat { fenced: false },
        ));
    }
    // A live broker whose session looked expired when a leader was fenced may have
    // been the last in-sync replica of a partition that went offline, and then
    // heartbeated before being fenced itself: it takes those partitions back now.
    let records = if broker.fenced {
        Vec::new()
    } else {
        revive_offline(image, node_id)
    };
    Ok((
        records,
        CommandOutcome::Heartbeat {
            fenced: broker.fenced,
        },
    ))
}

pub(super) fn controlled_shutdown(
    image: &ClusterImage,
    inputs: &DecisionInputs<'_>,
    node_id: i32,
    incarnation: Uuid,
) -> Decision {
    image
        .brokers
        .get(&node_id)
        .filter(|b| b.incarnation == incarnation)
        .ok_or(ControllerError::UnknownBroker(node_id))?;
    Ok((fence(image, node_id, inputs), CommandOutcome::Done))
}

/// Refused while the broker still holds replicas: they would be under-replicated forever.
pub(super) fn unregister(image: &ClusterImage, node_id: i32) -> Decision {
    if !image.brokers.contains_key(&node_id) {
        return Err(ControllerError::UnknownBroker(node_id));
    }
    let holding = image
        .topics
        .values()
        .flat_map(|t| &t.partitions)
        .filter(|p| p.replicas.contains(&node_id))
        .count();
    if holding > 0 {
        return Err(ControllerError::BrokerHoldsReplicas {
            node_id,
            partitions: holding,
        });
    }
    Ok((
        vec![MetadataRecord::BrokerUnregistered { node_id }],
        CommandOutcome::Done,
    ))
}

/// Fences `node_id`: it leaves every ISR it is in (but the last member stays, so the data
/// it alone holds is not forgotten), and partitions it led get a new leader from the ISR,
/// or none (offline) when no in-sync replica is live.
pub fn fence(
    image: &ClusterImage,
    node_id: i32,
    inputs: &DecisionInputs<'_>,
) -> Vec<MetadataRecord> {
    let Some(broker) = image.brokers.get(&node_id) else {
        return Vec::new();
    };
    let live = |n: i32| n != node_id && image.is_live(n) && inputs.live_sessions.contains(&n);
    let mut records = Vec::new();
    if !broker.fenced {
        records.push(MetadataRecord::BrokerFenced { node_id });
    }
    for topic in image.topics.values() {
        for (partition, state) in topic.partitions.iter().enumerate() {
            let in_isr = state.in_sync_replicas.contains(&node_id);
            if state.leader != node_id && !in_isr {
                continue;
            }
            let mut next = state.clone();
            if in_isr && state.in_sync_replicas.len() > 1 {
                next.in_sync_replicas.retain(|r| *r != node_id);
            }
            if state.leader == node_id {
                let unclean = unclean_allowed(image, topic, inputs.log_defaults);
                next.leader = elect(&next, &live, unclean).unwrap_or(-1);
                if next.leader != -1 && !next.in_sync_replicas.contains(&next.leader) {
                    // Unclean: the new leader's log is the truth from now on.
                    next.in_sync_replicas = vec![next.leader];
                }
                next.leader_epoch += 1;
            }
            if next != *state {
                records.push(partition_changed(topic, partition, next));
            }
        }
    }
    records
}

/// Unfences `node_id`: offline partitions whose ISR holds it get it as leader.
pub fn unfence(image: &ClusterImage, node_id: i32) -> Vec<MetadataRecord> {
    let mut records = vec![MetadataRecord::BrokerUnfenced { node_id }];
    records.extend(revive_offline(image, node_id));
    records
}

/// Offline partitions whose ISR holds `node_id` get it as leader.
pub(super) fn revive_offline(image: &ClusterImage, node_id: i32) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    for topic in image.topics.values() {
        for (partition, state) in topic.partitions.iter().enumerate() {
            if state.leader == -1 && state.in_sync_replicas.contains(&node_id) {
                let mut next = state.clone();
                next.leader = node_id;
                next.leader_epoch += 1;
                records.push(partition_changed(topic, partition, next));
            }
        }
    }
    records
}
