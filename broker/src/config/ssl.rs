//! The `ssl.*` keys of an `SSL` listener, checked at start-up (files are read later, by
//! `security::tls`, which also re-reads them when they change).
//!
//! Kafka's PEM key stores (KIP-651) are the one format: `ssl.keystore.location` names a
//! file holding the private key and the certificate chain, or `ssl.keystore.key` and
//! `ssl.keystore.certificate.chain` give both as PEM strings; the trust store is
//! `ssl.truststore.location` or `ssl.truststore.certificates`. JKS and PKCS12 stores are
//! refused with the `openssl` conversion to use, never half-read.

use std::path::PathBuf;

/// Where the broker's key and certificate chain come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyStore {
    /// One PEM file with the private key and the chain (`ssl.keystore.location`).
    File(PathBuf),
    /// `ssl.keystore.certificate.chain` and `ssl.keystore.key`.
    Inline { chain: String, key: String },
}

/// The CA certificates client certificates are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustStore {
    File(PathBuf),
    Inline(String),
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate asked for.
    None,
    /// A certificate is asked for and checked when given; a client without one is
    /// `User:ANONYMOUS`.
    Requested,
    /// No handshake completes without a certificate the trust store vouches for.
    Required,
}

/// A TLS version of `ssl.enabled.protocols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

/// Everything an `SSL` listener needs.
#[derive(Debug, Clone)]
pub struct SslConfig {
    pub keystore: KeyStore,
    pub truststore: Option<TrustStore>,
    pub client_auth: ClientAuth,
    /// `ssl.principal.mapping.rules`, parsed (and refused when malformed) by
    /// `security::PrincipalMapper` when the listener starts.
    pub principal_mapping_rules: String,
    pub protocols: Vec<TlsVersion>,
    /// `ssl.endpoint.identification.algorithm=https`: a broker connecting to another
    /// checks that the certificate names the address it dialled.
    pub endpoint_identification: bool,
}

/// The `ssl.*` settings from the raw keys; `None` when no listener uses TLS and no key
/// store is configured. `get` returns a key's value (empty when unset).
pub fn parse(
    get: &dyn Fn(&str) -> String,
    needed: bool,
) -> Result<Option<SslConfig>, (&'static str, String)> {
    for (key, what) in [
        ("ssl.keystore.type", "key store"),
        ("ssl.truststore.type", "trust store"),
    ] {
        let kind = get(key).trim().to_ascii_uppercase();
        if kind != "PEM" {
            return Err((
                key,
                format!(
                    "Oxbow reads PEM {what}s only (KIP-651); convert a {kind} store with \
                     `openssl pkcs12 -in store.p12 -nodes` (for JKS, `keytool -importkeystore \
                     -deststoretype PKCS12` first)"
                ),
            ));
        }
    }
    if !get("ssl.key.password").is_empty() {
        return Err((
            "ssl.key.password",
            "encrypted private keys are not supported yet: give an unencrypted PKCS#8 key \
             (`openssl pkcs8 -topk8 -nocrypt`) in a file only the broker can read"
                .into(),
        ));
    }
    let location = get("ssl.keystore.location");
    let chain = get("ssl.keystore.certificate.chain");
    let key = get("ssl.keystore.key");
    let keystore = match (location.trim(), chain.trim(), key.trim()) {
        ("", "", "") if !needed => return Ok(None),
        ("", "", "") => {
            return Err((
                "ssl.keystore.location",
                "an SSL listener needs the broker's key and certificate: set \
                 ssl.keystore.location (a PEM file with both) or ssl.keystore.key and \
                 ssl.keystore.certificate.chain"
                    .into(),
            ));
        }
        (path, "", "") => KeyStore::File(PathBuf::from(path)),
        ("", chain, key) if !chain.is_empty() && !key.is_empty() => KeyStore::Inline {
            chain: chain.to_string(),
            key: key.to_string(),
        },
        ("", _, _) => {
            return Err((
                "ssl.keystore.key",
                "ssl.keystore.key and ssl.keystore.certificate.chain go together".into(),
            ));
        }
        _ => {
            return Err((
                "ssl.keystore.location",
                "set either ssl.keystore.location or the PEM strings \
                 (ssl.keystore.key, ssl.keystore.certificate.chain), not both"
                    .into(),
            ));
        }
    };
    let truststore = match (
        get("ssl.truststore.location").trim(),
        get("ssl.truststore.certificates").trim(),
    ) {
        ("", "") => None,
        (path, "") => Some(TrustStore::File(PathBuf::from(path))),
        ("", certificates) => Some(TrustStore::Inline(certificates.to_string())),
        _ => {
            return Err((
                "ssl.truststore.location",
                "set either ssl.truststore.location or ssl.truststore.certificates, not both"
                    .into(),
            ));
        }
    };
    let client_auth = match get("ssl.client.auth").trim().to_ascii_lowercase().as_str() {
        "none" | "" => ClientAuth::None,
        "requested" => ClientAuth::Requested,
        "required" => ClientAuth::Required,
        _ => {
            return Err((
                "ssl.client.auth",
                "expected required, requested or none".into(),
            ));
        }
    };
    if client_auth != ClientAuth::None && truststore.is_none() {
        return Err((
            "ssl.truststore.location",
            "ssl.client.auth checks client certificates against a trust store: set \
             ssl.truststore.location or ssl.truststore.certificates"
                .into(),
        ));
    }
    let mut protocols = Vec::new();
    for protocol in get("ssl.enabled.protocols")
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        protocols.push(match protocol {
            "TLSv1.2" => TlsVersion::Tls12,
            "TLSv1.3" => TlsVersion::Tls13,
            other => {
                return Err((
                    "ssl.enabled.protocols",
                    format!("`{other}` is not offered: TLSv1.2 and TLSv1.3 are"),
                ));
            }
        });
    }
    protocols.sort();
    protocols.dedup();
    if protocols.is_empty() {
        return Err((
            "ssl.enabled.protocols",
            "name TLSv1.2, TLSv1.3 or both".into(),
        ));
    }
    let endpoint_identification = match get("ssl.endpoint.identification.algorithm")
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "https" => true,
        "" => false,
        _ => {
            return Err((
                "ssl.endpoint.identification.algorithm",
                "expected https or empty".into(),
            ));
        }
    };
    Ok(Some(SslConfig {
        endpoint_identification,
        keystore,
        truststore,
        client_auth,
        principal_mapping_rules: get("ssl.principal.mapping.rules"),
        protocols,
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn parse_with(
        pairs: &[(&str, &str)],
        needed: bool,
    ) -> Result<Option<SslConfig>, (&'static str, String)> {
        let mut values: BTreeMap<String, String> = [
            ("ssl.keystore.type", "PEM"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.client.auth", "none"),
            ("ssl.principal.mapping.rules", "DEFAULT"),
            ("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
            ("ssl.endpoint.identification.algorithm", "https"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (key, value) in pairs {
            values.insert(key.to_string(), value.to_string());
        }
        parse(&|key| values.get(key).cloned().unwrap_or_default(), needed)
    }

    #[test]
    fn no_tls_listener_and_no_key_store_is_no_tls() {
        assert!(parse_with(&[], false).unwrap().is_none());
    }

    #[test]
    fn an_ssl_listener_needs_a_key_store() {
        let (key, reason) = parse_with(&[], true).unwrap_err();
        assert_eq!(key, "ssl.keystore.location");
        assert!(reason.contains("ssl.keystore.key"), "{reason}");
    }

    #[test]
    fn a_key_store_file_or_inline_pem_but_not_both() {
        let file = parse_with(&[("ssl.keystore.location", "/etc/oxbow/broker.pem")], true)
            .unwrap()
            .unwrap();
        assert_eq!(
            file.keystore,
            KeyStore::File("/etc/oxbow/broker.pem".into())
        );
        let inline = parse_with(
            &[
                ("ssl.keystore.certificate.chain", "CHAIN"),
                ("ssl.keystore.key", "KEY"),
            ],
            true,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            inline.keystore,
            KeyStore::Inline {
                chain: "CHAIN".into(),
                key: "KEY".into()
            }
        );
        assert!(parse_with(&[("ssl.keystore.key", "KEY")], true).is_err());
        assert!(
            parse_with(
                &[
                    ("ssl.keystore.location", "/x.pem"),
                    ("ssl.keystore.key", "KEY")
                ],
                true
            )
            .is_err()
        );
    }

    #[test]
    fn jks_stores_encrypted_keys_and_unknown_protocols_are_refused_with_the_way_out() {
        let store = [("ssl.keystore.location", "/x.pem")];
        let (key, reason) =
            parse_with(&[store[0], ("ssl.keystore.type", "JKS")], true).unwrap_err();
        assert_eq!(key, "ssl.keystore.type");
        assert!(reason.contains("keytool"), "{reason}");
        let (key, _) = parse_with(&[store[0], ("ssl.key.password", "secret")], true).unwrap_err();
        assert_eq!(key, "ssl.key.password");
        let (key, _) =
            parse_with(&[store[0], ("ssl.enabled.protocols", "TLSv1.1")], true).unwrap_err();
        assert_eq!(key, "ssl.enabled.protocols");
        let (key, _) = parse_with(&[store[0], ("ssl.client.auth", "always")], true).unwrap_err();
        assert_eq!(key, "ssl.client.auth");
    }

    #[test]
    fn client_authentication_needs_a_trust_store() {
        let store = ("ssl.keystore.location", "/x.pem");
        let (key, _) = parse_with(&[store, ("ssl.client.auth", "required")], true).unwrap_err();
        assert_eq!(key, "ssl.truststore.location");
        let config = parse_with(
            &[
                store,
                ("ssl.client.auth", "required"),
                ("ssl.truststore.location", "/ca.pem"),
            ],
            true,
        )
        .unwrap()
        .unwrap();
        assert_eq!(config.client_auth, ClientAuth::Required);
        assert_eq!(config.truststore, Some(TrustStore::File("/ca.pem".into())));
        assert_eq!(config.protocols, vec![TlsVersion::Tls12, TlsVersion::Tls13]);
    }
}
