//! `oxbow dev --secure`: the same local cluster with no port open to anyone without
//! credentials. Clients use SASL/SCRAM over TLS; replication and the quorum run over
//! mutual TLS with the brokers' certificate; ACLs are on, with `admin` and the brokers as
//! super users. The CA, the brokers' key store, the admin password and ready-made client
//! configs (kcat's and the Java client's) are written under the cluster's directory, once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

/// The brokers' certificate subject, which is their principal (`User:CN=...`).
const BROKER_CN: &str = "oxbow-dev-broker";
/// The user `--secure` creates; its password is in `<dir>/admin.password`.
pub const ADMIN: &str = "admin";

/// What `--secure` keeps under the cluster's directory.
#[derive(Debug)]
pub struct SecureFiles {
    pub ca: PathBuf,
    pub store: PathBuf,
    pub password: String,
}

/// Creates the CA, the brokers' key store and the admin password the first time; reads
/// them back afterwards (a restarted `oxbow dev --secure` keeps its credentials).
pub fn prepare(dir: &Path) -> anyhow::Result<SecureFiles> {
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).with_context(|| format!("creating {}", tls.display()))?;
    let ca = tls.join("ca.crt");
    let store = tls.join("broker.pem");
    if !ca.exists() || !store.exists() {
        let (ca_pem, store_pem) = certificates().context("making the TLS certificates")?;
        write_private(&store, &store_pem)?;
        std::fs::write(&ca, ca_pem).with_context(|| format!("writing {}", ca.display()))?;
    }
    let password_file = dir.join("admin.password");
    let password = match std::fs::read_to_string(&password_file) {
        Ok(password) if !password.trim().is_empty() => password.trim().to_string(),
        _ => {
            let password = uuid::Uuid::new_v4().simple().to_string();
            write_private(&password_file, &password)?;
            password
        }
    };
    Ok(SecureFiles {
        ca,
        store,
        password,
    })
}

fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(contents.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

/// A CA (PEM) and the brokers' key store (their key, then their certificate), valid for
/// 127.0.0.1 and localhost, for serving and for connecting to each other.
fn certificates() -> anyhow::Result<(String, String)> {
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
        IsCa, Issuer, KeyPair,
    };
    let name = |cn: &str| {
        let mut name = DistinguishedName::new();
        name.push(DnType::CommonName, cn);
        name
    };
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name = name("Oxbow dev CA");
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, &ca_key);
    let key = KeyPair::generate()?;
    let mut params =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?;
    params.distinguished_name = name(BROKER_CN);
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = params.signed_by(&key, &issuer)?;
    Ok((ca.pem(), format!("{}{}", key.serialize_pem(), cert.pem())))
}

/// The overrides that secure node `node`: SASL_SSL for clients on its client port, SSL
/// (mutual) for replication on `replication_port`, SSL (mutual) on its controller port.
pub fn overrides(
    files: &SecureFiles,
    client_port: u16,
    replication_port: u16,
    controller_port: u16,
) -> Vec<String> {
    vec![
        format!(
            "listeners=SASL_SSL://127.0.0.1:{client_port},REPLICATION://127.0.0.1:{replication_port},CONTROLLER://127.0.0.1:{controller_port}"
        ),
        "listener.security.protocol.map=SASL_SSL:SASL_SSL,REPLICATION:SSL,CONTROLLER:SSL".into(),
        "inter.broker.listener.name=REPLICATION".into(),
        format!("ssl.keystore.location={}", files.store.display()),
        format!("ssl.truststore.location={}", files.ca.display()),
        "ssl.client.auth=required".into(),
        "sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256".into(),
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        format!("super.users=User:{ADMIN};User:CN={BROKER_CN}"),
    ]
}

/// Creates the admin user through the quorum (mutual TLS with the brokers' certificate),
/// retrying while the cluster forms.
pub async fn create_admin(
    files: &SecureFiles,
    voters: &BTreeMap<i32, String>,
    cluster_id: &str,
) -> anyhow::Result<()> {
    use oxbow_broker::{ClientAuth, KeyStore, SslConfig, TlsVersion, TrustStore};
    let ssl = SslConfig {
        keystore: KeyStore::File(files.store.clone()),
        truststore: Some(TrustStore::File(files.ca.clone())),
        client_auth: ClientAuth::Required,
        principal_mapping_rules: "DEFAULT".into(),
        protocols: vec![TlsVersion::Tls12, TlsVersion::Tls13],
        endpoint_identification: true,
    };
    let tls = Some(Arc::new(
        oxbow_broker::ServerTls::load(&ssl).context("loading the TLS stores")?,
    ));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let attempt = oxbow_broker::set_scram_password(
            voters,
            cluster_id,
            tls.clone(),
            ADMIN,
            &files.password,
            Duration::from_secs(10),
        )
        .await;
        match attempt {
            Ok(()) => return Ok(()),
            Err(error) if tokio::time::Instant::now() >= deadline => {
                anyhow::bail!("cannot create the admin user: {error}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// Writes kcat's and the Java client's configs for the admin user; returns their paths.
pub fn client_configs(
    dir: &Path,
    files: &SecureFiles,
    bootstrap: &str,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let kcat = dir.join("kcat.conf");
    write_private(
        &kcat,
        &format!(
            "bootstrap.servers={bootstrap}\nsecurity.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username={ADMIN}\nsasl.password={}\nssl.ca.location={}\n",
            files.password,
            files.ca.display()
        ),
    )?;
    let java = dir.join("client.properties");
    write_private(
        &java,
        &format!(
            "bootstrap.servers={bootstrap}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{ADMIN}\" password=\"{}\";\nssl.truststore.type=PEM\nssl.truststore.location={}\n",
            files.password,
            files.ca.display()
        ),
    )?;
    Ok((kcat, java))
}
