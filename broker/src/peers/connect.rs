//! Connecting to another broker's inter-broker listener as a Kafka client: over TLS when
//! it is `SSL` or `SASL_SSL`, then SaslHandshake and SaslAuthenticate when it is `SASL_*`.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use oxbow_kafka_client::{Connection as PeerConnection, WireError as PeerError};

use crate::config::InterBrokerSasl;
use crate::metadata::records::Endpoint;
use crate::security::ServerTls;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to another broker's inter-broker listener (TLS and SASL as configured).
pub(super) async fn connect_to(
    endpoint: &Endpoint,
    client_id: &str,
    tls: Option<&Arc<ServerTls>>,
    sasl: Option<&Arc<InterBrokerSasl>>,
) -> Result<PeerConnection, PeerError> {
    let address = socket_address(&endpoint.host, endpoint.port);
    let tls = match tls {
        Some(tls) => tls
            .connector(&endpoint.host)
            .map_err(|error| PeerError::Tls {
                address: address.clone(),
                source: std::io::Error::other(error.to_string()),
            })?,
        None => None,
    };
    let mut connection = match tls {
        Some((connector, name)) => {
            PeerConnection::connect_tls(&address, client_id, CONNECT_TIMEOUT, &connector, name)
                .await?
        }
        None => PeerConnection::connect(&address, client_id, CONNECT_TIMEOUT).await?,
    };
    if let Some(sasl) = sasl {
        authenticate(&mut connection, sasl).await?;
    }
    Ok(connection)
}

/// SaslHandshake v1 and SaslAuthenticate v1 as a Kafka client: SCRAM's two rounds (the
/// leader's signature checked) or PLAIN's one.
async fn authenticate(
    connection: &mut PeerConnection,
    sasl: &InterBrokerSasl,
) -> Result<(), PeerError> {
    use crate::security::{SaslMechanism, ScramClient};
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let address = connection.address().to_string();
    let failed = |reason: String| PeerError::Authentication {
        address: address.clone(),
        reason,
    };
    let handshake = connection
        .call_version(
            &SaslHandshakeRequest::default()
                .with_mechanism(StrBytes::from_static_str(sasl.mechanism.name())),
            1,
            CONNECT_TIMEOUT,
        )
        .await?;
    if handshake.error_code != 0 {
        return Err(failed(format!(
            "SaslHandshake for {} answered {}",
            sasl.mechanism.name(),
            oxbow_kafka_client::error_name(handshake.error_code)
        )));
    }
    let mut step = async |bytes: Vec<u8>| -> Result<Vec<u8>, PeerError> {
        let answer = connection
            .call_version(
                &SaslAuthenticateRequest::default().with_auth_bytes(bytes.into()),
                1,
                CONNECT_TIMEOUT,
            )
            .await?;
        if answer.error_code != 0 {
            return Err(failed(format!(
                "{}: {}",
                oxbow_kafka_client::error_name(answer.error_code),
                answer.error_message.as_deref().unwrap_or_default()
            )));
        }
        Ok(answer.auth_bytes.to_vec())
    };
    match sasl.mechanism {
        SaslMechanism::Scram(mechanism) => {
            let mut client = ScramClient::new(mechanism, &sasl.username, &sasl.password);
            let server_first = step(client.client_first()).await?;
            let client_final = client.client_final(&server_first).map_err(&failed)?;
            let server_final = step(client_final).await?;
            client.verify_server_final(&server_final).map_err(&failed)
        }
        SaslMechanism::Plain => {
            let token = format!("\0{}\0{}", sasl.username, sasl.password);
            step(token.into_bytes()).await.map(|_| ())
        }
        SaslMechanism::OAuthBearer => Err(failed(
            "OAUTHBEARER is not used between brokers".to_string(),
        )),
    }
}

/// `host:port`, with an IPv6 literal in brackets.
fn socket_address(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
