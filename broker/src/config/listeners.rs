//! Kafka's listener model: `listeners` names any number of `NAME://host:port` entries,
//! `listener.security.protocol.map` gives each name its protocol, `advertised.listeners`
//! the address clients are told per name, `inter.broker.listener.name` the one other
//! brokers use, and `controller.listener.names` the ones that serve the quorum.
//!
//! ```text
//! listeners=PLAINTEXT://:9092,EXTERNAL://0.0.0.0:9094,CONTROLLER://127.0.0.1:9093
//!            └ every interface  └ bound as given       └ the quorum's, not a client one
//! advertised.listeners=PLAINTEXT://broker-0.svc:9092,EXTERNAL://203.0.113.7:31000
//! ```
//!
//! A host name (`localhost`) is resolved once at start-up; an empty host binds every
//! interface and is advertised as this machine's host name, as Kafka does.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};

/// The security protocols Oxbow serves on a listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    Plaintext,
    /// TLS (rustls), with client certificates when `ssl.client.auth` asks for them.
    Ssl,
    /// SASL (SCRAM) before any other request, in clear.
    SaslPlaintext,
    /// SASL (SCRAM) over TLS.
    SaslSsl,
}

impl SecurityProtocol {
    pub fn uses_tls(self) -> bool {
        matches!(self, Self::Ssl | Self::SaslSsl)
    }

    pub fn uses_sasl(self) -> bool {
        matches!(self, Self::SaslPlaintext | Self::SaslSsl)
    }
}

/// One client listener: where it binds and what clients are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientListener {
    /// Upper-cased, as Kafka compares listener names.
    pub name: String,
    pub protocol: SecurityProtocol,
    pub address: SocketAddr,
    pub advertised_host: String,
    pub advertised_port: u16,
}

/// `NAME://host:port` entries of a listener list, names upper-cased, in order.
pub fn entries(text: &str) -> Result<Vec<(String, String, u16)>, String> {
    let mut entries = Vec::new();
    for listener in text.split(',').map(str::trim).filter(|l| !l.is_empty()) {
        let (name, address) = listener
            .split_once("://")
            .ok_or_else(|| format!("`{listener}` is not NAME://host:port"))?;
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| format!("`{listener}` has no port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{listener}` has no valid port"))?;
        let name = name.trim().to_ascii_uppercase();
        if entries.iter().any(|(other, _, _)| *other == name) {
            return Err(format!("listener name {name} appears twice"));
        }
        entries.push((name, host.trim_matches(['[', ']']).to_string(), port));
    }
    Ok(entries)
}

/// `listener.security.protocol.map`: listener name → security protocol, names upper-cased.
pub fn security_protocols(text: &str) -> Result<BTreeMap<String, String>, String> {
    const PROTOCOLS: [&str; 4] = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];
    let mut map = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, protocol) = entry
            .split_once(':')
            .ok_or_else(|| format!("`{entry}` is not NAME:PROTOCOL"))?;
        let protocol = protocol.trim().to_ascii_uppercase();
        if !PROTOCOLS.contains(&protocol.as_str()) {
            return Err(format!(
                "`{protocol}` is not a security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"
            ));
        }
        map.insert(name.trim().to_ascii_uppercase(), protocol);
    }
    Ok(map)
}

/// Refuses a listener whose security protocol Oxbow does not serve yet, or that has none:
/// serving `SASL_SSL://` as plain TLS would let a client that expects to authenticate
/// believe it did. A controller listener is `PLAINTEXT` or `SSL` (mutual TLS: the quorum's
/// own RPCs do not speak SASL).
pub fn check_protocols(
    entries: &[(String, String, u16)],
    protocols: &BTreeMap<String, String>,
    controller_names: &[String],
) -> Result<(), String> {
    for (name, _, _) in entries {
        let controller = controller_names.contains(name);
        let protocol = match protocols.get(name) {
            Some(protocol) => protocol.as_str(),
            None if controller => "PLAINTEXT",
            None => {
                return Err(format!(
                    "listener {name} has no security protocol in listener.security.protocol.map"
                ));
            }
        };
        match protocol {
            "PLAINTEXT" => {}
            "SSL" => {}
            "SASL_PLAINTEXT" | "SASL_SSL" if !controller => {}
            _ => {
                return Err(format!(
                    "controller listener {name} uses {protocol}, which Oxbow's quorum does not serve (PLAINTEXT and SSL with client certificates are); it is refused rather than served as something weaker"
                ));
            }
        }
    }
    Ok(())
}

/// The address to bind for `host:port`: an empty host is every interface, a name is
/// resolved (its first address).
pub fn bind_address(host: &str, port: u16) -> Result<SocketAddr, String> {
    if host.is_empty() {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| format!("cannot resolve host `{host}`"))
}

/// What clients are told when `advertised.listeners` does not name a listener: its host,
/// or this machine's name when it binds every interface.
fn default_advertised(host: &str, address: &SocketAddr) -> String {
    if !host.is_empty() && !address.ip().is_unspecified() {
        return host.to_string();
    }
    nix::unistd::gethostname()
        .ok()
        .and_then(|name| name.into_string().ok())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The client listeners (every listener not named in `controller.listener.names`), each
/// with the address `advertised.listeners` gives it.
pub fn client_listeners(
    listeners: &[(String, String, u16)],
    advertised: &[(String, String, u16)],
    protocols: &BTreeMap<String, String>,
    controller_names: &[String],
) -> Result<Vec<ClientListener>, (&'static str, String)> {
    for (name, _, _) in advertised {
        if !listeners.iter().any(|(listener, _, _)| listener == name) {
            return Err((
                "advertised.listeners",
                format!("listener {name} is advertised but not in listeners"),
            ));
        }
        // A controller listener may be advertised: to the other controllers (KIP-853), never
        // to clients (it is left out of the client listeners below).
    }
    listeners
        .iter()
        .filter(|(name, _, _)| !controller_names.contains(name))
        .map(|(name, host, port)| {
            let address = bind_address(host, *port).map_err(|reason| ("listeners", reason))?;
            let (advertised_host, advertised_port) = advertised
                .iter()
                .find(|(other, _, _)| other == name)
                .map(|(_, host, port)| (host.clone(), *port))
                .unwrap_or_else(|| (default_advertised(host, &address), address.port()));
            let protocol = match protocols.get(name).map(String::as_str) {
                Some("SSL") => SecurityProtocol::Ssl,
                Some("SASL_PLAINTEXT") => SecurityProtocol::SaslPlaintext,
                Some("SASL_SSL") => SecurityProtocol::SaslSsl,
                _ => SecurityProtocol::Plaintext,
            };
            Ok(ClientListener {
                name: name.clone(),
                protocol,
                address,
                advertised_host,
                advertised_port,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_empty_hosts_and_advertised_addresses_follow_kafka() {
        let listeners =
            entries("PLAINTEXT://:9092,external://localhost:9094,CONTROLLER://127.0.0.1:9093")
                .unwrap();
        let advertised = entries("EXTERNAL://kafka.example.com:31000").unwrap();
        let protocols = security_protocols("PLAINTEXT:PLAINTEXT,EXTERNAL:SSL").unwrap();
        let clients = client_listeners(
            &listeners,
            &advertised,
            &protocols,
            &["CONTROLLER".to_string()],
        )
        .unwrap();
        assert_eq!(clients.len(), 2);
        assert_eq!(clients[0].name, "PLAINTEXT");
        assert!(clients[0].address.ip().is_unspecified());
        assert_eq!(clients[0].address.port(), 9092);
        assert_ne!(clients[0].advertised_host, "0.0.0.0");
        assert_eq!(clients[0].protocol, SecurityProtocol::Plaintext);
        assert_eq!(clients[1].name, "EXTERNAL");
        assert_eq!(clients[1].protocol, SecurityProtocol::Ssl);
        assert!(clients[1].address.ip().is_loopback());
        assert_eq!(
            (
                clients[1].advertised_host.as_str(),
                clients[1].advertised_port
            ),
            ("kafka.example.com", 31000)
        );
        assert!(entries("PLAINTEXT://:9092,PLAINTEXT://:9093").is_err());
        let stray = entries("OTHER://h:1").unwrap();
        assert!(client_listeners(&listeners, &stray, &protocols, &[]).is_err());
    }
}
