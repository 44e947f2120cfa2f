//! The SASL step of a connection on a `SASL_PLAINTEXT` or `SASL_SSL` listener, as Kafka's
//! `SaslServerAuthenticator` runs it: nothing but ApiVersions, SaslHandshake and
//! SaslAuthenticate is served until the client has proved who it is.
//!
//! ```text
//!   SaslHandshake(mechanism) ─► enabled? ─ no ─► UNSUPPORTED_SASL_MECHANISM, close
//!   SCRAM:       SaslAuthenticate(client-first) ─► server-first
//!                SaslAuthenticate(client-final) ─► proof right? ─► server-final
//!   PLAIN:       SaslAuthenticate(NUL user NUL password) ─► password right? ─► (empty)
//!   OAUTHBEARER: SaslAuthenticate(n,,^Aauth=Bearer <jwt>^A^A) ─► token valid? ─► (empty)
//!   any refusal ─► SASL_AUTHENTICATION_FAILED, close; success: the connection is User:<name>
//! ```
//!
//! With `connections.max.reauth.ms` (KIP-368) a session lasts that long (an OAUTHBEARER
//! one no longer than its token): the client re-authenticates on the open connection with
//! the same mechanism as the same principal, or the connection is closed at its next
//! request.

use std::time::{Duration, Instant};

use super::principal::Principal;
use super::scram::{ScramError, ScramServer};
use super::{oauthbearer, plain};
use crate::metadata::records::ScramCredential;
pub use crate::model::SaslMechanism;
use crate::model::ScramMechanism;

/// Where a connection's authentication stands.
#[derive(Debug)]
enum State {
    /// Waiting for SaslHandshake.
    Handshake,
    /// A SCRAM exchange under way (boxed: most of a connection's life is spent
    /// authenticated).
    Scram(Box<ScramServer>),
    /// PLAIN or OAUTHBEARER: one message decides.
    SingleMessage,
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
    /// SASL_AUTHENTICATION_FAILED for a message the mechanism refuses.
    #[error("Authentication failed: {0}")]
    Malformed(String),
    /// ILLEGAL_SASL_STATE: SaslAuthenticate before SaslHandshake, or after a failure.
    #[error("Unexpected SaslAuthenticate request in this state of the SASL exchange")]
    IllegalState,
}

/// What an authenticated connection does with its next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Served as usual.
    Serve,
    /// Through the SASL step: not authenticated yet, or re-authenticating.
    Gate,
    /// The session expired without re-authentication: close the connection.
    Expired,
}

/// Kafka's API key of SaslHandshake, which starts a re-authentication.
const SASL_HANDSHAKE: i16 = 17;

/// What a SASL listener offers, and how its OAUTHBEARER tokens are validated.
#[derive(Debug)]
pub struct SaslListener {
    pub mechanisms: Vec<SaslMechanism>,
    /// Shared by every listener (one key set, re-read once).
    pub tokens: std::sync::Arc<oauthbearer::TokenValidator>,
}

/// One connection's authenticator.
#[derive(Debug)]
pub struct SaslAuthenticator {
    listener: std::sync::Arc<SaslListener>,
    mechanism: Option<SaslMechanism>,
    state: State,
    /// `connections.max.reauth.ms`; zero: sessions never expire.
    max_session: Duration,
    /// When the current session ends (and its length, for the client).
    session: Option<(Instant, Duration)>,
    /// While re-authenticating: who the connection was, which it must stay.
    previous: Option<Principal>,
    /// After a SaslHandshake v0: the tokens come as raw frames, not SaslAuthenticate.
    raw_tokens: bool,
}

impl SaslAuthenticator {
    pub fn new(listener: std::sync::Arc<SaslListener>, max_reauth_ms: u64) -> Self {
        Self {
            listener,
            mechanism: None,
            state: State::Handshake,
            max_session: Duration::from_millis(max_reauth_ms),
            session: None,
            previous: None,
            raw_tokens: false,
        }
    }

    /// The mechanisms this listener offers, by Kafka's names.
    pub fn enabled_names(&self) -> Vec<&'static str> {
        self.listener.mechanisms.iter().map(|m| m.name()).collect()
    }

    /// A SaslHandshake v0 was answered: the exchange continues in raw frames.
    pub fn use_raw_tokens(&mut self) {
        self.raw_tokens = true;
    }

    /// Whether the next frame is a raw SASL token (during a v0 exchange).
    pub fn expects_raw_token(&self) -> bool {
        self.raw_tokens && !matches!(self.state, State::Handshake | State::Authenticated)
    }

    /// The mechanism chosen by the handshake, or `none` before one (a metric label).
    pub fn mechanism_name(&self) -> &'static str {
        self.mechanism.map_or("none", SaslMechanism::name)
    }

    pub fn is_authenticated(&self) -> bool {
        matches!(self.state, State::Authenticated)
    }

    /// The session's length for SaslAuthenticate's `session_lifetime_ms` (0: no limit).
    pub fn session_lifetime_ms(&self) -> i64 {
        self.session.map_or(0, |(_, length)| {
            i64::try_from(length.as_millis()).unwrap_or(i64::MAX)
        })
    }

    /// Whether a request (its API key) of an authenticated connection is served, starts a
    /// re-authentication (SaslHandshake), or finds the session expired.
    pub fn admit(&mut self, api_key: i16, now: Instant, principal: &Principal) -> Admission {
        if !self.is_authenticated() {
            return Admission::Gate;
        }
        if api_key == SASL_HANDSHAKE && !self.raw_tokens {
            self.previous = Some(principal.clone());
            self.state = State::Handshake;
            return Admission::Gate;
        }
        match self.session {
            Some((ends, _)) if now >= ends => Admission::Expired,
            _ => Admission::Serve,
        }
    }

    /// SaslHandshake: `Ok` when `mechanism` is enabled here (the exchange starts), `Err`
    /// otherwise (UNSUPPORTED_SASL_MECHANISM, or ILLEGAL_SASL_STATE when a handshake was
    /// already made, or a re-authentication names another mechanism).
    pub fn handshake(&mut self, mechanism: &str) -> Result<(), HandshakeRefusal> {
        if !matches!(self.state, State::Handshake) {
            return Err(HandshakeRefusal::IllegalState);
        }
        let chosen =
            SaslMechanism::from_name(mechanism).filter(|m| self.listener.mechanisms.contains(m));
        match chosen {
            Some(chosen) if self.previous.is_some() && self.mechanism != Some(chosen) => {
                self.state = State::Failed;
                Err(HandshakeRefusal::IllegalState)
            }
            Some(chosen) => {
                self.mechanism = Some(chosen);
                self.state = match chosen {
                    SaslMechanism::Scram(scram) => State::Scram(Box::new(ScramServer::new(scram))),
                    SaslMechanism::Plain | SaslMechanism::OAuthBearer => State::SingleMessage,
                };
                Ok(())
            }
            None => {
                self.state = State::Failed;
                Err(HandshakeRefusal::Unsupported)
            }
        }
    }

    /// One SaslAuthenticate request's bytes at `now_ms` (wall clock, for token expiry);
    /// `lookup` finds a user's SCRAM credential.
    pub fn authenticate(
        &mut self,
        bytes: &[u8],
        now_ms: u64,
        lookup: impl Fn(&str, ScramMechanism) -> Option<ScramCredential>,
    ) -> SaslStep {
        let Some(mechanism) = self.mechanism else {
            self.state = State::Failed;
            return SaslStep::Failed(SaslFailure::IllegalState);
        };
        let mut token_ends_ms = None;
        let step = match (&mut self.state, mechanism) {
            (State::Scram(server), SaslMechanism::Scram(scram)) => {
                let step = if server.awaiting_first() {
                    server
                        .client_first(bytes, |user| lookup(user, scram))
                        .map(SaslStep::Challenge)
                } else {
                    server
                        .client_final(bytes)
                        .map(|(last, user)| SaslStep::Authenticated(last, Principal::user(user)))
                };
                step.map_err(|error| match error {
                    ScramError::InvalidCredentials => SaslFailure::InvalidCredentials {
                        mechanism: mechanism.name(),
                    },
                    other => SaslFailure::Malformed(other.to_string()),
                })
            }
            (State::SingleMessage, SaslMechanism::Plain) => plain::authenticate(bytes, &lookup)
                .map(|user| SaslStep::Authenticated(Vec::new(), Principal::user(user)))
                .map_err(|reason| {
                    SaslFailure::Malformed(
                        reason
                            .strip_prefix("Authentication failed: ")
                            .unwrap_or(&reason)
                            .to_string(),
                    )
                }),
            (State::SingleMessage, SaslMechanism::OAuthBearer) => {
                oauthbearer::authenticate(bytes, now_ms, &self.listener.tokens)
                    .map(|token| {
                        token_ends_ms = Some(token.expires_ms.saturating_sub(now_ms));
                        SaslStep::Authenticated(Vec::new(), Principal::user(token.principal))
                    })
                    .map_err(SaslFailure::Malformed)
            }
            _ => Err(SaslFailure::IllegalState),
        };
        match step {
            Ok(SaslStep::Authenticated(last, principal)) => {
                if let Some(previous) = self.previous.take()
                    && previous != principal
                {
                    self.state = State::Failed;
                    return SaslStep::Failed(SaslFailure::Malformed(format!(
                        "Cannot change principals during re-authentication from {previous}: {principal}"
                    )));
                }
                self.state = State::Authenticated;
                self.session = self.session_for(token_ends_ms);
                SaslStep::Authenticated(last, principal)
            }
            Ok(step) => step,
            Err(failure) => {
                self.state = State::Failed;
                SaslStep::Failed(failure)
            }
        }
    }

    /// A new session: `connections.max.reauth.ms` long, and no longer than an OAUTHBEARER
    /// token's life; none when re-authentication is off.
    fn session_for(&self, token_ms: Option<u64>) -> Option<(Instant, Duration)> {
        if self.max_session.is_zero() {
            return None;
        }
        let length = token_ms.map_or(self.max_session, |ms| {
            self.max_session.min(Duration::from_millis(ms))
        });
        Some((Instant::now() + length, length))
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

    fn authenticator(mechanisms: Vec<SaslMechanism>, reauth_ms: u64) -> SaslAuthenticator {
        SaslAuthenticator::new(
            std::sync::Arc::new(SaslListener {
                mechanisms,
                tokens: std::sync::Arc::new(oauthbearer::TokenValidator::Unsecured),
            }),
            reauth_ms,
        )
    }
    use crate::security::scram::credential_from_password;

    /// The client-final message of alice's exchange (client nonce `abc`), with `echo_prefix`
    /// before the nonce it echoes (librdkafka before 2.2 sends its own nonce there again).
    fn scram_client_final_with(password: &str, server_first: &str, echo_prefix: &str) -> Vec<u8> {
        crate::security::ScramClient::with_nonce(ScramMechanism::Sha256, "alice", password, "abc")
            .client_final_echoing(server_first.as_bytes(), echo_prefix)
            .unwrap()
    }

    fn lookup(user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        (user == "alice" && mechanism == ScramMechanism::Sha256).then(|| {
            credential_from_password(ScramMechanism::Sha256, "alice-secret", b"salty", 4096)
        })
    }

    fn exchange(password: &str) -> SaslStep {
        let mut auth = authenticator(vec![SaslMechanism::Scram(ScramMechanism::Sha256)], 0);
        auth.handshake("SCRAM-SHA-256").unwrap();
        let SaslStep::Challenge(first) = auth.authenticate(b"n,,n=alice,r=abc", 0, lookup) else {
            panic!("no server-first")
        };
        let first = String::from_utf8(first).unwrap();
        let last = scram_client_final_with(password, &first, "");
        auth.authenticate(&last, 0, lookup)
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
    fn a_final_nonce_ending_with_the_servers_is_accepted_as_kafka_accepts_it() {
        let mut auth = authenticator(vec![SaslMechanism::Scram(ScramMechanism::Sha256)], 0);
        auth.handshake("SCRAM-SHA-256").unwrap();
        let SaslStep::Challenge(first) = auth.authenticate(b"n,,n=alice,r=abc", 0, lookup) else {
            panic!("no server-first")
        };
        let first = String::from_utf8(first).unwrap();
        let last = scram_client_final_with("alice-secret", &first, "abc");
        assert!(matches!(
            auth.authenticate(&last, 0, lookup),
            SaslStep::Authenticated(..)
        ));
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
        let mut auth = authenticator(vec![SaslMechanism::Scram(ScramMechanism::Sha512)], 0);
        assert_eq!(
            auth.handshake("SCRAM-SHA-256"),
            Err(HandshakeRefusal::Unsupported)
        );
        let mut auth = authenticator(vec![SaslMechanism::Scram(ScramMechanism::Sha512)], 0);
        assert_eq!(
            auth.authenticate(b"n,,n=alice,r=abc", 0, lookup),
            SaslStep::Failed(SaslFailure::IllegalState)
        );
        let mut auth = authenticator(vec![SaslMechanism::Scram(ScramMechanism::Sha512)], 0);
        auth.handshake("SCRAM-SHA-512").unwrap();
        assert_eq!(
            auth.handshake("SCRAM-SHA-512"),
            Err(HandshakeRefusal::IllegalState)
        );
        assert_eq!(auth.enabled_names(), vec!["SCRAM-SHA-512"]);
    }

    fn plain_authenticator(reauth_ms: u64) -> SaslAuthenticator {
        let mut auth = authenticator(vec![SaslMechanism::Plain], reauth_ms);
        auth.handshake("PLAIN").unwrap();
        auth
    }

    #[test]
    fn plain_checks_the_password_against_the_scram_credential() {
        let mut auth = plain_authenticator(0);
        match auth.authenticate(b"\0alice\0alice-secret", 0, lookup) {
            SaslStep::Authenticated(last, principal) => {
                assert!(last.is_empty());
                assert_eq!(principal.to_string(), "User:alice");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            auth.session_lifetime_ms(),
            0,
            "no re-authentication configured"
        );
        let mut auth = plain_authenticator(0);
        assert_eq!(
            auth.authenticate(b"\0alice\0guess", 0, lookup),
            SaslStep::Failed(SaslFailure::Malformed(
                "Invalid username or password".into()
            ))
        );
    }

    #[test]
    fn a_session_expires_and_reauthentication_keeps_the_principal() {
        let mut auth = plain_authenticator(60_000);
        let SaslStep::Authenticated(_, alice) =
            auth.authenticate(b"\0alice\0alice-secret", 0, lookup)
        else {
            panic!("not authenticated")
        };
        assert_eq!(auth.session_lifetime_ms(), 60_000);
        let now = Instant::now();
        assert_eq!(auth.admit(3, now, &alice), Admission::Serve);
        assert_eq!(
            auth.admit(3, now + Duration::from_secs(61), &alice),
            Admission::Expired
        );
        // Re-authentication: same mechanism, same principal.
        assert_eq!(auth.admit(17, now, &alice), Admission::Gate);
        auth.handshake("PLAIN").unwrap();
        assert!(matches!(
            auth.authenticate(b"\0alice\0alice-secret", 0, lookup),
            SaslStep::Authenticated(..)
        ));
        // Another principal is refused.
        let bob_lookup = |user: &str, mechanism| {
            (user == "bob")
                .then(|| credential_from_password(mechanism, "bob-secret", b"salt", 4096))
        };
        assert_eq!(auth.admit(17, now, &alice), Admission::Gate);
        auth.handshake("PLAIN").unwrap();
        let SaslStep::Failed(failure) = auth.authenticate(b"\0bob\0bob-secret", 0, bob_lookup)
        else {
            panic!("re-authenticated as someone else")
        };
        assert!(
            failure.to_string().contains("Cannot change principals"),
            "{failure}"
        );
        // Another mechanism is refused too.
        let mut auth = authenticator(
            vec![
                SaslMechanism::Plain,
                SaslMechanism::Scram(ScramMechanism::Sha256),
            ],
            60_000,
        );
        auth.handshake("PLAIN").unwrap();
        auth.authenticate(b"\0alice\0alice-secret", 0, lookup);
        auth.admit(17, now, &alice);
        assert_eq!(
            auth.handshake("SCRAM-SHA-256"),
            Err(HandshakeRefusal::IllegalState)
        );
    }

    #[test]
    fn an_oauthbearer_session_ends_with_its_token() {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let token = format!(
            "{}.{}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            URL_SAFE_NO_PAD.encode(r#"{"sub":"carol","exp":1010}"#)
        );
        let mut auth = authenticator(vec![SaslMechanism::OAuthBearer], 3_600_000);
        auth.handshake("OAUTHBEARER").unwrap();
        let message = format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}");
        let SaslStep::Authenticated(_, principal) =
            auth.authenticate(message.as_bytes(), 1_000_000, lookup)
        else {
            panic!("the token was refused")
        };
        assert_eq!(principal.to_string(), "User:carol");
        assert_eq!(
            auth.session_lifetime_ms(),
            10_000,
            "the token's remaining life"
        );
    }
}
