//! The security section of the configuration: SASL mechanisms and OAUTHBEARER's key set,
//! per-listener overrides, the TLS stores (broker-wide and per listener), the authorizer,
//! and which listener brokers replicate over with which credentials — parsed together,
//! because each check needs the others (a TLS listener needs stores unless it has its own;
//! a SASL inter-broker listener needs a mechanism it offers and a JAAS entry).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::ConfigError;
use super::listener_overrides::{self, ListenerSettings};
use super::listeners::{self, ClientListener, SecurityProtocol};
use super::raw::Raw;
use super::ssl::{self, SslConfig};

/// What the security keys add up to.
pub(super) struct Security {
    pub sasl_mechanisms: Vec<crate::model::SaslMechanism>,
    pub oauthbearer_jwks: Option<crate::security::JwksSettings>,
    pub listener_settings: BTreeMap<String, ListenerSettings>,
    pub ssl: Option<SslConfig>,
    pub listener_ssl: BTreeMap<String, SslConfig>,
    pub authorizer: Option<crate::security::Authorizer>,
    /// The listener brokers replicate over (a placeholder on a controller-only node).
    pub inter_broker: ClientListener,
    pub inter_broker_sasl: Option<InterBrokerSasl>,
}

impl Security {
    pub(super) fn parse(
        reader: Raw<'_>,
        raw: &BTreeMap<String, String>,
        client_listeners: &[ClientListener],
        controller_tls: bool,
        is_broker: bool,
    ) -> Result<Self, ConfigError> {
        let get = |key: &str| reader.get(key);
        let invalid = |key: &str, reason: &str| reader.invalid(key, reason);
        let int = |key: &str| reader.int(key);
        let boolean = |key: &str| reader.boolean(key);
        let sasl_mechanisms = sasl_mechanisms(&get("sasl.enabled.mechanisms"))
            .map_err(|reason| invalid("sasl.enabled.mechanisms", &reason))?;
        let oauthbearer_jwks = match get("sasl.oauthbearer.jwks.endpoint.url").trim() {
            "" => None,
            url => Some(crate::security::JwksSettings {
                path: crate::security::JwksSettings::path_of(url)
                    .map_err(|reason| invalid("sasl.oauthbearer.jwks.endpoint.url", &reason))?,
                expected_audience: get("sasl.oauthbearer.expected.audience")
                    .split(',')
                    .map(str::trim)
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect(),
                expected_issuer: Some(get("sasl.oauthbearer.expected.issuer").trim().to_string())
                    .filter(|i| !i.is_empty()),
                sub_claim_name: match get("sasl.oauthbearer.sub.claim.name").trim() {
                    "" => {
                        return Err(invalid(
                            "sasl.oauthbearer.sub.claim.name",
                            "must name a claim",
                        ));
                    }
                    name => name.to_string(),
                },
                clock_skew_seconds: int("sasl.oauthbearer.clock.skew.seconds")? as u64,
            }),
        };
        let client_names: Vec<String> = client_listeners.iter().map(|l| l.name.clone()).collect();
        let listener_settings = listener_overrides::parse(
            raw,
            &client_names,
            self::sasl_mechanisms,
            oauthbearer_jwks.is_some(),
        )
        .map_err(|(key, reason)| ConfigError::InvalidValue {
            value: raw.get(&key).cloned().unwrap_or_default(),
            key,
            reason,
        })?;
        // The broker-wide stores are needed unless every TLS listener has its own key store.
        let own_store = |l: &listeners::ClientListener| {
            listener_settings.get(&l.name).is_some_and(|s| {
                s.ssl.contains_key("ssl.keystore.location")
                    || s.ssl.contains_key("ssl.keystore.certificate.chain")
            })
        };
        let needs_stores = controller_tls
            || client_listeners
                .iter()
                .any(|l| l.protocol.uses_tls() && !own_store(l));
        let ssl = ssl::parse(&get, needs_stores).map_err(|(key, reason)| invalid(key, &reason))?;
        if controller_tls && ssl.as_ref().is_some_and(|ssl| ssl.truststore.is_none()) {
            return Err(invalid(
                "ssl.truststore.location",
                "an SSL controller listener requires client certificates (mutual TLS): set the CA certificates they chain to",
            ));
        }
        let authorizer = authorizer(&get("authorizer.class.name"), &get("super.users"))
            .map_err(|(key, reason)| invalid(key, &reason))?;
        let authorizer = match authorizer {
            Some(super_users) => Some(crate::security::Authorizer {
                super_users,
                allow_if_no_acl: boolean("allow.everyone.if.no.acl.found")?,
            }),
            None => None,
        };
        // A TLS listener with its own `listener.name.<l>.ssl.*` keys gets its own stores.
        let mut listener_ssl = BTreeMap::new();
        for (name, settings) in listener_settings.iter().filter(|(_, s)| !s.ssl.is_empty()) {
            let prefix = format!("listener.name.{}.", name.to_ascii_lowercase());
            let serves_tls = client_listeners
                .iter()
                .any(|l| l.name == *name && l.protocol.uses_tls());
            if !serves_tls {
                let key = format!(
                    "{prefix}{}",
                    settings.ssl.keys().next().cloned().unwrap_or_default()
                );
                return Err(invalid(
                    &key,
                    &format!("the listener {name} does not use TLS"),
                ));
            }
            let get_own = |key: &str| settings.ssl.get(key).cloned().unwrap_or_else(|| get(key));
            let own = ssl::parse(&get_own, true)
                .map_err(|(key, reason)| invalid(&format!("{prefix}{key}"), &reason))?;
            if let Some(own) = own {
                listener_ssl.insert(name.clone(), own);
            }
        }
        let inter_broker_name = match get("inter.broker.listener.name").trim() {
            "" => client_listeners.first().map(|l| l.name.clone()),
            name => Some(name.to_ascii_uppercase()),
        };
        let inter_broker = match &inter_broker_name {
            Some(name) => client_listeners.iter().find(|l| l.name == *name).cloned(),
            None => None,
        };
        // A controller-only node serves no clients: without a client listener it gets an
        // unused placeholder (nothing binds it).
        let inter_broker = match inter_broker {
            Some(listener) => listener,
            None if !is_broker && client_listeners.is_empty() => listeners::ClientListener {
                name: String::new(),
                protocol: SecurityProtocol::Plaintext,
                address: SocketAddr::from(([127, 0, 0, 1], 0)),
                advertised_host: "127.0.0.1".to_string(),
                advertised_port: 0,
            },
            None if client_listeners.is_empty() => {
                return Err(invalid("listeners", "expected PLAINTEXT://host:port"));
            }
            None => {
                return Err(invalid(
                    "inter.broker.listener.name",
                    "must name one of the client listeners in listeners",
                ));
            }
        };
        let inter_broker_sasl = if is_broker && inter_broker.protocol.uses_sasl() {
            Some(
                inter_broker_credentials(
                    &get("sasl.mechanism.inter.broker.protocol"),
                    &inter_broker.name,
                    &listener_settings,
                    &sasl_mechanisms,
                )
                .map_err(|(key, reason)| invalid(&key, &reason))?,
            )
        } else {
            None
        };
        // Followers use the inter-broker listener's own stores when it has them.
        let inter_broker_ssl = listener_ssl.get(&inter_broker.name).or(ssl.as_ref());
        if is_broker
            && inter_broker.protocol.uses_tls()
            && inter_broker_ssl.is_none_or(|ssl| ssl.truststore.is_none())
        {
            return Err(invalid(
                "ssl.truststore.location",
                &format!(
                    "the inter-broker listener {} uses TLS: followers verify the leaders' certificates against a trust store (ssl.truststore.location or ssl.truststore.certificates)",
                    inter_broker.name
                ),
            ));
        }
        Ok(Self {
            sasl_mechanisms,
            oauthbearer_jwks,
            listener_settings,
            ssl,
            listener_ssl,
            authorizer,
            inter_broker,
            inter_broker_sasl,
        })
    }
}

/// A follower's credentials for a `SASL_*` inter-broker listener, as Kafka's brokers take
/// them: `sasl.mechanism.inter.broker.protocol` (SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN,
/// offered on that listener) and the `username`/`password` of
/// `listener.name.<listener>.<mechanism>.sasl.jaas.config`.
#[derive(Clone, PartialEq, Eq)]
pub struct InterBrokerSasl {
    pub mechanism: crate::model::SaslMechanism,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for InterBrokerSasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InterBrokerSasl")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

fn inter_broker_credentials(
    mechanism: &str,
    listener: &str,
    listener_settings: &BTreeMap<String, ListenerSettings>,
    default_mechanisms: &[crate::model::SaslMechanism],
) -> Result<InterBrokerSasl, (String, String)> {
    use crate::model::SaslMechanism;
    let key = "sasl.mechanism.inter.broker.protocol";
    let refuse = |reason: String| (key.to_string(), reason);
    let chosen = SaslMechanism::from_name(mechanism.trim())
        .filter(|m| *m != SaslMechanism::OAuthBearer)
        .ok_or_else(|| {
            refuse(format!(
                "the inter-broker listener {listener} uses SASL: followers authenticate with SCRAM-SHA-256, SCRAM-SHA-512 or PLAIN, not `{mechanism}`"
            ))
        })?;
    let own = listener_settings.get(listener);
    let offered = own
        .and_then(|l| l.mechanisms.as_deref())
        .unwrap_or(default_mechanisms);
    if !offered.contains(&chosen) {
        return Err(refuse(format!(
            "{} is not offered on the inter-broker listener {listener}",
            chosen.name()
        )));
    }
    let jaas_key = format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_ascii_lowercase(),
        chosen.name().to_ascii_lowercase()
    );
    let jaas = own.and_then(|l| l.jaas_for(chosen)).ok_or_else(|| {
        (
            jaas_key.clone(),
            "the inter-broker listener uses SASL: this JAAS entry gives the brokers' own username and password".to_string(),
        )
    })?;
    let option = |name: &str| {
        jaas.options
            .get(name)
            .filter(|v| !v.is_empty())
            .cloned()
            .ok_or_else(|| {
                (
                    jaas_key.clone(),
                    format!("the JAAS entry has no `{name}` option"),
                )
            })
    };
    Ok(InterBrokerSasl {
        mechanism: chosen,
        username: option("username")?,
        password: option("password")?,
    })
}

/// `sasl.enabled.mechanisms`: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN and OAUTHBEARER are
/// served; GSSAPI (Kerberos) is refused by name rather than accepted and never offered.
fn sasl_mechanisms(text: &str) -> Result<Vec<crate::model::SaslMechanism>, String> {
    use crate::model::SaslMechanism;
    let mut mechanisms = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match SaslMechanism::from_name(name) {
            Some(mechanism) if !mechanisms.contains(&mechanism) => mechanisms.push(mechanism),
            Some(_) => {}
            None => {
                return Err(format!(
                    "`{name}` is not served (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN and OAUTHBEARER are)"
                ));
            }
        }
    }
    if mechanisms.is_empty() {
        return Err("name one or more of SCRAM-SHA-256, SCRAM-SHA-512, PLAIN, OAUTHBEARER".into());
    }
    Ok(mechanisms)
}

/// `authorizer.class.name` and `super.users`: Kafka's StandardAuthorizer (by its Kafka name,
/// so a Kafka config works unchanged) or none; any other class is refused, never ignored.
fn authorizer(
    class: &str,
    super_users: &str,
) -> Result<Option<std::collections::BTreeSet<String>>, (&'static str, String)> {
    let super_users = crate::security::Authorizer::parse_super_users(super_users)
        .map_err(|reason| ("super.users", reason))?;
    match class.trim() {
        "" => Ok(None),
        crate::security::STANDARD_AUTHORIZER => Ok(Some(super_users)),
        other => Err((
            "authorizer.class.name",
            format!(
                "`{other}` is not served: set `{}` (ACLs in the metadata log) or leave it empty",
                crate::security::STANDARD_AUTHORIZER
            ),
        )),
    }
}
