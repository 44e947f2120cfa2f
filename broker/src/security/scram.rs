//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them: the
//! credential a broker keeps (never the password) and the server's side of one exchange.
//!
//! ```text
//!   client-first  n,,n=alice,r=<client nonce>
//!   server-first  r=<client nonce><server nonce>,s=<salt>,i=<iterations>
//!   client-final  c=biws,r=<both nonces>,p=<proof>      proof checked against StoredKey
//!   server-final  v=<server signature>                   the client checks the broker
//! ```
//!
//! The credential is Kafka's: salt, iterations, StoredKey = H(HMAC(SaltedPassword,
//! "Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"). Kafka's admin client
//! sends the salted password (AlterUserScramCredentials), so the password itself never
//! reaches a broker.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ring::{digest, hmac, pbkdf2};

pub use crate::metadata::records::ScramCredential;
pub use crate::model::ScramMechanism;

/// The hash functions of a mechanism.
struct Hashes {
    hmac: hmac::Algorithm,
    digest: &'static digest::Algorithm,
}

fn hashes(mechanism: ScramMechanism) -> Hashes {
    match mechanism {
        ScramMechanism::Sha256 => Hashes {
            hmac: hmac::HMAC_SHA256,
            digest: &digest::SHA256,
        },
        ScramMechanism::Sha512 => Hashes {
            hmac: hmac::HMAC_SHA512,
            digest: &digest::SHA512,
        },
    }
}

/// The mechanism's HMAC (the client side computes its proof with it).
pub(super) fn hmac_algorithm(mechanism: ScramMechanism) -> hmac::Algorithm {
    hashes(mechanism).hmac
}

/// The credential from the salted password Kafka's admin client sends.
pub fn credential_from_salted_password(
    mechanism: ScramMechanism,
    salted_password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> ScramCredential {
    let hashes = hashes(mechanism);
    let key = hmac::Key::new(hashes.hmac, salted_password);
    let client_key = hmac::sign(&key, b"Client Key");
    let stored_key = digest::digest(hashes.digest, client_key.as_ref());
    let server_key = hmac::sign(&key, b"Server Key");
    ScramCredential {
        salt: salt.to_vec(),
        stored_key: stored_key.as_ref().to_vec(),
        server_key: server_key.as_ref().to_vec(),
        iterations,
    }
}

/// The credential from a password: the clients' side of it (`oxbow dev --secure` creating
/// its first user, tests). A broker never holds a password: Kafka's admin client sends the
/// salted one.
pub fn credential_from_password(
    mechanism: ScramMechanism,
    password: &str,
    salt: &[u8],
    iterations: u32,
) -> ScramCredential {
    let salted = salted_password(mechanism, password, salt, iterations);
    credential_from_salted_password(mechanism, &salted, salt, iterations)
}

/// Whether `password` is the one `credential` was made from (SASL/PLAIN checks passwords
/// against the SCRAM credentials): the StoredKey it gives, compared in constant time.
pub fn password_matches(
    mechanism: ScramMechanism,
    password: &str,
    credential: &ScramCredential,
) -> bool {
    let salted = salted_password(mechanism, password, &credential.salt, credential.iterations);
    let computed = credential_from_salted_password(
        mechanism,
        &salted,
        &credential.salt,
        credential.iterations,
    );
    constant_time_eq(&computed.stored_key, &credential.stored_key)
}

/// Hi(password, salt, iterations): PBKDF2 with the mechanism's HMAC.
pub fn salted_password(
    mechanism: ScramMechanism,
    password: &str,
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    let hashes = hashes(mechanism);
    let mut out = vec![0u8; hashes.digest.output_len()];
    let rounds = std::num::NonZeroU32::new(iterations.max(1)).unwrap_or(std::num::NonZeroU32::MIN);
    let algorithm = match mechanism {
        ScramMechanism::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
        ScramMechanism::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
    };
    pbkdf2::derive(algorithm, rounds, salt, password.as_bytes(), &mut out);
    out
}

/// Why an exchange failed; every variant is SASL_AUTHENTICATION_FAILED to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("malformed SCRAM message: {0}")]
    Malformed(&'static str),
    #[error("channel binding is not supported")]
    ChannelBinding,
    #[error("invalid credentials")]
    InvalidCredentials,
    #[error("the SCRAM exchange is already over")]
    Finished,
}

#[derive(Debug)]
enum State {
    Start,
    SentFirst {
        username: String,
        credential: ScramCredential,
        nonce: String,
        client_first_bare: String,
        server_first: String,
    },
    Done,
}

/// The broker's side of one SCRAM exchange.
#[derive(Debug)]
pub struct ScramServer {
    mechanism: ScramMechanism,
    server_nonce: String,
    state: State,
}

impl ScramServer {
    pub fn new(mechanism: ScramMechanism) -> Self {
        use rand::Rng;
        let server_nonce: String = rand::rng()
            .sample_iter(rand::distr::Alphanumeric)
            .take(32)
            .map(char::from)
            .collect();
        Self::with_nonce(mechanism, server_nonce)
    }

    fn with_nonce(mechanism: ScramMechanism, server_nonce: String) -> Self {
        Self {
            mechanism,
            server_nonce,
            state: State::Start,
        }
    }

    /// No message taken yet: the next is the client-first message.
    pub fn awaiting_first(&self) -> bool {
        matches!(self.state, State::Start)
    }

    /// The client's first message; `lookup` finds the user's credential. Returns the
    /// server-first message.
    pub fn client_first(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<Vec<u8>, ScramError> {
        if !matches!(self.state, State::Start) {
            return Err(ScramError::Finished);
        }
        self.state = State::Done;
        let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        // gs2-header: "n" (no channel binding), "y" (client could, thinks we cannot), or
        // "p=..." (asks for it); then an optional authzid, then the bare message.
        let (flag, rest) = text
            .split_once(',')
            .ok_or(ScramError::Malformed("no GS2 header"))?;
        match flag {
            "n" | "y" => {}
            _ if flag.starts_with("p=") => return Err(ScramError::ChannelBinding),
            _ => return Err(ScramError::Malformed("bad GS2 channel-binding flag")),
        }
        let (_authzid, bare) = rest
            .split_once(',')
            .ok_or(ScramError::Malformed("no GS2 authzid field"))?;
        let mut username = None;
        let mut client_nonce = None;
        for attribute in bare.split(',') {
            if let Some(name) = attribute.strip_prefix("n=") {
                username = Some(decode_saslname(name)?);
            } else if let Some(nonce) = attribute.strip_prefix("r=") {
                client_nonce = Some(nonce);
            } else if attribute.starts_with("m=") {
                return Err(ScramError::Malformed("mandatory extension not supported"));
            }
        }
        let username = username.ok_or(ScramError::Malformed("no user name"))?;
        let client_nonce = client_nonce
            .filter(|n| !n.is_empty())
            .ok_or(ScramError::Malformed("no client nonce"))?;
        let credential = lookup(&username).ok_or(ScramError::InvalidCredentials)?;
        let nonce = format!("{client_nonce}{}", self.server_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&credential.salt),
            credential.iterations
        );
        self.state = State::SentFirst {
            username,
            credential,
            nonce,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
        };
        Ok(server_first.into_bytes())
    }

    /// The client's final message: checks its proof; returns the server-final message and
    /// the authenticated user name.
    pub fn client_final(&mut self, message: &[u8]) -> Result<(Vec<u8>, String), ScramError> {
        let State::SentFirst {
            username,
            credential,
            nonce,
            client_first_bare,
            server_first,
        } = std::mem::replace(&mut self.state, State::Done)
        else {
            return Err(ScramError::Finished);
        };
        let text = std::str::from_utf8(message).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let mut channel_binding = None;
        let mut final_nonce = None;
        for attribute in without_proof.split(',') {
            if let Some(value) = attribute.strip_prefix("c=") {
                channel_binding = Some(value);
            } else if let Some(value) = attribute.strip_prefix("r=") {
                final_nonce = Some(value);
            }
        }
        // "biws" is base64("n,,"); "eSws" base64("y,,"): no channel binding either way.
        if !matches!(channel_binding, Some("biws" | "eSws")) {
            return Err(ScramError::ChannelBinding);
        }
        // Kafka accepts a final nonce that ends with the server's (`endsWith`): librdkafka
        // before 2.2 sends its own nonce in front of the full one again.
        if !final_nonce.is_some_and(|n| n.ends_with(nonce.as_str())) {
            return Err(ScramError::InvalidCredentials);
        }
        let proof = BASE64
            .decode(proof)
            .map_err(|_| ScramError::Malformed("proof is not base64"))?;
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let hashes = hashes(self.mechanism);
        let stored = hmac::Key::new(hashes.hmac, &credential.stored_key);
        let client_signature = hmac::sign(&stored, auth_message.as_bytes());
        if proof.len() != client_signature.as_ref().len() {
            return Err(ScramError::InvalidCredentials);
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(client_signature.as_ref())
            .map(|(a, b)| a ^ b)
            .collect();
        let computed = digest::digest(hashes.digest, &client_key);
        if !constant_time_eq(computed.as_ref(), &credential.stored_key) {
            return Err(ScramError::InvalidCredentials);
        }
        let server = hmac::Key::new(hashes.hmac, &credential.server_key);
        let signature = hmac::sign(&server, auth_message.as_bytes());
        Ok((
            format!("v={}", BASE64.encode(signature.as_ref())).into_bytes(),
            username,
        ))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A saslname: `=2C` is `,` and `=3D` is `=`; any other `=` is malformed.
fn decode_saslname(name: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let escape = rest
            .get(at..at + 3)
            .ok_or(ScramError::Malformed("bad escape in user name"))?;
        out.push(match escape {
            "=2C" => ',',
            "=3D" => '=',
            _ => return Err(ScramError::Malformed("bad escape in user name")),
        });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    if out.is_empty() {
        return Err(ScramError::Malformed("empty user name"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677's example exchange, byte for byte.
    #[test]
    fn the_rfc_7677_exchange() {
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let credential = credential_from_password(ScramMechanism::Sha256, "pencil", &salt, 4096);
        let mut server = ScramServer::with_nonce(
            ScramMechanism::Sha256,
            "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".to_string(),
        );
        let first = server
            .client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", |user| {
                (user == "user").then(|| credential.clone())
            })
            .unwrap();
        assert_eq!(
            String::from_utf8(first).unwrap(),
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let (last, user) = server
            .client_final(
                b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            )
            .unwrap();
        assert_eq!(
            String::from_utf8(last).unwrap(),
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
        assert_eq!(user, "user");
        assert_eq!(server.client_final(b"c=biws"), Err(ScramError::Finished));
    }

    #[test]
    fn a_wrong_proof_an_unknown_user_and_channel_binding_are_refused() {
        let salt = b"salt".to_vec();
        let credential = credential_from_password(ScramMechanism::Sha512, "right", &salt, 4096);
        let lookup = |user: &str| (user == "alice").then(|| credential.clone());
        let mut server = ScramServer::with_nonce(ScramMechanism::Sha512, "S".into());
        server.client_first(b"n,,n=alice,r=C", lookup).unwrap();
        let wrong = BASE64.encode([0u8; 64]);
        assert_eq!(
            server.client_final(format!("c=biws,r=CS,p={wrong}").as_bytes()),
            Err(ScramError::InvalidCredentials)
        );
        let mut unknown = ScramServer::with_nonce(ScramMechanism::Sha512, "S".into());
        assert_eq!(
            unknown.client_first(b"n,,n=mallory,r=C", lookup),
            Err(ScramError::InvalidCredentials)
        );
        let mut binding = ScramServer::with_nonce(ScramMechanism::Sha512, "S".into());
        assert_eq!(
            binding.client_first(b"p=tls-unique,,n=alice,r=C", lookup),
            Err(ScramError::ChannelBinding)
        );
        for garbage in [
            &b""[..],
            b"n",
            b"n,,",
            b"n,,r=C",
            b"\xff\xfe",
            b"n,,n=a=ZZ,r=C",
        ] {
            let mut server = ScramServer::with_nonce(ScramMechanism::Sha512, "S".into());
            assert!(server.client_first(garbage, lookup).is_err(), "{garbage:?}");
        }
    }

    #[test]
    fn user_names_with_commas_and_equals_signs_are_unescaped() {
        assert_eq!(decode_saslname("a=2Cb=3Dc").unwrap(), "a,b=c");
        assert!(decode_saslname("a=").is_err());
        assert!(decode_saslname("").is_err());
    }

    #[test]
    fn a_salted_password_gives_the_same_credential_as_the_password() {
        let salt = b"0123456789abcdef";
        let salted = salted_password(ScramMechanism::Sha512, "secret", salt, 4096);
        assert_eq!(
            credential_from_salted_password(ScramMechanism::Sha512, &salted, salt, 4096),
            credential_from_password(ScramMechanism::Sha512, "secret", salt, 4096)
        );
    }
}
