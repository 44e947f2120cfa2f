//! KIP-951: a Produce or Fetch answered NOT_LEADER_OR_FOLLOWER (or FENCED_LEADER_EPOCH)
//! names the partition's current leader and epoch, and the response lists that leader's
//! endpoint, so a client (librdkafka ≥ 2.4, the Java client ≥ 3.7) sends its retry to
//! the new leader at once instead of first waiting for a metadata refresh and its backoff.
//!
//! The leader comes from this broker's own image; a partition without a known leader gets
//! no hint (Kafka's -1/-1), and the client falls back to a metadata refresh.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::metadata::image::ClusterImage;
use crate::state::BrokerState;

use super::errors;

/// The leaders named so far in one response, to list their endpoints once.
pub struct LeaderHints<'a> {
    image: Arc<ClusterImage>,
    /// The listener the request came in on: endpoints are this listener's.
    listener: &'a str,
    named: BTreeSet<i32>,
}

/// One broker's address, as the response's `node_endpoints` carries it.
pub struct LeaderEndpoint {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

impl<'a> LeaderHints<'a> {
    pub fn new(broker: &BrokerState, listener: &'a str) -> Self {
        Self {
            image: broker.controller.image(),
            listener,
            named: BTreeSet::new(),
        }
    }

    /// (leader id, leader epoch) to send with `error_code` for `topic`-`partition`, when
    /// the code is one a client answers by going to another leader and the leader is known.
    pub fn leader_for(
        &mut self,
        error_code: i16,
        topic: &str,
        partition: i32,
    ) -> Option<(i32, i32)> {
        if error_code != errors::NOT_LEADER_OR_FOLLOWER && error_code != errors::FENCED_LEADER_EPOCH
        {
            return None;
        }
        let state = self
            .image
            .topics
            .get(topic)?
            .partitions
            .get(usize::try_from(partition).ok()?)?;
        let leader = self
            .image
            .brokers
            .get(&state.leader)
            .filter(|b| !b.fenced && b.endpoint_for(self.listener).is_some())?;
        self.named.insert(leader.node_id);
        Some((leader.node_id, state.leader_epoch))
    }

    /// The endpoints of every leader named, for the response's `node_endpoints`.
    pub fn endpoints(&self) -> Vec<LeaderEndpoint> {
        self.named
            .iter()
            .filter_map(|id| self.image.brokers.get(id))
            .filter_map(|broker| {
                let endpoint = broker.endpoint_for(self.listener)?;
                Some(LeaderEndpoint {
                    node_id: broker.node_id,
                    host: endpoint.host.clone(),
                    port: i32::from(endpoint.port),
                    rack: broker.rack.clone(),
                })
            })
            .collect()
    }
}
