//! The client side of SCRAM (RFC 5802, RFC 7677), for a broker authenticating to another's
//! SASL inter-broker listener as Kafka's brokers do:
//!
//! ```text
//!   client-first  n,,n=<user>,r=<nonce>
//!   server-first  r=<nonce+server's>,s=<salt>,i=<iterations>
//!   client-final  c=biws,r=<nonce+server's>,p=<proof>
//!   server-final  v=<server signature>        checked: the server knows the credential too
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ring::{hmac, rand::SecureRandom};

use crate::model::ScramMechanism;

/// One exchange.
#[derive(Debug)]
pub struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    client_first_bare: String,
    /// After the server's first message: the AuthMessage and the server key, to check the
    /// server's signature.
    expected_signature: Option<Vec<u8>>,
}

impl ScramClient {
    pub fn new(mechanism: ScramMechanism, user: &str, password: &str) -> Self {
        let mut nonce = [0u8; 24];
        // Without randomness the nonce is still unique per connection in practice; a
        // failing system RNG is not a reason to stop replicating.
        let _ = ring::rand::SystemRandom::new().fill(&mut nonce);
        Self::with_nonce(mechanism, user, password, &BASE64.encode(nonce))
    }

    pub(crate) fn with_nonce(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        nonce: &str,
    ) -> Self {
        let user = user.replace('=', "=3D").replace(',', "=2C");
        Self {
            mechanism,
            password: password.to_string(),
            client_first_bare: format!("n={user},r={nonce}"),
            expected_signature: None,
        }
    }

    pub fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// The client-final message for the server's first message.
    pub fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        self.client_final_echoing(server_first, "")
    }

    /// The client-final message with `prefix` before the nonce it echoes, as librdkafka
    /// before 2.2 writes it (its own nonce again): for the broker's tests of that quirk.
    pub(crate) fn client_final_echoing(
        &mut self,
        server_first: &[u8],
        prefix: &str,
    ) -> Result<Vec<u8>, String> {
        let server_first = std::str::from_utf8(server_first)
            .map_err(|_| "the server-first message is not UTF-8".to_string())?;
        let attribute = |name: &str| {
            server_first
                .split(',')
                .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
                .ok_or_else(|| format!("the server-first message has no `{name}`"))
        };
        let nonce = attribute("r")?;
        let own_nonce = self
            .client_first_bare
            .split_once(",r=")
            .map_or("", |(_, n)| n);
        if !nonce.starts_with(own_nonce) || nonce.len() <= own_nonce.len() {
            return Err("the server's nonce does not extend the client's".into());
        }
        let salt = BASE64
            .decode(attribute("s")?)
            .map_err(|_| "the salt is not base64".to_string())?;
        let iterations: u32 = attribute("i")?
            .parse()
            .ok()
            .filter(|i| *i > 0)
            .ok_or("the iteration count is not a positive number")?;
        // SaltedPassword, and from it the credential the broker holds (StoredKey, ServerKey).
        let salted =
            super::scram::salted_password(self.mechanism, &self.password, &salt, iterations);
        let credential = super::scram::credential_from_salted_password(
            self.mechanism,
            &salted,
            &salt,
            iterations,
        );
        let hmac_algorithm = super::scram::hmac_algorithm(self.mechanism);
        let client_key = hmac::sign(&hmac::Key::new(hmac_algorithm, &salted), b"Client Key");
        let without_proof = format!("c=biws,r={prefix}{nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac::sign(
            &hmac::Key::new(hmac_algorithm, &credential.stored_key),
            auth_message.as_bytes(),
        );
        let proof: Vec<u8> = client_key
            .as_ref()
            .iter()
            .zip(signature.as_ref())
            .map(|(a, b)| a ^ b)
            .collect();
        self.expected_signature = Some(
            hmac::sign(
                &hmac::Key::new(hmac_algorithm, &credential.server_key),
                auth_message.as_bytes(),
            )
            .as_ref()
            .to_vec(),
        );
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the server's signature: a server that does not hold the credential cannot
    /// make it.
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(server_final)
            .map_err(|_| "the server-final message is not UTF-8".to_string())?;
        if let Some(error) = text.strip_prefix("e=") {
            return Err(format!("the server refused: {error}"));
        }
        let signature = text
            .strip_prefix("v=")
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or("the server-final message has no signature")?;
        match &self.expected_signature {
            Some(expected) if *expected == signature => Ok(()),
            _ => Err("the server's signature is wrong".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::credential_from_password;
    use crate::security::scram::ScramServer;

    #[test]
    fn a_client_and_the_broker_s_server_agree_and_a_wrong_password_is_refused() {
        for mechanism in ScramMechanism::ALL {
            let credential = credential_from_password(mechanism, "s3cret", b"salty", 4096);
            for (password, accepted) in [("s3cret", true), ("guess", false)] {
                let mut client = ScramClient::new(mechanism, "al,ice", password);
                let mut server = ScramServer::new(mechanism);
                let server_first = server
                    .client_first(&client.client_first(), |user| {
                        (user == "al,ice").then(|| credential.clone())
                    })
                    .unwrap();
                let client_final = client.client_final(&server_first).unwrap();
                match server.client_final(&client_final) {
                    Ok((server_final, user)) => {
                        assert!(accepted);
                        assert_eq!(user, "al,ice");
                        client.verify_server_final(&server_final).unwrap();
                    }
                    Err(_) => assert!(!accepted),
                }
            }
        }
    }

    #[test]
    fn a_server_that_does_not_know_the_credential_is_caught() {
        let mut client = ScramClient::new(ScramMechanism::Sha256, "alice", "pw");
        let first = String::from_utf8(client.client_first()).unwrap();
        let nonce = first.split_once(",r=").unwrap().1;
        let server_first = format!("r={nonce}xyz,s=c2FsdA==,i=4096");
        client.client_final(server_first.as_bytes()).unwrap();
        assert!(client.verify_server_final(b"v=AAAA").is_err());
        assert!(client.verify_server_final(b"e=invalid-proof").is_err());
        let mut other = ScramClient::new(ScramMechanism::Sha256, "alice", "pw");
        assert!(other.client_final(b"r=stolen,s=c2FsdA==,i=4096").is_err());
    }
}
