//! TLS on `SSL` listeners, with rustls: the server configuration built from the PEM key
//! and trust stores, the handshake (and the client certificate's principal), and the
//! re-reading of the store files when they change.
//!
//! ```text
//!   accept ─► ServerTls::accept ─ handshake (≤ 10 s) ─► client certificate? ─► Principal
//!                  ▲                                    none: User:ANONYMOUS
//!   every 5 s: key/trust store files changed? ─► new rustls config for new connections
//! ```
//!
//! Kubernetes rotates a mounted Secret by swapping a symlink, so the files are re-read,
//! not watched with inotify. A connection keeps the certificate it shook hands with; a
//! store that no longer parses is logged and the previous one kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::server::TlsStream;

use super::principal::{Principal, PrincipalMapper, subject_name};
use crate::config::{ClientAuth, KeyStore, SslConfig, TlsVersion, TrustStore};

/// A client that connects and never finishes the handshake is dropped after this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the store files are compared with what was loaded.
pub const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// Why a key or trust store cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the {what} {path}: {source}")]
    ReadStore {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the {what} holds no PEM certificate")]
    NoCertificate { what: String },
    #[error(
        "the {what} holds no unencrypted private key (PKCS#8, PKCS#1 or SEC1 PEM); an ENCRYPTED PRIVATE KEY would need ssl.key.password, not supported yet"
    )]
    NoKey { what: String },
    #[error("a certificate of the {what} cannot be read: {reason}")]
    BadCertificate { what: String, reason: String },
    #[error("the key store does not make a TLS server configuration: {reason}")]
    ServerConfig { reason: String },
    #[error("ssl.principal.mapping.rules: {reason}")]
    PrincipalRules { reason: String },
}

/// Why one connection's handshake failed (logged; the connection is closed).
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("no TLS handshake within {}s", HANDSHAKE_TIMEOUT.as_secs())]
    TimedOut,
    #[error("TLS handshake failed: {0}")]
    Failed(std::io::Error),
    #[error("client certificate unreadable: {0}")]
    Certificate(String),
    #[error("no ssl.principal.mapping.rules rule matches the client certificate's subject `{0}`")]
    NoPrincipal(String),
}

/// The bytes a configuration was built from, to notice when the files change.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stores {
    keystore: Vec<u8>,
    truststore: Option<Vec<u8>>,
}

/// The configurations built from one version of the stores.
#[derive(Debug)]
struct Built {
    stores: Stores,
    server: Arc<rustls::ServerConfig>,
    /// For this broker's own connections to other brokers' SSL listeners (followers
    /// fetching): the trust store verifies them, the key store is this broker's client
    /// certificate. `None` without a trust store.
    client: Option<Arc<rustls::ClientConfig>>,
}

/// This node's TLS: the current rustls configurations, swapped when the store files
/// change.
#[derive(Debug)]
pub struct ServerTls {
    config: SslConfig,
    principal_mapper: PrincipalMapper,
    current: RwLock<Arc<Built>>,
}

impl ServerTls {
    /// Reads the stores and builds the configuration; any problem stops the start-up.
    pub fn load(config: &SslConfig) -> Result<Self, TlsError> {
        let principal_mapper = PrincipalMapper::parse(&config.principal_mapping_rules)
            .map_err(|reason| TlsError::PrincipalRules { reason })?;
        let stores = read_stores(config)?;
        let built = build(config, stores)?;
        Ok(Self {
            config: config.clone(),
            principal_mapper,
            current: RwLock::new(Arc::new(built)),
        })
    }

    /// A connector to another broker's SSL listener at `host`, with the stores in effect
    /// now; `None` without a trust store.
    pub fn connector(
        &self,
        host: &str,
    ) -> Result<Option<(tokio_rustls::TlsConnector, ServerName<'static>)>, TlsError> {
        let Some(client) = self.current.read().client.clone() else {
            return Ok(None);
        };
        let name = ServerName::try_from(host.to_string()).map_err(|e| TlsError::ServerConfig {
            reason: format!("`{host}` is not a host name or address for TLS: {e}"),
        })?;
        Ok(Some((tokio_rustls::TlsConnector::from(client), name)))
    }

    /// The TLS handshake on an accepted connection, and who the client is.
    pub async fn accept(
        &self,
        stream: TcpStream,
    ) -> Result<(TlsStream<TcpStream>, Principal), HandshakeError> {
        let server = Arc::clone(&self.current.read().server);
        let acceptor = tokio_rustls::TlsAcceptor::from(server);
        let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
            .await
            .map_err(|_| HandshakeError::TimedOut)?
            .map_err(HandshakeError::Failed)?;
        let principal = match stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
        {
            None => Principal::anonymous(),
            Some(certificate) => {
                let subject = subject_name(certificate).map_err(HandshakeError::Certificate)?;
                principal_for(&self.principal_mapper, &subject)?
            }
        };
        Ok((stream, principal))
    }

    /// Re-reads the store files; a changed store that parses replaces the configuration
    /// for new connections. Returns whether it did.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let stores = read_stores(&self.config)?;
        if self.current.read().stores == stores {
            return Ok(false);
        }
        let built = build(&self.config, stores)?;
        *self.current.write() = Arc::new(built);
        Ok(true)
    }

    /// Checks the store files every [`RELOAD_CHECK_INTERVAL`] until shutdown.
    pub async fn watch(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut failing = false;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(RELOAD_CHECK_INTERVAL) => {}
                _ = shutdown.changed() => return,
            }
            let this = Arc::clone(&self);
            let result = tokio::task::spawn_blocking(move || this.reload_if_changed()).await;
            match result {
                Ok(Ok(true)) => {
                    failing = false;
                    tracing::info!("TLS key or trust store changed; new connections use it");
                }
                Ok(Ok(false)) => failing = false,
                Ok(Err(error)) if !failing => {
                    failing = true;
                    tracing::error!(%error, "TLS stores changed but cannot be used; keeping the previous ones");
                }
                Ok(Err(_)) => {}
                Err(error) => tracing::error!(%error, "TLS store check failed"),
            }
        }
    }
}

fn principal_for(mapper: &PrincipalMapper, subject: &str) -> Result<Principal, HandshakeError> {
    mapper
        .map(subject)
        .map(Principal::user)
        .ok_or_else(|| HandshakeError::NoPrincipal(subject.to_string()))
}

fn read_file(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::ReadStore {
        what,
        path: path.to_path_buf(),
        source,
    })
}

fn read_stores(config: &SslConfig) -> Result<Stores, TlsError> {
    let keystore = match &config.keystore {
        KeyStore::File(path) => read_file("key store (ssl.keystore.location)", path)?,
        KeyStore::Inline { chain, key } => format!("{key}\n{chain}\n").into_bytes(),
    };
    let truststore = match &config.truststore {
        None => None,
        Some(TrustStore::File(path)) => {
            Some(read_file("trust store (ssl.truststore.location)", path)?)
        }
        Some(TrustStore::Inline(certificates)) => Some(certificates.clone().into_bytes()),
    };
    Ok(Stores {
        keystore,
        truststore,
    })
}

fn certificates(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadCertificate {
            what: what.to_string(),
            reason: e.to_string(),
        })?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate {
            what: what.to_string(),
        });
    }
    Ok(certificates)
}

fn build(config: &SslConfig, stores: Stores) -> Result<Built, TlsError> {
    let keystore_name = match &config.keystore {
        KeyStore::File(path) => format!("key store {}", path.display()),
        KeyStore::Inline { .. } => "key store (ssl.keystore.key)".to_string(),
    };
    let chain = certificates(&keystore_name, &stores.keystore)?;
    let key = PrivateKeyDer::from_pem_slice(&stores.keystore).map_err(|_| TlsError::NoKey {
        what: keystore_name.clone(),
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = config
        .protocols
        .iter()
        .map(|version| match version {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        })
        .collect();
    let server_config_error = |reason: String| TlsError::ServerConfig { reason };
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| server_config_error(e.to_string()))?;
    let roots = match &stores.truststore {
        None => None,
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in certificates("trust store", pem)? {
                roots
                    .add(certificate)
                    .map_err(|e| TlsError::BadCertificate {
                        what: "trust store".into(),
                        reason: e.to_string(),
                    })?;
            }
            Some(Arc::new(roots))
        }
    };
    let client = match &roots {
        None => None,
        Some(roots) => Some(client_config(
            config,
            Arc::clone(roots),
            Arc::clone(&provider),
            &versions,
            chain.clone(),
            key.clone_key(),
        )?),
    };
    let builder = match (&roots, config.client_auth) {
        (_, ClientAuth::None) | (None, _) => builder.with_no_client_auth(),
        (Some(roots), auth) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::clone(roots),
                provider,
            );
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| server_config_error(e.to_string()))?,
            )
        }
    };
    let server = builder
        .with_single_cert(chain, key)
        .map_err(|e| server_config_error(e.to_string()))?;
    Ok(Built {
        stores,
        server: Arc::new(server),
        client,
    })
}

fn client_config(
    config: &SslConfig,
    roots: Arc<rustls::RootCertStore>,
    provider: Arc<rustls::crypto::CryptoProvider>,
    versions: &[&'static rustls::SupportedProtocolVersion],
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let reason = |e: rustls::Error| TlsError::ServerConfig {
        reason: e.to_string(),
    };
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
            .build()
            .map_err(|e| TlsError::ServerConfig {
                reason: e.to_string(),
            })?;
    let verifier: Arc<dyn rustls::client::danger::ServerCertVerifier> =
        if config.endpoint_identification {
            verifier
        } else {
            Arc::new(AnyName(verifier))
        };
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(reason)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(chain, key)
        .map_err(reason)?;
    Ok(Arc::new(client))
}

/// `ssl.endpoint.identification.algorithm=` (empty): the peer's chain is verified, its
/// name is not (Kafka's setting for certificates without the brokers' addresses).
#[derive(Debug)]
struct AnyName(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls::pki_types::ServerName;

    use super::*;

    /// A CA, a server certificate for 127.0.0.1 and a client certificate it signed.
    struct Pki {
        ca_pem: String,
        server_pem: String,
        client: (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
    }

    /// A subject with exactly these attributes (rcgen's default has a CN of its own).
    fn name(attributes: &[(rcgen::DnType, &str)]) -> rcgen::DistinguishedName {
        let mut name = rcgen::DistinguishedName::new();
        for (kind, value) in attributes {
            name.push(kind.clone(), *value);
        }
        name
    }

    fn pki(server_cn: &str) -> Pki {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params.distinguished_name = name(&[(rcgen::DnType::CommonName, "test CA")]);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, &ca_key);
        let server_key = rcgen::KeyPair::generate().unwrap();
        let mut server_params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        server_params.distinguished_name = name(&[(rcgen::DnType::CommonName, server_cn)]);
        let server = server_params.signed_by(&server_key, &issuer).unwrap();
        let client_key = rcgen::KeyPair::generate().unwrap();
        let mut client_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        // Written in this order, read last first: `CN=app-1,O=Example`.
        client_params.distinguished_name = name(&[
            (rcgen::DnType::OrganizationName, "Example"),
            (rcgen::DnType::CommonName, "app-1"),
        ]);
        let client = client_params.signed_by(&client_key, &issuer).unwrap();
        Pki {
            ca_pem: ca.pem(),
            server_pem: format!("{}{}", server_key.serialize_pem(), server.pem()),
            client: (
                vec![client.der().clone()],
                PrivateKeyDer::try_from(client_key.serialize_der()).unwrap(),
            ),
        }
    }

    fn ssl_config(
        keystore: PathBuf,
        truststore: Option<PathBuf>,
        auth: ClientAuth,
        rules: &str,
    ) -> SslConfig {
        SslConfig {
            keystore: KeyStore::File(keystore),
            truststore: truststore.map(TrustStore::File),
            client_auth: auth,
            principal_mapping_rules: rules.to_string(),
            endpoint_identification: true,
            protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        }
    }

    /// The broker's key store and the CA written to `dir`, and a configuration using them.
    fn written(dir: &std::path::Path, pki: &Pki, auth: ClientAuth, rules: &str) -> SslConfig {
        std::fs::write(dir.join("broker.pem"), &pki.server_pem).unwrap();
        std::fs::write(dir.join("ca.pem"), &pki.ca_pem).unwrap();
        ssl_config(
            dir.join("broker.pem"),
            Some(dir.join("ca.pem")),
            auth,
            rules,
        )
    }

    fn client_config(ca_pem: &str, identity: Option<&Pki>) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for certificate in certificates("ca", ca_pem.as_bytes()).unwrap() {
            roots.add(certificate).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        Arc::new(match identity {
            Some(pki) => builder
                .with_client_auth_cert(pki.client.0.clone(), pki.client.1.clone_key())
                .unwrap(),
            None => builder.with_no_client_auth(),
        })
    }

    /// Serves one connection: handshake, then echoes the principal's name.
    async fn serve_once(
        tls: Arc<ServerTls>,
    ) -> (
        std::net::SocketAddr,
        tokio::task::JoinHandle<Result<String, String>>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (mut stream, principal) = tls.accept(stream).await.map_err(|e| e.to_string())?;
            stream
                .write_all(principal.to_string().as_bytes())
                .await
                .unwrap();
            stream.shutdown().await.unwrap();
            Ok(principal.to_string())
        });
        (address, task)
    }

    /// Connects, returns what the server wrote and the server certificate's subject.
    async fn connect(
        address: std::net::SocketAddr,
        client: Arc<rustls::ClientConfig>,
    ) -> std::io::Result<(String, String)> {
        let stream = TcpStream::connect(address).await?;
        let connector = tokio_rustls::TlsConnector::from(client);
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let mut stream = connector.connect(name, stream).await?;
        let mut text = String::new();
        stream.read_to_string(&mut text).await?;
        let server_subject = stream.get_ref().1.peer_certificates().unwrap()[0].clone();
        Ok((text, subject_name(&server_subject).unwrap()))
    }

    #[tokio::test]
    async fn mutual_tls_maps_the_client_subject_to_its_principal() {
        let dir = tempfile::tempdir().unwrap();
        let pki = pki("broker");
        let config = written(
            dir.path(),
            &pki,
            ClientAuth::Required,
            "RULE:^CN=([^,]*),O=Example$/$1/U,DEFAULT",
        );
        let tls = Arc::new(ServerTls::load(&config).unwrap());

        let (address, server) = serve_once(Arc::clone(&tls)).await;
        let (said, _) = connect(address, client_config(&pki.ca_pem, Some(&pki)))
            .await
            .unwrap();
        assert_eq!(said, "User:APP-1");
        assert_eq!(server.await.unwrap().unwrap(), "User:APP-1");

        // Required: a client without a certificate never gets through.
        let (address, server) = serve_once(Arc::clone(&tls)).await;
        let _ = connect(address, client_config(&pki.ca_pem, None)).await;
        let refused = server.await.unwrap().unwrap_err();
        assert!(refused.contains("TLS handshake failed"), "{refused}");
    }

    #[tokio::test]
    async fn requested_client_auth_lets_a_client_without_a_certificate_in_as_anonymous() {
        let dir = tempfile::tempdir().unwrap();
        let pki = pki("broker");
        let config = written(dir.path(), &pki, ClientAuth::Requested, "DEFAULT");
        let tls = Arc::new(ServerTls::load(&config).unwrap());
        let (address, server) = serve_once(Arc::clone(&tls)).await;
        let (said, _) = connect(address, client_config(&pki.ca_pem, None))
            .await
            .unwrap();
        assert_eq!(said, "User:ANONYMOUS");
        server.await.unwrap().unwrap();
        let (address, server) = serve_once(tls).await;
        let (said, _) = connect(address, client_config(&pki.ca_pem, Some(&pki)))
            .await
            .unwrap();
        assert_eq!(said, "User:CN=app-1,O=Example");
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_rotated_key_store_serves_new_connections_and_a_broken_one_is_not_taken() {
        let dir = tempfile::tempdir().unwrap();
        let first = pki("broker-before");
        let path = dir.path().join("broker.pem");
        std::fs::write(&path, &first.server_pem).unwrap();
        let tls = Arc::new(
            ServerTls::load(&ssl_config(path.clone(), None, ClientAuth::None, "DEFAULT")).unwrap(),
        );
        assert!(!tls.reload_if_changed().unwrap(), "nothing changed");

        let second = pki("broker-after");
        std::fs::write(&path, &second.server_pem).unwrap();
        assert!(tls.reload_if_changed().unwrap());
        let (address, server) = serve_once(Arc::clone(&tls)).await;
        let (_, subject) = connect(address, client_config(&second.ca_pem, None))
            .await
            .unwrap();
        assert_eq!(subject, "CN=broker-after");
        server.await.unwrap().unwrap();

        std::fs::write(&path, "not a PEM file").unwrap();
        assert!(matches!(
            tls.reload_if_changed(),
            Err(TlsError::NoCertificate { .. })
        ));
        let (address, server) = serve_once(Arc::clone(&tls)).await;
        let (_, subject) = connect(address, client_config(&second.ca_pem, None))
            .await
            .unwrap();
        assert_eq!(
            subject, "CN=broker-after",
            "the last good store stays in use"
        );
        server.await.unwrap().unwrap();
    }

    /// A broker's own connector (followers fetching) presents its key store as the client
    /// certificate and checks the leader's name unless endpoint identification is off.
    #[tokio::test]
    async fn a_broker_reaches_another_over_mutual_tls_and_checks_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let pki = pki("broker");
        let mut config = written(dir.path(), &pki, ClientAuth::Required, "DEFAULT");
        let tls = Arc::new(ServerTls::load(&config).unwrap());
        let dial = |tls: Arc<ServerTls>, host: &'static str| async move {
            let (address, server) = serve_once(Arc::clone(&tls)).await;
            let (connector, name) = tls.connector(host).unwrap().unwrap();
            let stream = TcpStream::connect(address).await.unwrap();
            let connected = connector.connect(name, stream).await;
            let mut said = String::new();
            if let Ok(mut stream) = connected {
                let _ = stream.read_to_string(&mut said).await;
            }
            server.abort();
            said
        };
        assert_eq!(dial(Arc::clone(&tls), "127.0.0.1").await, "User:CN=broker");
        // The certificate names 127.0.0.1 only.
        assert_eq!(dial(Arc::clone(&tls), "localhost").await, "");
        config.endpoint_identification = false;
        let unchecked = Arc::new(ServerTls::load(&config).unwrap());
        assert_eq!(dial(unchecked, "localhost").await, "User:CN=broker");
    }

    #[test]
    fn a_key_store_without_a_key_or_certificate_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let pki = pki("broker");
        let path = dir.path().join("cert-only.pem");
        std::fs::write(&path, &pki.ca_pem).unwrap();
        let error =
            ServerTls::load(&ssl_config(path, None, ClientAuth::None, "DEFAULT")).unwrap_err();
        assert!(matches!(error, TlsError::NoKey { .. }), "{error}");
        let missing = ServerTls::load(&ssl_config(
            dir.path().join("absent.pem"),
            None,
            ClientAuth::None,
            "DEFAULT",
        ))
        .unwrap_err();
        assert!(missing.to_string().contains("absent.pem"), "{missing}");
    }
}
