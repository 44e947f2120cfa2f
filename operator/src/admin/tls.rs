//! Admin connections to a secured Cluster: the operator dials a broker's pod IP on the
//! replication listener (mutual TLS with the cluster CA) with its own certificate
//! (`<cluster>-operator-cert`), and checks the broker's certificate against the pod's DNS
//! name, which is what the certificate names.
//!
//! Which addresses need TLS, and under which name, is routing knowledge `bootstrap::reach`
//! learns when it lists a Cluster's pods; it records it here, so that every admin
//! connection (`AdminClient::connect`, pooled or not, from any reconciler) takes the same
//! path without carrying it through each call.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};

use oxbow_kafka_client::{Connection, WireError};
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

/// The operator's client side of a secured Cluster.
#[derive(Clone)]
pub struct ClusterTls {
    connector: TlsConnector,
}

impl std::fmt::Debug for ClusterTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterTls").finish_non_exhaustive()
    }
}

impl ClusterTls {
    /// From the CA certificates to trust (PEM, one or more) and the operator's key store
    /// (its key and certificate, PEM).
    pub fn from_pem(trusted: &str, key_store: &str) -> Result<Self, String> {
        let mut roots = RootCertStore::empty();
        for certificate in CertificateDer::pem_slice_iter(trusted.as_bytes()) {
            let certificate = certificate.map_err(|e| format!("the trusted CAs: {e}"))?;
            roots
                .add(certificate)
                .map_err(|e| format!("the trusted CAs: {e}"))?;
        }
        if roots.is_empty() {
            return Err("no CA certificate to trust".into());
        }
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(key_store.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| format!("the operator's certificate: {e}"))?;
        let key = PrivateKeyDer::from_pem_slice(key_store.as_bytes())
            .map_err(|e| format!("the operator's key: {e}"))?;
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| format!("the operator's certificate: {e}"))?;
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
        })
    }

    /// A TLS connection to `address`, the broker's certificate checked for `server_name`.
    pub async fn connect(
        &self,
        address: &str,
        server_name: &str,
        client_id: &str,
        timeout: std::time::Duration,
    ) -> Result<Connection, WireError> {
        let name = ServerName::try_from(server_name.to_string()).map_err(|e| WireError::Tls {
            address: address.to_string(),
            source: std::io::Error::other(e.to_string()),
        })?;
        Connection::connect_tls(address, client_id, timeout, &self.connector, name).await
    }
}

type Routes = BTreeMap<String, (Arc<ClusterTls>, String)>;

static ROUTES: LazyLock<RwLock<Routes>> = LazyLock::new(|| RwLock::new(BTreeMap::new()));

fn routes() -> std::sync::RwLockWriteGuard<'static, Routes> {
    ROUTES
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// From now on `address` is reached over TLS with `tls`, its certificate checked for
/// `server_name`.
pub fn route(address: &str, tls: Arc<ClusterTls>, server_name: String) {
    routes().insert(address.to_string(), (tls, server_name));
}

/// `address` is reached in clear again (a pod IP reused by an unsecured Cluster's broker).
pub fn forget(address: &str) {
    routes().remove(address);
}

/// How `address` is reached: over TLS (with the name to check) or not.
pub fn lookup(address: &str) -> Option<(Arc<ClusterTls>, String)> {
    ROUTES
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(address)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::certificate_secrets;
    use crate::cluster::names::Names;
    use crate::cluster::security::CLUSTER_CA_FILE;
    use crate::crd::ClusterSpec;
    use tokio_rustls::rustls::ServerConfig;
    use tokio_rustls::rustls::server::WebPkiClientVerifier;

    /// A broker's side of the replication listener, from the planned Secrets: its key
    /// store, client certificates of the cluster CA required.
    fn broker_acceptor(
        secrets: &certificate_secrets::CertificateSecrets,
    ) -> tokio_rustls::TlsAcceptor {
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        for certificate in
            CertificateDer::pem_slice_iter(secrets.broker_certs[CLUSTER_CA_FILE].as_bytes())
        {
            roots.add(certificate.unwrap()).unwrap();
        }
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .unwrap();
        let store = &secrets.broker_certs["demo-0.pem"];
        let chain = CertificateDer::pem_slice_iter(store.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(store.as_bytes()).unwrap();
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain, key)
            .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    }

    #[tokio::test]
    async fn the_operator_reaches_a_broker_with_its_certificate_and_checks_the_broker_s_name() {
        let spec: ClusterSpec =
            serde_yaml::from_str("replicas: 1\nlisteners: {tls: true}").unwrap();
        let names = Names::new("demo", "kafka");
        let (secrets, _) = certificate_secrets::plan(
            &spec,
            &names,
            &Default::default(),
            std::time::SystemTime::now(),
        )
        .unwrap();
        let operator = &secrets.operator_cert;
        let tls = ClusterTls::from_pem(
            &operator[CLUSTER_CA_FILE],
            &operator[certificate_secrets::OPERATOR_STORE],
        )
        .unwrap();
        let acceptor = broker_acceptor(&secrets);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let mut accepted = Vec::new();
            for _ in 0..2 {
                let (stream, _) = listener.accept().await.unwrap();
                accepted.push(acceptor.accept(stream).await.is_ok());
            }
            accepted
        });
        let timeout = std::time::Duration::from_secs(5);
        // The name the certificate holds: accepted both ways.
        let right = tls
            .connect(&address, &names.pod_dns(0), "test", timeout)
            .await;
        assert!(right.is_ok(), "{right:?}");
        drop(right);
        // Another name: the operator refuses the broker.
        let wrong = tls
            .connect(&address, "elsewhere.example", "test", timeout)
            .await;
        assert!(matches!(wrong, Err(WireError::Tls { .. })), "{wrong:?}");
        let accepted = server.await.unwrap();
        assert!(
            accepted[0],
            "the broker accepted the operator's certificate"
        );
        // A routed address is reached that way; a forgotten one in clear.
        route("10.1.2.3:9091", Arc::new(tls), names.pod_dns(0));
        assert!(lookup("10.1.2.3:9091").is_some_and(|(_, name)| name == names.pod_dns(0)));
        forget("10.1.2.3:9091");
        assert!(lookup("10.1.2.3:9091").is_none());
        assert!(ClusterTls::from_pem("", &operator[certificate_secrets::OPERATOR_STORE]).is_err());
    }
}
