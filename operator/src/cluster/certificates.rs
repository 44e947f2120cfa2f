//! The certificates a secured Cluster runs on, issued by the operator (issue 34, point 2):
//!
//! ```text
//!   <cluster>-cluster-ca   Secret: ca.crt, ca.key   signs the brokers' certificates (and the
//!                                                    operator's own client certificate)
//!   <cluster>-clients-ca   Secret: ca.crt, ca.key   signs the certificates of `tls` Users
//!   <cluster>-broker-certs Secret: <pod>.pem each    key + certificate of every broker, SANs:
//!                                                    its pod DNS name, the headless and
//!                                                    bootstrap Services, external addresses
//! ```
//!
//! Strimzi's defaults: a certificate lives 365 days and is renewed 30 days before it ends.
//! Everything here is pure (PEM in, PEM out, the clock passed in), so the reconciler decides
//! and tests check without a cluster.

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

use super::names::Names;

/// Strimzi's default validity and renewal window.
pub const DEFAULT_VALIDITY_DAYS: u32 = 365;
pub const DEFAULT_RENEW_BEFORE_DAYS: u32 = 30;

const DAY: Duration = Duration::from_secs(24 * 3600);

/// A certificate and its private key, both PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyedCertificate {
    pub certificate_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for KeyedCertificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedCertificate")
            .field("certificate_pem", &self.certificate_pem)
            .finish_non_exhaustive()
    }
}

impl KeyedCertificate {
    /// The broker's PEM key store: its key, then its certificate (`ssl.keystore.location`).
    pub fn key_store(&self) -> String {
        format!("{}{}", self.key_pem, self.certificate_pem)
    }
}

/// Why a certificate could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    #[error("cannot make a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("cannot read the certificate: {0}")]
    Parse(String),
}

/// What a certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// A broker: serves its listeners and is the client of the others' (replication,
    /// the quorum).
    Broker,
    /// A client (a `tls` User, the operator itself).
    Client,
}

fn validity(params: &mut CertificateParams, now: SystemTime, days: u32) {
    // An hour of slack before now: clocks of the nodes that check it may lag.
    params.not_before = (now - Duration::from_secs(3600)).into();
    params.not_after = (now + DAY * days).into();
}

/// The organization in the subject of every certificate a CA signs: the brokers' and the
/// operator's (cluster CA) never read like a User's (clients CA), whatever their CN, so no
/// User can take the brokers' principal.
pub const CLUSTER_ORGANIZATION: &str = "oxbow.dev cluster";
pub const CLIENTS_ORGANIZATION: &str = "oxbow.dev clients";

fn common_name(cn: &str, organization: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, organization);
    name.push(DnType::CommonName, cn);
    name
}

/// A new certificate authority named `cn` (e.g. `my-cluster cluster CA`).
pub fn new_authority(
    cn: &str,
    now: SystemTime,
    validity_days: u32,
) -> Result<KeyedCertificate, CertificateError> {
    authority(cn, KeyPair::generate()?, now, validity_days)
}

/// The CA certificate of `existing` issued again for `validity_days` from `now`, with the
/// same name and key (Strimzi's renewal): what it signed before still verifies against the
/// new certificate, and what it signs now against the old one, so nobody who trusts either
/// sees a failed handshake while the files change.
pub fn renew_authority(
    existing: &KeyedCertificate,
    cn: &str,
    now: SystemTime,
    validity_days: u32,
) -> Result<KeyedCertificate, CertificateError> {
    authority(
        cn,
        KeyPair::from_pem(&existing.key_pem)?,
        now,
        validity_days,
    )
}

fn authority(
    cn: &str,
    key: KeyPair,
    now: SystemTime,
    validity_days: u32,
) -> Result<KeyedCertificate, CertificateError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.distinguished_name = common_name(cn, "oxbow.dev");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    validity(&mut params, now, validity_days);
    let certificate = params.self_signed(&key)?;
    Ok(KeyedCertificate {
        certificate_pem: certificate.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A certificate for `cn` in `organization` with subjectAltNames `sans` (DNS names or IP
/// addresses), signed by `authority`.
#[allow(clippy::too_many_arguments)]
pub fn issue(
    authority: &KeyedCertificate,
    cn: &str,
    organization: &str,
    sans: &[String],
    usage: Usage,
    now: SystemTime,
    validity_days: u32,
) -> Result<KeyedCertificate, CertificateError> {
    let ca_key = KeyPair::from_pem(&authority.key_pem)?;
    let issuer = Issuer::from_ca_cert_pem(&authority.certificate_pem, ca_key)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(sans.to_vec())?;
    params.distinguished_name = common_name(cn, organization);
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = match usage {
        Usage::Broker => vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
        Usage::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
    };
    validity(&mut params, now, validity_days);
    let certificate = params.signed_by(&key, &issuer)?;
    Ok(KeyedCertificate {
        certificate_pem: certificate.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// What the first certificate of a PEM text says: its end of validity, its subjectAltNames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub not_after: SystemTime,
    pub sans: Vec<String>,
}

pub fn read(certificate_pem: &str) -> Result<Issued, CertificateError> {
    use x509_parser::prelude::*;
    // A key store holds the key first: the certificate is the first CERTIFICATE block.
    let pem = Pem::iter_from_buffer(certificate_pem.as_bytes())
        .filter_map(Result::ok)
        .find(|pem| pem.label == "CERTIFICATE")
        .ok_or_else(|| CertificateError::Parse("no certificate in the PEM text".into()))?;
    let certificate = pem
        .parse_x509()
        .map_err(|e| CertificateError::Parse(e.to_string()))?;
    let seconds = certificate.validity().not_after.timestamp();
    let not_after =
        SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    let mut sans = Vec::new();
    if let Ok(Some(extension)) = certificate.subject_alternative_name() {
        for name in &extension.value.general_names {
            match name {
                GeneralName::DNSName(dns) => sans.push(dns.to_string()),
                GeneralName::IPAddress(bytes) => {
                    if let Ok(v4) = <[u8; 4]>::try_from(*bytes) {
                        sans.push(std::net::Ipv4Addr::from(v4).to_string());
                    } else if let Ok(v6) = <[u8; 16]>::try_from(*bytes) {
                        sans.push(std::net::Ipv6Addr::from(v6).to_string());
                    }
                }
                _ => {}
            }
        }
    }
    Ok(Issued { not_after, sans })
}

/// Whether a certificate must be issued again at `now`: it ends within `renew_before_days`,
/// it cannot be read, or it does not name every address in `sans` (a new external address,
/// a renamed Service).
pub fn needs_renewal(
    certificate_pem: &str,
    sans: &[String],
    now: SystemTime,
    renew_before_days: u32,
) -> bool {
    match read(certificate_pem) {
        Ok(issued) => {
            issued.not_after <= now + DAY * renew_before_days
                || sans.iter().any(|san| !issued.sans.contains(san))
        }
        Err(_) => true,
    }
}

/// The names broker `ordinal`'s certificate covers: its stable DNS name (with and without
/// the cluster domain), the headless and bootstrap Services, and its external address.
pub fn broker_sans(names: &Names, ordinal: i32, external: Option<&str>) -> Vec<String> {
    let pod = names.pod_dns(ordinal);
    let bootstrap = format!("{}.{}.svc", names.bootstrap_service(), names.namespace);
    let mut sans = vec![
        pod.clone(),
        format!("{pod}.cluster.local"),
        names.pod(ordinal),
        bootstrap.clone(),
        format!("{bootstrap}.cluster.local"),
        names.bootstrap_service(),
        format!("*.{}.{}.svc", names.headless_service(), names.namespace),
    ];
    sans.extend(external.map(str::to_string));
    sans
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    #[test]
    fn a_broker_certificate_chains_to_its_authority_and_names_its_addresses() {
        let authority = new_authority("demo cluster CA", now(), 365).unwrap();
        let names = Names::new("demo", "kafka");
        let sans = broker_sans(&names, 2, Some("203.0.113.7"));
        let broker = issue(
            &authority,
            "demo-broker",
            CLUSTER_ORGANIZATION,
            &sans,
            Usage::Broker,
            now(),
            365,
        )
        .unwrap();
        let read = read(&broker.certificate_pem).unwrap();
        assert!(
            read.sans
                .contains(&"demo-2.demo-headless.kafka.svc".to_string())
        );
        assert!(read.sans.contains(&"demo-bootstrap.kafka.svc".to_string()));
        assert!(read.sans.contains(&"203.0.113.7".to_string()));
        assert_eq!(read.not_after, now() + DAY * 365);
        assert!(
            broker
                .key_store()
                .starts_with("-----BEGIN PRIVATE KEY-----")
        );

        // A TLS server built from the key store is trusted by a client of the authority.
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(authority.certificate_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            std::sync::Arc::new(roots),
            std::sync::Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let leaf = CertificateDer::from_pem_slice(broker.certificate_pem.as_bytes()).unwrap();
        let name =
            rustls::pki_types::ServerName::try_from("demo-2.demo-headless.kafka.svc").unwrap();
        let checked_at =
            rustls::pki_types::UnixTime::since_unix_epoch(Duration::from_secs(1_800_000_100));
        verifier
            .verify_server_cert(&leaf, &[], &name, &[], checked_at)
            .unwrap();
        let stranger = rustls::pki_types::ServerName::try_from("elsewhere.example").unwrap();
        assert!(
            verifier
                .verify_server_cert(&leaf, &[], &stranger, &[], checked_at)
                .is_err()
        );
    }

    #[test]
    fn certificates_are_renewed_in_their_window_or_when_an_address_is_missing() {
        let authority = new_authority("demo cluster CA", now(), 365).unwrap();
        let sans = vec!["demo-0.demo-headless.kafka.svc".to_string()];
        let broker = issue(
            &authority,
            "demo-broker",
            CLUSTER_ORGANIZATION,
            &sans,
            Usage::Broker,
            now(),
            365,
        )
        .unwrap();
        let pem = &broker.certificate_pem;
        assert!(!needs_renewal(pem, &sans, now(), 30));
        assert!(!needs_renewal(pem, &sans, now() + DAY * 334, 30));
        assert!(needs_renewal(pem, &sans, now() + DAY * 336, 30));
        let more = vec![sans[0].clone(), "broker.example.com".to_string()];
        assert!(needs_renewal(pem, &more, now(), 30));
        assert!(needs_renewal("not a certificate", &sans, now(), 30));
    }

    #[test]
    fn a_client_certificate_is_for_clients_only() {
        let authority = new_authority("demo clients CA", now(), 365).unwrap();
        let client = issue(
            &authority,
            "alice",
            CLIENTS_ORGANIZATION,
            &[],
            Usage::Client,
            now(),
            30,
        )
        .unwrap();
        let (_, pem) = x509_parser::pem::parse_x509_pem(client.certificate_pem.as_bytes()).unwrap();
        let certificate = pem.parse_x509().unwrap();
        let usage = certificate.extended_key_usage().unwrap().unwrap().value;
        assert!(usage.client_auth && !usage.server_auth);
        assert!(certificate.subject().to_string().contains("CN=alice"));
        assert!(!format!("{client:?}").contains("PRIVATE KEY"));
    }
}
