//! The SASL step of a connection on a `SASL_PLAINTEXT` or `SASL_SSL` listener, as Kafka's
//! `SaslServerAuthenticator` runs it: nothing but ApiVersions, SaslHandshake and
//! SaslAuthenticate is served until the client has proved who it is.
//!
//! ```text
//!   SaslHandshake(mechanism) ─► enabled? ─ no ─► UNSUPPORTED_SASL_MECHANISM, close
//!   SaslAuthenticate(client-first) ─► server-first
//!   SaslAuthenticate(client-final) ─► proof right? ─ no ─► SASL_AUTHENTICATION_FAILED, close
//!                                     └► server-final; the connection is User:<name>
//! ```

use super::principal::Principal;
use super::scram::{ScramError, ScramServer};
use crate::metadata::records::{ScramCredential, ScramMechanism};

/// Where a connection's authentication stands.
#[derive(Debug)]
enum State {
    /// Waiting for SaslHandshake.
    Handshake,
    /// A mechanism chosen, its exchange under way (boxed: most of a connection's life is
    /// spent authenticated).
    Scram(Box<ScramServer>),
    Authenticated,
    Failed,
}

/// What a SaslAuthenticate request led to.
#[derive(Debug, PartialEq, Eq)]
pub enum SaslStep {
    /// Send these bytes back and wait for the client's next message.
    Challenge(Vec<u8>),
    /// Done: send these bytes back; the connection is this principal from now on.
    Authenticated(Vec<u8>, Principal),
    /// Refused: answer with the error, then close the connection.
    Failed(SaslFailure),
}

/// Why authentication failed, with Kafka's error for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslFailure {
    /// SASL_AUTHENTICATION_FAILED.
    #[error(
        "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
    )]
    InvalidCredentials { mechanism: &'static str },
    /// SASL_AUTHENTICATION_FAILED for a message that is not SCRAM.
    #[error("Authentication failed: {0}")]
    Malformed(String),
    /// ILLEGAL_SASL_STATE: SaslAuthenticate before SaslHandshake, or after a failure.
    #[error("Unexpected SaslAuthenticate request in this state of the SASL exchange")]
    IllegalState,
}

/// One connection's authenticator.
#[derive(Debug)]
pub struct SaslAuthenticator {
    enabled: Vec<ScramMechanism>,
    mechanism: Option<ScramMechanism>,
    state: State,
}

impl SaslAuthenticator {
    pub fn new(enabled: Vec<ScramMechanism>) -> Self {
        Self {
            enabled,
            mechanism: None,
            state: State::Handshake,
        }
    }

    /// The mechanisms this listener offers, by Kafka's names.
    pub fn enabled_names(&self) -> Vec<&'static str> {
        self.enabled.iter().map(|m| m.name()).collect()
    }

    pub fn is_authenticated(&self) -> bool {
        matches!(self.state, State::Authenticated)
    }

    /// SaslHandshake: `Ok` when `mechanism` is enabled here (the exchange starts), `Err`
    /// otherwise (UNSUPPORTED_SASL_MECHANISM, or ILLEGAL_SASL_STATE when a handshake was
    /// already made).
    pub fn handshake(&mut self, mechanism: &str) -> Result<(), HandshakeRefusal> {
        if !matches!(self.state, State::Handshake) {
            return Err(HandshakeRefusal::IllegalState);
        }
        match ScramMechanism::from_name(mechanism).filter(|m| self.enabled.contains(m)) {
            Some(chosen) => {
                self.mechanism = Some(chosen);
                self.state = State::Scram(Box::new(ScramServer::new(chosen)));
                Ok(())
            }
            None => {
                self.state = State::Failed;
                Err(HandshakeRefusal::Unsupported)
            }
        }
    }

    /// One SaslAuthenticate request's bytes; `lookup` finds a user's credential.
    pub fn authenticate(
        &mut self,
        bytes: &[u8],
        lookup: impl FnOnce(&str, ScramMechanism) -> Option<ScramCredential>,
    ) -> SaslStep {
        let Some(mechanism) = self.mechanism else {
            self.state = State::Failed;
            return SaslStep::Failed(SaslFailure::IllegalState);
        };
        let State::Scram(server) = &mut self.state else {
            self.state = State::Failed;
            return SaslStep::Failed(SaslFailure::IllegalState);
        };
        let step = if server.awaiting_first() {
            server
                .client_first(bytes, |user| lookup(user, mechanism))
                .map(SaslStep::Challenge)
        } else {
            server
                .client_final(bytes)
                .map(|(last, user)| SaslStep::Authenticated(last, Principal::user(user)))
        };
        match step {
            Ok(step) => {
                if matches!(step, SaslStep::Authenticated(..)) {
                    self.state = State::Authenticated;
                }
                step
            }
            Err(error) => {
                self.state = State::Failed;
                SaslStep::Failed(match error {
                    ScramError::InvalidCredentials => SaslFailure::InvalidCredentials {
                        mechanism: mechanism.name(),
                    },
                    other => SaslFailure::Malformed(other.to_string()),
                })
            }
        }
    }
}

/// Why a SaslHandshake was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeRefusal {
    Unsupported,
    IllegalState,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::scram::credential_from_password;

    fn scram_client_final(password: &str, server_first: &str, client_nonce_first: &str) -> Vec<u8> {
        // A minimal SCRAM client (RFC 5802 section 3) to drive the authenticator.
        use base64::Engine as _;
        use base64::engine::general_purpose::STANDARD as BASE64;
        use ring::{digest, hmac};
        let attributes: std::collections::HashMap<&str, &str> = server_first
            .split(',')
            .filter_map(|a| a.split_once('='))
            .collect();
        let nonce = attributes["r"];
        let salt = BASE64.decode(attributes["s"]).unwrap();
        let iterations: u32 = attributes["i"].parse().unwrap();
        let salted = crate::security::scram::salted_password(
            ScramMechanism::Sha256,
            password,
            &salt,
            iterations,
        );
        let key = hmac::Key::new(hmac::HMAC_SHA256, &salted);
        let client_key = hmac::sign(&key, b"Client Key");
        let stored_key = digest::digest(&digest::SHA256, client_key.as_ref());
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{client_nonce_first},{server_first},{without_proof}");
        let signature = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, stored_key.as_ref()),
            auth_message.as_bytes(),
        );
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(signature.as_ref())
            .map(|(a, b)| a ^ b)
            .collect();
        format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes()
    }

    fn lookup(user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        (user == "alice" && mechanism == ScramMechanism::Sha256).then(|| {
            credential_from_password(ScramMechanism::Sha256, "alice-secret", b"salty", 4096)
        })
    }

    fn exchange(password: &str) -> SaslStep {
        let mut auth = SaslAuthenticator::new(vec![ScramMechanism::Sha256]);
        auth.handshake("SCRAM-SHA-256").unwrap();
        let SaslStep::Challenge(first) = auth.authenticate(b"n,,n=alice,r=abc", lookup) else {
            panic!("no server-first")
        };
        let first = String::from_utf8(first).unwrap();
        let last = scram_client_final(password, &first, "n=alice,r=abc");
        auth.authenticate(&last, lookup)
    }

    #[test]
    fn the_right_password_authenticates_as_the_user() {
        match exchange("alice-secret") {
            SaslStep::Authenticated(last, principal) => {
                assert!(last.starts_with(b"v="));
                assert_eq!(principal.to_string(), "User:alice");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_wrong_password_fails_with_kafkas_message() {
        let SaslStep::Failed(failure) = exchange("guess") else {
            panic!("a wrong password was accepted")
        };
        assert_eq!(
            failure.to_string(),
            "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
        );
    }

    #[test]
    fn mechanisms_not_enabled_and_steps_out_of_order_are_refused() {
        let mut auth = SaslAuthenticator::new(vec![ScramMechanism::Sha512]);
        assert_eq!(
            auth.handshake("SCRAM-SHA-256"),
            Err(HandshakeRefusal::Unsupported)
        );
        let mut auth = SaslAuthenticator::new(vec![ScramMechanism::Sha512]);
        assert_eq!(
            auth.authenticate(b"n,,n=alice,r=abc", lookup),
            SaslStep::Failed(SaslFailure::IllegalState)
        );
        let mut auth = SaslAuthenticator::new(vec![ScramMechanism::Sha512]);
        auth.handshake("SCRAM-SHA-512").unwrap();
        assert_eq!(
            auth.handshake("SCRAM-SHA-512"),
            Err(HandshakeRefusal::IllegalState)
        );
        assert_eq!(auth.enabled_names(), vec!["SCRAM-SHA-512"]);
    }
}
