//! The Secrets of a secured Cluster's certificates, planned from what exists (pure: the
//! reconciler reads the Secrets, plans, and applies what changed):
//!
//! ```text
//!   <cluster>-cluster-ca    ca.crt, ca.key (+ ca-previous.crt while the last CA is valid)
//!   <cluster>-clients-ca    ca.crt, ca.key
//!   <cluster>-broker-certs  cluster-ca.crt (current + previous CA), clients-ca.crt,
//!                           <pod>.pem per broker        mounted in every broker pod
//!   <cluster>-operator-cert operator.pem, cluster-ca.crt    the operator's admin client
//! ```
//!
//! A CA is kept while it is valid beyond the renewal window; a renewed CA keeps the last one
//! trusted (`cluster-ca.crt` holds both) until it expires, so brokers that have not re-read
//! their stores yet still trust each other. A broker's key store is issued again when it is
//! missing, due for renewal, no longer names every address it must, or its CA changed.
//! Brokers re-read their stores when the mounted files change: no restart.

use std::collections::BTreeMap;
use std::time::SystemTime;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::certificates::{self, CLUSTER_ORGANIZATION, CertificateError, KeyedCertificate, Usage};
use super::names::{Names, meta};
use super::security::{self, CLIENTS_CA_FILE, CLUSTER_CA_FILE};
use crate::crd::{ClusterSpec, ExternalType};

pub const CA_CERT: &str = "ca.crt";
pub const CA_KEY: &str = "ca.key";
pub const CA_PREVIOUS: &str = "ca-previous.crt";
pub const OPERATOR_STORE: &str = "operator.pem";

/// Names of the certificate Secrets.
pub fn cluster_ca_secret(names: &Names) -> String {
    format!("{}-cluster-ca", names.cluster)
}
pub fn clients_ca_secret(names: &Names) -> String {
    format!("{}-clients-ca", names.cluster)
}
pub fn broker_certs_secret(names: &Names) -> String {
    format!("{}-broker-certs", names.cluster)
}
pub fn operator_cert_secret(names: &Names) -> String {
    format!("{}-operator-cert", names.cluster)
}

/// The string data of the four Secrets (empty when a Secret does not exist). Its `Debug`
/// names the entries only: the values hold private keys.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct CertificateSecrets {
    pub cluster_ca: BTreeMap<String, String>,
    pub clients_ca: BTreeMap<String, String>,
    pub broker_certs: BTreeMap<String, String>,
    pub operator_cert: BTreeMap<String, String>,
    /// The cluster CA Secret asks for a renewal now (annotation [`FORCE_RENEW`]): the CA
    /// certificate and every certificate it signed are issued again.
    pub force_cluster_ca: bool,
    /// The clients CA Secret asks for a renewal now: its certificate is issued again (and the
    /// User reconciler issues the `tls` Users' again).
    pub force_clients_ca: bool,
}

/// The annotation of a CA Secret that asks the operator to renew that CA and what it signed
/// now, whatever their validity (Strimzi's `force-renew`); the operator removes it once done.
pub const FORCE_RENEW: &str = "oxbow.dev/force-renew";

impl std::fmt::Debug for CertificateSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = |data: &BTreeMap<String, String>| data.keys().cloned().collect::<Vec<_>>();
        f.debug_struct("CertificateSecrets")
            .field("cluster_ca", &keys(&self.cluster_ca))
            .field("clients_ca", &keys(&self.clients_ca))
            .field("broker_certs", &keys(&self.broker_certs))
            .field("operator_cert", &keys(&self.operator_cert))
            .field("force_cluster_ca", &self.force_cluster_ca)
            .field("force_clients_ca", &self.force_clients_ca)
            .finish()
    }
}

impl CertificateSecrets {
    /// (Secret name, its data) of each of the four.
    pub fn named(&self, names: &Names) -> [(String, &BTreeMap<String, String>); 4] {
        [
            (cluster_ca_secret(names), &self.cluster_ca),
            (clients_ca_secret(names), &self.clients_ca),
            (broker_certs_secret(names), &self.broker_certs),
            (operator_cert_secret(names), &self.operator_cert),
        ]
    }

    /// The slot of the Secret called `name`.
    pub fn slot(&mut self, names: &Names, name: &str) -> Option<&mut BTreeMap<String, String>> {
        match name {
            n if n == cluster_ca_secret(names) => Some(&mut self.cluster_ca),
            n if n == clients_ca_secret(names) => Some(&mut self.clients_ca),
            n if n == broker_certs_secret(names) => Some(&mut self.broker_certs),
            n if n == operator_cert_secret(names) => Some(&mut self.operator_cert),
            _ => None,
        }
    }
}

/// A Secret's data as text (entries that are not UTF-8 are left out: the plan then issues
/// them again).
pub fn text_data(secret: &Secret) -> BTreeMap<String, String> {
    secret
        .data
        .iter()
        .flatten()
        .filter_map(|(key, value)| Some((key.clone(), String::from_utf8(value.0.clone()).ok()?)))
        .collect()
}

/// The Secret `name` holding `data`, owned by the Cluster.
pub fn secret(
    names: &Names,
    owner: &OwnerReference,
    name: String,
    data: &BTreeMap<String, String>,
) -> Secret {
    Secret {
        metadata: meta(names, name, owner),
        type_: Some("Opaque".to_string()),
        data: Some(
            data.iter()
                .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                .collect(),
        ),
        ..Secret::default()
    }
}

/// A user's CA Secret in the shape the plan reads (`ca.crt`, `ca.key`), or what it lacks:
/// `tls.crt` / `tls.key` stand in for them (a cert-manager CA Certificate's Secret).
pub fn user_authority(
    name: &str,
    data: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    let cert = data.get(CA_CERT).or_else(|| data.get("tls.crt"));
    let key = data.get(CA_KEY).or_else(|| data.get("tls.key"));
    let (Some(cert), Some(key)) = (cert, key) else {
        return Err(format!(
            "certificates.generateCertificateAuthority is false: Secret {name} must hold the CA as ca.crt and ca.key (or tls.crt and tls.key)"
        ));
    };
    let issued = certificates::read(cert).map_err(|e| format!("Secret {name}: {e}"))?;
    if issued.not_after <= SystemTime::now() {
        return Err(format!("Secret {name}: the CA certificate has expired"));
    }
    let mut normalised = BTreeMap::from([
        (CA_CERT.to_string(), cert.clone()),
        (CA_KEY.to_string(), key.clone()),
    ]);
    if let Some(previous) = data.get(CA_PREVIOUS) {
        normalised.insert(CA_PREVIOUS.to_string(), previous.clone());
    }
    Ok(normalised)
}

/// A user's cluster CA that is not the one the brokers' certificates were signed with (the
/// first certificate of their trust file): those are issued again, and the CA they were
/// signed with stays trusted while it is valid.
fn user_ca_change(
    spec: &ClusterSpec,
    mut cluster_ca: BTreeMap<String, String>,
    renewed: bool,
    broker_certs: &BTreeMap<String, String>,
    now: SystemTime,
) -> (BTreeMap<String, String>, bool) {
    if spec.certificates.generate_certificate_authority {
        return (cluster_ca, renewed);
    }
    let Some(trusted) = broker_certs.get(CLUSTER_CA_FILE) else {
        return (cluster_ca, renewed);
    };
    let before = trusted
        .split_inclusive("-----END CERTIFICATE-----")
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if before.is_empty() || cluster_ca.get(CA_CERT).is_some_and(|c| c.trim() == before) {
        return (cluster_ca, renewed);
    }
    if certificates::read(&before).is_ok_and(|c| c.not_after > now) {
        cluster_ca.insert(CA_PREVIOUS.to_string(), format!("{before}\n"));
    }
    (cluster_ca, true)
}

/// What a plan did, for events and logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Issued {
    pub authorities: Vec<&'static str>,
    pub certificates: Vec<String>,
}

/// The addresses broker `ordinal`'s certificate must name.
pub fn broker_sans(spec: &ClusterSpec, names: &Names, ordinal: i32) -> Vec<String> {
    let external = spec.listeners.external.as_ref().and_then(|e| {
        match (&e.advertised_host, e.type_) {
            (Some(host), _) => Some(host.clone()),
            (None, ExternalType::LoadBalancer) => Some(names.external_service_dns(ordinal)),
            // A node's address is only known where the pod runs: the CRD refuses TLS on a
            // NodePort listener without advertisedHost.
            (None, ExternalType::NodePort) => None,
        }
    });
    certificates::broker_sans(names, ordinal, external.as_deref())
}

/// The Secrets' contents for `spec` at `now`, from what exists.
pub fn plan(
    spec: &ClusterSpec,
    names: &Names,
    existing: &CertificateSecrets,
    now: SystemTime,
) -> Result<(CertificateSecrets, Issued), CertificateError> {
    let validity = u32::try_from(spec.certificates.validity_days).unwrap_or(365);
    let renew_before = u32::try_from(spec.certificates.renew_before_days).unwrap_or(30);
    let mut issued = Issued::default();
    let mut authority = |existing: &BTreeMap<String, String>,
                         what: &'static str,
                         cn: String,
                         force: bool|
     -> Result<(BTreeMap<String, String>, bool), CertificateError> {
        let current = existing.get(CA_CERT).zip(existing.get(CA_KEY));
        if !spec.certificates.generate_certificate_authority {
            // The user's CA, never changed here (`user_authority` checked it is there); a
            // forced renewal re-issues what it signs.
            return Ok((existing.clone(), force));
        }
        if let Some((cert, _)) = current
            && !force
            && !certificates::needs_renewal(cert, &[], now, renew_before)
        {
            return Ok((existing.clone(), false));
        }
        issued.authorities.push(what);
        // A CA that exists is renewed with its key; a key that cannot be read is replaced.
        let renewed = current.and_then(|(cert, key)| {
            let existing = KeyedCertificate {
                certificate_pem: cert.clone(),
                key_pem: key.clone(),
            };
            certificates::renew_authority(&existing, &cn, now, validity).ok()
        });
        let fresh = match renewed {
            Some(renewed) => renewed,
            None => certificates::new_authority(&cn, now, validity)?,
        };
        let mut data = BTreeMap::from([
            (CA_CERT.to_string(), fresh.certificate_pem),
            (CA_KEY.to_string(), fresh.key_pem),
        ]);
        // The CA being replaced stays trusted while it is valid.
        if let Some((cert, _)) = current
            && certificates::read(cert).is_ok_and(|c| c.not_after > now)
        {
            data.insert(CA_PREVIOUS.to_string(), cert.clone());
        }
        Ok((data, true))
    };
    let (cluster_ca, cluster_ca_renewed) = authority(
        &existing.cluster_ca,
        "cluster CA",
        format!("{} cluster CA", names.cluster),
        existing.force_cluster_ca,
    )?;
    let (clients_ca, _) = authority(
        &existing.clients_ca,
        "clients CA",
        format!("{} clients CA", names.cluster),
        existing.force_clients_ca,
    )?;
    let (cluster_ca, cluster_ca_renewed) = user_ca_change(
        spec,
        cluster_ca,
        cluster_ca_renewed,
        &existing.broker_certs,
        now,
    );
    let signer = KeyedCertificate {
        certificate_pem: cluster_ca[CA_CERT].clone(),
        key_pem: cluster_ca[CA_KEY].clone(),
    };
    let trusted = format!(
        "{}{}",
        cluster_ca[CA_CERT],
        cluster_ca.get(CA_PREVIOUS).map_or("", String::as_str)
    );

    let mut broker_certs = BTreeMap::from([
        (CLUSTER_CA_FILE.to_string(), trusted.clone()),
        // A renewed clients CA keeps the last one trusted: Users' certificates it signed
        // work until the User reconciler issues theirs again.
        (
            CLIENTS_CA_FILE.to_string(),
            format!(
                "{}{}",
                clients_ca[CA_CERT],
                clients_ca.get(CA_PREVIOUS).map_or("", String::as_str)
            ),
        ),
    ]);
    for ordinal in 0..spec.replicas {
        let file = format!("{}.pem", names.pod(ordinal));
        let sans = broker_sans(spec, names, ordinal);
        let keep = existing.broker_certs.get(&file).filter(|store| {
            !cluster_ca_renewed && !certificates::needs_renewal(store, &sans, now, renew_before)
        });
        let store = match keep {
            Some(store) => store.clone(),
            None => {
                issued.certificates.push(names.pod(ordinal));
                certificates::issue(
                    &signer,
                    &security::broker_cn(names),
                    CLUSTER_ORGANIZATION,
                    &sans,
                    Usage::Broker,
                    now,
                    validity,
                )?
                .key_store()
            }
        };
        broker_certs.insert(file, store);
    }

    let keep = existing.operator_cert.get(OPERATOR_STORE).filter(|store| {
        !cluster_ca_renewed && !certificates::needs_renewal(store, &[], now, renew_before)
    });
    let operator_store = match keep {
        Some(store) => store.clone(),
        None => {
            issued.certificates.push(security::operator_cn(names));
            certificates::issue(
                &signer,
                &security::operator_cn(names),
                CLUSTER_ORGANIZATION,
                &[],
                Usage::Client,
                now,
                validity,
            )?
            .key_store()
        }
    };
    let operator_cert = BTreeMap::from([
        (OPERATOR_STORE.to_string(), operator_store),
        (CLUSTER_CA_FILE.to_string(), trusted),
    ]);
    Ok((
        CertificateSecrets {
            cluster_ca,
            clients_ca,
            broker_certs,
            operator_cert,
            force_cluster_ca: false,
            force_clients_ca: false,
        },
        issued,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const DAY: Duration = Duration::from_secs(86_400);

    fn spec(replicas: i32, external: &str) -> ClusterSpec {
        serde_yaml::from_str(&format!(
            "replicas: {replicas}\nlisteners: {{tls: true{external}}}"
        ))
        .unwrap()
    }

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    #[test]
    fn a_new_cluster_gets_both_authorities_and_a_store_per_broker() {
        let names = Names::new("demo", "kafka");
        let (secrets, issued) = plan(&spec(3, ""), &names, &Default::default(), now()).unwrap();
        assert_eq!(issued.authorities, vec!["cluster CA", "clients CA"]);
        assert_eq!(issued.certificates.len(), 4, "{issued:?}");
        for pod in ["demo-0", "demo-1", "demo-2"] {
            let store = &secrets.broker_certs[&format!("{pod}.pem")];
            let names_in = certificates::read(store).unwrap().sans;
            assert!(
                names_in.contains(&format!("{pod}.demo-headless.kafka.svc")),
                "{names_in:?}"
            );
        }
        assert!(secrets.broker_certs.contains_key(CLIENTS_CA_FILE));
        // The brokers never get a CA's key.
        assert!(
            secrets
                .broker_certs
                .values()
                .all(|v| !v.contains(&secrets.cluster_ca[CA_KEY]))
        );
        assert!(secrets.operator_cert.contains_key(OPERATOR_STORE));
    }

    #[test]
    fn nothing_is_issued_again_until_it_is_due_and_a_scale_out_adds_one_store() {
        let names = Names::new("demo", "kafka");
        let (first, _) = plan(&spec(3, ""), &names, &Default::default(), now()).unwrap();
        let (same, issued) = plan(&spec(3, ""), &names, &first, now() + DAY * 100).unwrap();
        assert_eq!(same, first);
        assert_eq!(issued, Issued::default());
        let (grown, issued) = plan(&spec(4, ""), &names, &first, now() + DAY).unwrap();
        assert_eq!(issued.certificates, vec!["demo-3".to_string()]);
        assert_eq!(
            grown.broker_certs["demo-0.pem"],
            first.broker_certs["demo-0.pem"]
        );
        // An external address the certificates do not name yet: every broker's again.
        let (external, issued) = plan(
            &spec(
                3,
                ", external: {type: LoadBalancer, tls: true, advertisedHost: kafka.example.com}",
            ),
            &names,
            &first,
            now() + DAY,
        )
        .unwrap();
        assert_eq!(issued.certificates.len(), 3, "{issued:?}");
        let sans = certificates::read(&external.broker_certs["demo-1.pem"])
            .unwrap()
            .sans;
        assert!(sans.contains(&"kafka.example.com".to_string()));
    }

    #[test]
    fn renewal_reissues_in_the_window_and_a_new_ca_keeps_the_last_one_trusted() {
        let names = Names::new("demo", "kafka");
        let (first, _) = plan(&spec(2, ""), &names, &Default::default(), now()).unwrap();
        // 340 days on: inside the 30-day window of everything issued on day 0.
        let later = now() + DAY * 340;
        let (renewed, issued) = plan(&spec(2, ""), &names, &first, later).unwrap();
        assert_eq!(issued.authorities, vec!["cluster CA", "clients CA"]);
        assert_eq!(issued.certificates.len(), 3);
        assert_ne!(renewed.cluster_ca[CA_CERT], first.cluster_ca[CA_CERT]);
        assert_eq!(renewed.cluster_ca[CA_PREVIOUS], first.cluster_ca[CA_CERT]);
        let trusted = &renewed.broker_certs[CLUSTER_CA_FILE];
        assert!(trusted.contains(&renewed.cluster_ca[CA_CERT]));
        assert!(trusted.contains(&first.cluster_ca[CA_CERT]));
        let until = certificates::read(&renewed.broker_certs["demo-0.pem"])
            .unwrap()
            .not_after;
        assert_eq!(until, later + DAY * 365);
        // Renewed with its key: what the old CA certificate signed verifies under the new one.
        assert_eq!(renewed.cluster_ca[CA_KEY], first.cluster_ca[CA_KEY]);
    }

    #[test]
    fn a_users_ca_is_used_as_given_and_a_new_one_reissues_what_it_signs() {
        let names = Names::new("demo", "kafka");
        let user_spec: ClusterSpec = serde_yaml::from_str(
            "replicas: 2\nlisteners: {tls: true}\ncertificates: {generateCertificateAuthority: false}",
        )
        .unwrap();
        let ca = |cn: &str| {
            let made = certificates::new_authority(cn, SystemTime::now(), 30).unwrap();
            // As cert-manager writes a CA Certificate's Secret.
            BTreeMap::from([
                ("tls.crt".to_string(), made.certificate_pem),
                ("tls.key".to_string(), made.key_pem),
            ])
        };
        let (first_ca, clients_ca) = (ca("mine"), ca("my clients"));
        let existing = CertificateSecrets {
            cluster_ca: user_authority("demo-cluster-ca", &first_ca).unwrap(),
            clients_ca: user_authority("demo-clients-ca", &clients_ca).unwrap(),
            ..CertificateSecrets::default()
        };
        let (first, issued) = plan(&user_spec, &names, &existing, SystemTime::now()).unwrap();
        assert!(issued.authorities.is_empty(), "{issued:?}");
        assert_eq!(first.cluster_ca[CA_CERT], first_ca["tls.crt"]);
        assert_eq!(first.broker_certs[CLUSTER_CA_FILE], first_ca["tls.crt"]);
        // The user puts another CA in the Secret: the brokers' stores follow, both trusted.
        let second_ca = ca("mine, again");
        let existing = CertificateSecrets {
            cluster_ca: user_authority("demo-cluster-ca", &second_ca).unwrap(),
            ..first.clone()
        };
        let (second, issued) = plan(&user_spec, &names, &existing, SystemTime::now()).unwrap();
        assert_eq!(issued.certificates.len(), 3, "{issued:?}");
        let trusted = &second.broker_certs[CLUSTER_CA_FILE];
        assert!(trusted.starts_with(&second_ca["tls.crt"]));
        assert!(trusted.contains(first_ca["tls.crt"].trim()));
        let refused = user_authority("demo-cluster-ca", &BTreeMap::new()).unwrap_err();
        assert!(refused.contains("ca.crt and ca.key"), "{refused}");
    }

    #[test]
    fn a_forced_renewal_reissues_the_ca_with_its_key_and_everything_it_signed() {
        let names = Names::new("demo", "kafka");
        let (mut first, _) = plan(&spec(2, ""), &names, &Default::default(), now()).unwrap();
        first.force_cluster_ca = true;
        let (renewed, issued) = plan(&spec(2, ""), &names, &first, now() + DAY).unwrap();
        assert_eq!(issued.authorities, vec!["cluster CA"]);
        assert_eq!(
            issued.certificates.len(),
            3,
            "two brokers and the operator: {issued:?}"
        );
        assert_eq!(renewed.cluster_ca[CA_KEY], first.cluster_ca[CA_KEY]);
        assert_ne!(renewed.cluster_ca[CA_CERT], first.cluster_ca[CA_CERT]);
        assert_ne!(
            renewed.broker_certs["demo-0.pem"],
            first.broker_certs["demo-0.pem"]
        );
        assert_eq!(renewed.clients_ca, first.clients_ca);
        assert!(
            !renewed.force_cluster_ca,
            "the plan is what to write, not a new request"
        );
    }
}
