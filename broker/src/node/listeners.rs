//! The node's sockets and the TLS and SASL each listener serves with. Every socket is bound
//! and every key store read before anything on disk changes: a port another process holds
//! or a missing store stops the node with one line, its directories untouched.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Context;
use tokio::sync::watch;

use crate::config::{BrokerConfig, ClientAuth, ClientListener, SecurityProtocol, SslConfig};
use crate::security::{SaslListener, ServerTls, TokenValidator};
use crate::server::ListenerSecurity;

/// Every socket the node serves, bound before anything on disk changes: a port another
/// process holds stops the node with one line, its log and metadata directories untouched.
/// The Kafka listener's socket is bound but listens only once the broker has joined the
/// cluster, so until then clients are refused and try another broker, as before.
pub(super) struct Sockets {
    /// One per client listener, in `config.client_listeners` order.
    pub kafka: Vec<socket2::Socket>,
    pub controller: Option<tokio::net::TcpListener>,
    pub metrics: Option<tokio::net::TcpListener>,
}

impl Sockets {
    pub async fn bind(config: &BrokerConfig) -> anyhow::Result<Self> {
        async fn bind(
            address: Option<std::net::SocketAddr>,
            what: &str,
        ) -> anyhow::Result<Option<tokio::net::TcpListener>> {
            match address {
                Some(address) => tokio::net::TcpListener::bind(address)
                    .await
                    .map(Some)
                    .with_context(|| format!("cannot bind the {what} {address}")),
                None => Ok(None),
            }
        }
        let mut kafka = Vec::new();
        if config.is_broker {
            for listener in &config.client_listeners {
                kafka.push(bind_only(listener.address).with_context(|| {
                    format!(
                        "cannot bind the Kafka listener {} {}",
                        listener.name, listener.address
                    )
                })?);
            }
        }
        Ok(Self {
            kafka,
            controller: bind(
                config.controller_listener.filter(|_| config.is_controller),
                "controller listener",
            )
            .await?,
            metrics: bind(config.metrics_listener, "metrics.listener").await?,
        })
    }
}

/// A TCP socket bound to `address` (address reuse on, as tokio's listeners), not listening.
fn bind_only(address: std::net::SocketAddr) -> std::io::Result<socket2::Socket> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(address),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(true)?;
    socket.bind(&address.into())?;
    Ok(socket)
}

pub(super) fn start_listening(
    socket: socket2::Socket,
    address: std::net::SocketAddr,
) -> anyhow::Result<tokio::net::TcpListener> {
    let listening = (|| {
        socket.listen(1024)?;
        socket.set_nonblocking(true)?;
        tokio::net::TcpListener::from_std(socket.into())
    })();
    listening.with_context(|| format!("cannot listen on the Kafka listener {address}"))
}

/// The TLS settings of the client listeners and the quorum, and the OAUTHBEARER validator.
pub(super) struct ListenerTls {
    /// The broker's stores (`ssl.*`), as the SSL listeners serve them.
    tls: Option<Arc<ServerTls>>,
    /// The same stores for SASL_SSL listeners: no client certificate asked for (KIP-684:
    /// SASL authenticates the client).
    sasl_tls: Option<Arc<ServerTls>>,
    /// Listeners with their own `listener.name.<l>.ssl.*` stores.
    by_listener: BTreeMap<String, Arc<ServerTls>>,
    tokens: Arc<TokenValidator>,
}

impl ListenerTls {
    pub fn load(config: &BrokerConfig) -> anyhow::Result<Self> {
        let tls = match &config.ssl {
            Some(ssl) if config.is_broker => Some(Arc::new(
                ServerTls::load(ssl).context("cannot serve the SSL listeners")?,
            )),
            _ => None,
        };
        // So is the OAUTHBEARER key set.
        let tokens = Arc::new(token_validator(config)?);
        let sasl_tls = match &config.ssl {
            Some(ssl)
                if config.is_broker
                    && ssl.client_auth != ClientAuth::None
                    && config
                        .client_listeners
                        .iter()
                        .any(|l| l.protocol == SecurityProtocol::SaslSsl) =>
            {
                let relaxed = SslConfig {
                    client_auth: ClientAuth::None,
                    ..ssl.clone()
                };
                Some(Arc::new(
                    ServerTls::load(&relaxed).context("cannot serve the SASL_SSL listeners")?,
                ))
            }
            _ => None,
        };
        let mut by_listener = BTreeMap::new();
        for (name, ssl) in config.listener_ssl.iter().filter(|_| config.is_broker) {
            // SASL_SSL ones, again, without asking for a client certificate.
            let sasl = config
                .client_listeners
                .iter()
                .any(|l| l.name == *name && l.protocol == SecurityProtocol::SaslSsl);
            let effective = SslConfig {
                client_auth: if sasl {
                    ClientAuth::None
                } else {
                    ssl.client_auth
                },
                ..ssl.clone()
            };
            let loaded = ServerTls::load(&effective).with_context(|| {
                format!("cannot serve the listener {name} with its listener.name.* stores")
            })?;
            by_listener.insert(name.clone(), Arc::new(loaded));
        }
        Ok(Self {
            tls,
            sasl_tls,
            by_listener,
            tokens,
        })
    }

    /// The quorum's mutual TLS: the same stores, a client certificate always required.
    pub fn controller(config: &BrokerConfig) -> anyhow::Result<Option<Arc<ServerTls>>> {
        match &config.ssl {
            Some(ssl) if config.controller_tls => {
                let mutual = SslConfig {
                    client_auth: ClientAuth::Required,
                    ..ssl.clone()
                };
                Ok(Some(Arc::new(
                    ServerTls::load(&mutual).context("cannot serve the SSL controller listener")?,
                )))
            }
            _ => Ok(None),
        }
    }

    /// The stores the followers present to the leaders (the inter-broker listener's).
    pub fn inter_broker(&self, config: &BrokerConfig) -> Option<Arc<ServerTls>> {
        self.by_listener
            .get(&config.inter_broker_listener)
            .or(self.tls.as_ref())
            .filter(|_| config.inter_broker_tls())
            .cloned()
    }

    /// What `listener` serves: its TLS stores and its SASL mechanisms.
    pub fn security(&self, config: &BrokerConfig, listener: &ClientListener) -> ListenerSecurity {
        ListenerSecurity {
            tls: match listener.protocol {
                _ if self.by_listener.contains_key(&listener.name) => {
                    self.by_listener.get(&listener.name).map(Arc::clone)
                }
                SecurityProtocol::SaslSsl => {
                    self.sasl_tls.as_ref().or(self.tls.as_ref()).map(Arc::clone)
                }
                protocol if protocol.uses_tls() => self.tls.as_ref().map(Arc::clone),
                _ => None,
            },
            sasl: listener.protocol.uses_sasl().then(|| {
                Arc::new(SaslListener {
                    mechanisms: config.sasl_mechanisms_for(&listener.name).to_vec(),
                    tokens: Arc::clone(&self.tokens),
                })
            }),
        }
    }

    /// Reloads every store when its files change, until shutdown.
    pub fn watch(&self, shutdown: &watch::Receiver<bool>) {
        for tls in [&self.tls, &self.sasl_tls]
            .into_iter()
            .flatten()
            .chain(self.by_listener.values())
        {
            tokio::spawn(Arc::clone(tls).watch(shutdown.clone()));
        }
    }
}

/// How OAUTHBEARER tokens are validated: against the key set, read now (an unreadable set
/// refuses the start), or with Kafka's unsecured validator, with a warning when a SASL
/// listener offers it. Also warns of JAAS options Oxbow does not read.
fn token_validator(config: &BrokerConfig) -> anyhow::Result<crate::security::TokenValidator> {
    use crate::security::{JwksValidator, SaslMechanism, TokenValidator};
    let sasl_listeners: Vec<_> = config
        .client_listeners
        .iter()
        .filter(|l| l.protocol.uses_sasl())
        .collect();
    for listener in &sasl_listeners {
        let plain = config
            .listener_settings
            .get(&listener.name)
            .and_then(|l| l.jaas_for(SaslMechanism::Plain));
        if plain.is_some_and(|jaas| jaas.options.keys().any(|k| k.starts_with("user_"))) {
            tracing::warn!(
                listener = %listener.name,
                "PLAIN's JAAS user_<name> entries are not read: PLAIN passwords are checked against the users' SCRAM credentials (kafka-configs --entity-type users)"
            );
        }
    }
    let offered = sasl_listeners.iter().any(|l| {
        config
            .sasl_mechanisms_for(&l.name)
            .contains(&SaslMechanism::OAuthBearer)
    });
    Ok(match &config.oauthbearer_jwks {
        Some(settings) => {
            let keys = JwksValidator::load(settings.clone()).map_err(|reason| {
                anyhow::anyhow!("sasl.oauthbearer.jwks.endpoint.url: {reason}")
            })?;
            if offered {
                tracing::info!(jwks = %settings.path.display(), "OAUTHBEARER tokens must be signed by a key of the key set");
            }
            TokenValidator::Jwks(keys)
        }
        None => {
            if offered {
                tracing::warn!(
                    "OAUTHBEARER is offered with Kafka's default validator, which trusts unsecured (alg:none) tokens: for development and tests only (set sasl.oauthbearer.jwks.endpoint.url for signed tokens)"
                );
            }
            TokenValidator::Unsecured
        }
    })
}
