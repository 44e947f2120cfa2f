//! Where a node listens and how: the client listeners (`listeners`,
//! `advertised.listeners`, `listener.security.protocol.map`) and the controller listener
//! (`controller.listener.names`), and whether the quorum speaks TLS.

use std::net::SocketAddr;

use super::listeners::{self, ClientListener};
use super::raw::Raw;
use super::{ConfigError, named_listener};

/// The node's listeners as the configuration names them.
#[derive(Debug)]
pub(super) struct Network {
    pub controller_names: Vec<String>,
    pub controller_listener: Option<SocketAddr>,
    pub client_listeners: Vec<ClientListener>,
    pub controller_tls: bool,
}

impl Network {
    pub fn parse(raw: Raw<'_>) -> Result<Self, ConfigError> {
        let listener_text = raw.get("listeners");
        let controller_names: Vec<String> = raw
            .get("controller.listener.names")
            .split(',')
            .map(|n| n.trim().to_ascii_uppercase())
            .filter(|n| !n.is_empty())
            .collect();
        let listener_entries = listeners::entries(&listener_text)
            .map_err(|reason| raw.invalid("listeners", &reason))?;
        let advertised_entries = listeners::entries(&raw.get("advertised.listeners"))
            .map_err(|reason| raw.invalid("advertised.listeners", &reason))?;
        let protocols = listeners::security_protocols(&raw.get("listener.security.protocol.map"))
            .map_err(|reason| raw.invalid("listener.security.protocol.map", &reason))?;
        for (key, entries) in [
            ("listeners", &listener_entries),
            ("advertised.listeners", &advertised_entries),
        ] {
            listeners::check_protocols(entries, &protocols, &controller_names)
                .map_err(|reason| raw.invalid(key, &reason))?;
        }
        // As for client listeners, Kafka's `CONTROLLER://:9093` binds every interface and a
        // host name is resolved; other controllers are told `advertised.listeners`' entry.
        let controller_listener = match named_listener(&listener_text, &controller_names) {
            Some(address) => {
                let needs = "the controller listener needs a host and port, e.g. CONTROLLER://127.0.0.1:9093";
                let (host, port) = address
                    .rsplit_once(':')
                    .ok_or_else(|| raw.invalid("listeners", needs))?;
                let port = port
                    .parse::<u16>()
                    .map_err(|_| raw.invalid("listeners", needs))?;
                let host = host.trim_start_matches('[').trim_end_matches(']');
                Some(
                    listeners::bind_address(host, port)
                        .map_err(|reason| raw.invalid("listeners", &reason))?,
                )
            }
            None => None,
        };
        let client_listeners = listeners::client_listeners(
            &listener_entries,
            &advertised_entries,
            &protocols,
            &controller_names,
        )
        .map_err(|(key, reason)| raw.invalid(key, &reason))?;
        // The quorum speaks TLS when the (first) controller listener is mapped to SSL; every
        // node, voter or not, reads the map to know how to reach the controllers.
        let controller_tls = controller_names
            .first()
            .and_then(|name| protocols.get(name))
            .is_some_and(|protocol| protocol == "SSL");
        Ok(Self {
            controller_names,
            controller_listener,
            client_listeners,
            controller_tls,
        })
    }
}

/// `process.roles`: (broker, controller), at least one.
pub(super) fn roles(raw: Raw<'_>) -> Result<(bool, bool), ConfigError> {
    let mut is_broker = false;
    let mut is_controller = false;
    for role in raw.get("process.roles").split(',').map(str::trim) {
        match role {
            "broker" => is_broker = true,
            "controller" => is_controller = true,
            "" => {}
            _ => return Err(raw.invalid("process.roles", "roles are broker and controller")),
        }
    }
    if !is_broker && !is_controller {
        return Err(raw.invalid("process.roles", "at least one role is needed"));
    }
    Ok((is_broker, is_controller))
}
