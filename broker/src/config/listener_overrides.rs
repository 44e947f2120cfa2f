//! Kafka's per-listener keys, `listener.name.<listener>.<key>`, for the SASL settings a
//! Kafka broker config carries per listener:
//!
//! ```text
//! listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512
//! listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
//! listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler
//! ```
//!
//! and its own TLS stores and client authentication:
//!
//! ```text
//! listener.name.external.ssl.keystore.location=/etc/oxbow/external/broker.pem
//! listener.name.external.ssl.client.auth=none
//! ```
//!
//! The mechanisms a listener offers may differ from `sasl.enabled.mechanisms`; a listener's
//! `ssl.*` keys replace the broker-wide ones for that listener only (the others it does not
//! set still apply). A JAAS entry
//! must name the login module of its mechanism; Oxbow's brokers hold no passwords of their
//! clients, so a PLAIN entry's `user_<name>` options are not read (PLAIN checks the SCRAM
//! credentials), which start-up warns about. The OAUTHBEARER server callback handler may
//! name Kafka's validator Oxbow runs (signed tokens with `sasl.oauthbearer.jwks.endpoint.url`,
//! else unsecured ones).

use std::collections::BTreeMap;

use crate::model::SaslMechanism;

pub const PREFIX: &str = "listener.name.";

/// Kafka's validator of signed tokens, and its unsecured default.
pub const SECURED_VALIDATOR: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
pub const UNSECURED_VALIDATOR: &str = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler";

/// A JAAS login module entry (`sasl.jaas.config`): its class and options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaasEntry {
    pub login_module: String,
    pub options: BTreeMap<String, String>,
}

/// One listener's own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListenerSettings {
    /// `listener.name.<l>.sasl.enabled.mechanisms`: instead of `sasl.enabled.mechanisms`.
    pub mechanisms: Option<Vec<SaslMechanism>>,
    /// `listener.name.<l>.<mechanism>.sasl.jaas.config`.
    pub jaas: Vec<(SaslMechanism, JaasEntry)>,
    /// `listener.name.<l>.ssl.*`: this listener's values of broker `ssl.*` keys.
    pub ssl: BTreeMap<String, String>,
}

impl ListenerSettings {
    pub fn jaas_for(&self, mechanism: SaslMechanism) -> Option<&JaasEntry> {
        self.jaas
            .iter()
            .find(|(m, _)| *m == mechanism)
            .map(|(_, entry)| entry)
    }
}

/// The `listener.name.*` keys of `raw`, by upper-cased listener name. `listeners` are the
/// configured names (upper-cased); `signed_tokens`: a JWKS is configured.
pub fn parse(
    raw: &BTreeMap<String, String>,
    listeners: &[String],
    parse_mechanisms: impl Fn(&str) -> Result<Vec<SaslMechanism>, String>,
    signed_tokens: bool,
) -> Result<BTreeMap<String, ListenerSettings>, (String, String)> {
    let mut parsed: BTreeMap<String, ListenerSettings> = BTreeMap::new();
    for (key, value) in raw.range(PREFIX.to_string()..) {
        let Some(rest) = key.strip_prefix(PREFIX) else {
            break;
        };
        let refuse = |reason: String| (key.clone(), reason);
        let (listener, setting) = rest
            .split_once('.')
            .ok_or_else(|| refuse("expected listener.name.<listener>.<key>".into()))?;
        let listener = listener.to_ascii_uppercase();
        if !listeners.contains(&listener) {
            return Err(refuse(format!(
                "no listener is named {listener} (listeners: {})",
                listeners.join(", ")
            )));
        }
        let entry = parsed.entry(listener).or_default();
        if setting == "sasl.enabled.mechanisms" {
            entry.mechanisms = Some(parse_mechanisms(value).map_err(refuse)?);
            continue;
        }
        if setting.starts_with("ssl.") {
            if oxbow_config_keys::broker_key(setting).is_none() {
                return Err(refuse(format!(
                    "`{setting}` is not an ssl.* key Oxbow knows"
                )));
            }
            entry.ssl.insert(setting.to_string(), value.clone());
            continue;
        }
        let Some((mechanism, mechanism_key)) = setting.split_once('.') else {
            return Err(refuse(unsupported()));
        };
        let Some(mechanism) = SaslMechanism::from_name(&mechanism.to_ascii_uppercase()) else {
            return Err(refuse(unsupported()));
        };
        match mechanism_key {
            "sasl.jaas.config" => {
                let jaas = parse_jaas(value).map_err(refuse)?;
                let expected = login_module(mechanism);
                if jaas.login_module != expected {
                    return Err(refuse(format!(
                        "{} needs the login module {expected}, not {}",
                        mechanism.name(),
                        jaas.login_module
                    )));
                }
                entry.jaas.push((mechanism, jaas));
            }
            "sasl.server.callback.handler.class" if mechanism == SaslMechanism::OAuthBearer => {
                let runs = if signed_tokens {
                    SECURED_VALIDATOR
                } else {
                    UNSECURED_VALIDATOR
                };
                if value.trim() != runs {
                    return Err(refuse(format!(
                        "OAUTHBEARER tokens are checked by {runs} here ({}); other handlers are not loaded",
                        if signed_tokens {
                            "sasl.oauthbearer.jwks.endpoint.url is set"
                        } else {
                            "set sasl.oauthbearer.jwks.endpoint.url for the signed-token validator"
                        }
                    )));
                }
            }
            _ => return Err(refuse(unsupported())),
        }
    }
    Ok(parsed)
}

fn unsupported() -> String {
    "per listener, Oxbow reads ssl.*, sasl.enabled.mechanisms, <mechanism>.sasl.jaas.config and oauthbearer.sasl.server.callback.handler.class; the other keys apply to every listener".into()
}

fn login_module(mechanism: SaslMechanism) -> &'static str {
    match mechanism {
        SaslMechanism::Scram(_) => "org.apache.kafka.common.security.scram.ScramLoginModule",
        SaslMechanism::Plain => "org.apache.kafka.common.security.plain.PlainLoginModule",
        SaslMechanism::OAuthBearer => {
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
        }
    }
}

/// One JAAS entry as Kafka's `sasl.jaas.config` holds it:
/// `<LoginModule> <flag> [name=value ...];`, values quoted or bare.
pub fn parse_jaas(text: &str) -> Result<JaasEntry, String> {
    let body = text
        .trim()
        .strip_suffix(';')
        .ok_or("a JAAS entry ends with `;`")?;
    let mut rest = body.trim_start();
    let mut word = || -> Option<String> {
        let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
        let (token, tail) = rest.split_at(end);
        rest = tail.trim_start();
        (!token.is_empty()).then(|| token.to_string())
    };
    let login_module = word().ok_or("a JAAS entry names a login module")?;
    let flag = word().ok_or("a JAAS entry has a control flag after the login module")?;
    if !matches!(
        flag.as_str(),
        "required" | "requisite" | "sufficient" | "optional"
    ) {
        return Err(format!(
            "`{flag}` is not a JAAS control flag (required, requisite, sufficient, optional)"
        ));
    }
    let mut options = BTreeMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let name: String =
            std::iter::from_fn(|| chars.next_if(|c| *c != '=' && !c.is_whitespace())).collect();
        if chars.next() != Some('=') || name.is_empty() {
            return Err(format!("JAAS option `{name}` has no `=value`"));
        }
        let value = if chars.next_if_eq(&'"').is_some() {
            let mut value = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => value.extend(chars.next()),
                    Some(c) => value.push(c),
                    None => return Err(format!("JAAS option `{name}`: unterminated quote")),
                }
            }
            value
        } else {
            std::iter::from_fn(|| chars.next_if(|c| !c.is_whitespace())).collect()
        };
        options.insert(name, value);
    }
    Ok(JaasEntry {
        login_module,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mechanisms(text: &str) -> Result<Vec<SaslMechanism>, String> {
        text.split(',')
            .map(|name| SaslMechanism::from_name(name.trim()).ok_or(format!("{name}?")))
            .collect()
    }

    fn parsed(
        pairs: &[(&str, &str)],
        signed: bool,
    ) -> Result<BTreeMap<String, ListenerSettings>, (String, String)> {
        let raw: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse(
            &raw,
            &["SASL_SSL".into(), "PLAINTEXT".into()],
            mechanisms,
            signed,
        )
    }

    #[test]
    fn kafka_listener_settings_keys_are_read() {
        let listeners = parsed(
            &[
                ("listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN"),
                (
                    "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
                    r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="p\"w d";"#,
                ),
                (
                    "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
                    SECURED_VALIDATOR,
                ),
                ("listener.name.sasl_ssl.ssl.client.auth", "required"),
                ("log.dirs", "/tmp"),
            ],
            true,
        )
        .unwrap();
        let sasl = &listeners["SASL_SSL"];
        assert_eq!(sasl.ssl["ssl.client.auth"], "required");
        assert_eq!(sasl.mechanisms.as_ref().unwrap().len(), 2);
        let jaas = sasl
            .jaas_for(SaslMechanism::from_name("SCRAM-SHA-512").unwrap())
            .unwrap();
        assert_eq!(jaas.options["username"], "broker");
        assert_eq!(jaas.options["password"], "p\"w d");
    }

    #[test]
    fn unknown_listeners_wrong_modules_and_unsupported_keys_are_refused() {
        let refused =
            |key: &str, value: &str, signed: bool| parsed(&[(key, value)], signed).unwrap_err().1;
        assert!(
            refused(
                "listener.name.external.sasl.enabled.mechanisms",
                "PLAIN",
                false
            )
            .contains("no listener")
        );
        assert!(
            refused(
                "listener.name.sasl_ssl.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                false
            )
            .contains("PlainLoginModule")
        );
        assert!(
            refused("listener.name.sasl_ssl.ssl.keystore.colour", "red", false)
                .contains("ssl.* key")
        );
        assert!(
            refused("listener.name.sasl_ssl.log.retention.ms", "1", false).contains("per listener")
        );
        assert!(
            refused(
                "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class",
                SECURED_VALIDATOR,
                false
            )
            .contains("jwks")
        );
        assert!(
            refused(
                "listener.name.sasl_ssl.sasl.enabled.mechanisms",
                "GSSAPI",
                false
            )
            .contains("GSSAPI")
        );
    }

    #[test]
    fn jaas_entries_parse_as_kafka_writes_them() {
        let entry = parse_jaas(
            "org.apache.kafka.common.security.plain.PlainLoginModule required username=admin password=\"a b\" user_admin=\"x\";",
        )
        .unwrap();
        assert_eq!(entry.options.len(), 3);
        assert_eq!(entry.options["username"], "admin");
        assert_eq!(entry.options["password"], "a b");
        assert!(parse_jaas("Module required").is_err());
        assert!(parse_jaas("Module sometimes;").is_err());
        assert!(parse_jaas("Module required user=\"x;").is_err());
        assert!(parse_jaas("Module required user;").is_err());
        assert!(parse_jaas("Module required;").unwrap().options.is_empty());
    }
}
