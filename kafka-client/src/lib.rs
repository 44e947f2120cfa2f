//! One Kafka client connection for every Oxbow component that talks to a broker: the
//! followers' fetchers, the operator's admin client and the tests' raw client.
//!
//! `kafka-protocol` encodes and decodes the messages; this crate adds what a connection
//! needs around them: the 4-byte size prefix, request headers with the next correlation id,
//! the check that a response answers the request sent, a bound on response sizes, and
//! (when asked for) ApiVersions negotiation so each request goes at the highest version
//! both sides speak. Requests go one at a time.

mod connection;
mod frame;

pub use connection::{Connection, Versions};
pub use frame::{decode_response, decode_response_and_rest, encode_request};
pub use kafka_protocol::error::ResponseError;

/// What can go wrong on a connection, below the Kafka error codes of a response.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("connecting to {address} failed: {source}")]
    Connect {
        address: String,
        source: std::io::Error,
    },
    #[error("connecting to {address} timed out")]
    ConnectTimeout { address: String },
    #[error("TLS handshake with {address} failed: {source}")]
    Tls {
        address: String,
        source: std::io::Error,
    },
    #[error("{} request to {address} failed: {source}", api_name(*.api))]
    Io {
        api: i16,
        address: String,
        source: std::io::Error,
    },
    #[error("{} request to {address} timed out", api_name(*.api))]
    Timeout { api: i16, address: String },
    #[error("encoding or decoding {} with {address} failed: {reason}", api_name(*.api))]
    Codec {
        api: i16,
        address: String,
        reason: String,
    },
    #[error("{} answered from {address} with a frame of {size} bytes", api_name(*.api))]
    BadFrame {
        api: i16,
        address: String,
        size: i64,
    },
    #[error("{address} supports no version of {} that this client speaks", api_name(*.api))]
    Unsupported { api: i16, address: String },
    #[error("SASL authentication with {address} failed: {reason}")]
    Authentication { address: String, reason: String },
}

/// Kafka's name of error `code` (`TOPIC_ALREADY_EXISTS`), from kafka-protocol's table of
/// Kafka's errors.
pub fn error_name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(code)) => format!("UNKNOWN_ERROR_CODE_{code}"),
        Some(error) => {
            let mut name = String::new();
            for (i, c) in error.to_string().chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    name.push('_');
                }
                name.push(c.to_ascii_uppercase());
            }
            name
        }
    }
}

/// The name of Kafka API `key` ("Fetch", "Metadata", ...), for messages.
pub fn api_name(key: i16) -> String {
    match kafka_protocol::messages::ApiKey::try_from(key) {
        Ok(api) => format!("{api:?}"),
        Err(()) => format!("API {key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(17), "INVALID_TOPIC_EXCEPTION");
        assert_eq!(error_name(36), "TOPIC_ALREADY_EXISTS");
        assert_eq!(error_name(102), "BROKER_ID_NOT_REGISTERED");
        assert_eq!(error_name(-7), "UNKNOWN_ERROR_CODE_-7");
        assert_eq!(api_name(3), "Metadata");
    }
}
