//! The metadata quorum a node belongs to: its voters (static, `controller.quorum.voters`)
//! or the controllers it bootstraps from (dynamic, KIP-853), and the address other
//! controllers reach this one at, checked against the node's roles and listeners.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::raw::Raw;
use super::{ConfigError, named_listener, parse_bootstrap_servers, parse_voters};

/// What the configuration says of the quorum.
#[derive(Debug)]
pub(super) struct Quorum {
    pub voters: BTreeMap<i32, String>,
    pub bootstrap_servers: Vec<String>,
    pub controller_advertised: Option<String>,
}

impl Quorum {
    pub fn parse(
        raw: Raw<'_>,
        node_id: i32,
        is_controller: bool,
        controller_listener: Option<SocketAddr>,
        controller_names: &[String],
    ) -> Result<Self, ConfigError> {
        let mut voters = parse_voters(&raw.get("controller.quorum.voters"))
            .map_err(|reason| raw.invalid("controller.quorum.voters", &reason))?;
        let bootstrap_servers =
            parse_bootstrap_servers(&raw.get("controller.quorum.bootstrap.servers"))
                .map_err(|reason| raw.invalid("controller.quorum.bootstrap.servers", &reason))?;
        let dynamic_quorum = !bootstrap_servers.is_empty();
        // Where other controllers reach this one: its advertised controller listener, else
        // the address it binds.
        let controller_advertised =
            named_listener(&raw.get("advertised.listeners"), controller_names)
                .or_else(|| controller_listener.map(|a| a.to_string()));
        if voters.is_empty() && !dynamic_quorum {
            if !is_controller {
                return Err(raw.invalid(
                    "controller.quorum.voters",
                    "a broker-only node needs the voters of the quorum it joins (or controller.quorum.bootstrap.servers)",
                ));
            }
            let address =
                controller_listener.map_or_else(|| "127.0.0.1:0".to_string(), |a| a.to_string());
            voters.insert(node_id, address);
        }
        if is_controller && !dynamic_quorum && !voters.contains_key(&node_id) {
            return Err(raw.invalid(
                "controller.quorum.voters",
                &format!(
                    "node.id {node_id} has the controller role but is not a voter (a controller that joins a dynamic quorum names controller.quorum.bootstrap.servers)"
                ),
            ));
        }
        // In a dynamic quorum the voters are only the initial ones: a voter that was removed
        // (RemoveRaftVoter) may come back as a broker only.
        if !is_controller && !dynamic_quorum && voters.contains_key(&node_id) {
            return Err(raw.invalid(
                "process.roles",
                &format!(
                    "node {node_id} is a voter in controller.quorum.voters but lacks the controller role"
                ),
            ));
        }
        if is_controller && (voters.len() > 1 || dynamic_quorum) && controller_listener.is_none() {
            return Err(raw.invalid(
                "listeners",
                "a voter of a multi-node quorum needs a controller listener (e.g. CONTROLLER://127.0.0.1:9093)",
            ));
        }
        if is_controller
            && dynamic_quorum
            && controller_advertised.as_deref().is_none_or(|a| {
                a.starts_with("0.0.0.0:") || a.starts_with("[::]:") || a.starts_with(':')
            })
        {
            return Err(raw.invalid(
                "advertised.listeners",
                "a controller of a dynamic quorum needs an address the other controllers can reach: advertise the controller listener (e.g. CONTROLLER://host:9093)",
            ));
        }
        Ok(Self {
            voters,
            bootstrap_servers,
            controller_advertised,
        })
    }
}
