//! SASL/PLAIN (RFC 4616): `[authzid] NUL username NUL password`, with Kafka's messages.
//! The password is checked against the user's SCRAM credential in the metadata log (the
//! SCRAM-SHA-512 one, else SCRAM-SHA-256), so PLAIN users are managed with `kafka-configs`
//! like SCRAM users and no broker holds a password. Use it over TLS (`SASL_SSL`): the
//! password crosses the wire as it is.

use super::scram::{ScramCredential, ScramMechanism, password_matches};

/// The user `message` authenticates, or Kafka's reason for refusing it.
pub fn authenticate(
    message: &[u8],
    lookup: impl Fn(&str, ScramMechanism) -> Option<ScramCredential>,
) -> Result<String, String> {
    let text = std::str::from_utf8(message)
        .map_err(|_| "Invalid SASL/PLAIN response: not UTF-8".to_string())?;
    let tokens: Vec<&str> = text.split('\0').collect();
    let [authzid, username, password] = tokens.as_slice() else {
        return Err(format!(
            "Invalid SASL/PLAIN response: expected 3 tokens, got {}",
            tokens.len()
        ));
    };
    if username.is_empty() {
        return Err("Authentication failed: username not specified".into());
    }
    if password.is_empty() {
        return Err("Authentication failed: password not specified".into());
    }
    if !authzid.is_empty() && authzid != username {
        return Err(
            "Authentication failed: Client requested an authorization id that is different from username"
                .into(),
        );
    }
    let matched = [ScramMechanism::Sha512, ScramMechanism::Sha256]
        .into_iter()
        .find_map(|mechanism| lookup(username, mechanism).map(|c| (mechanism, c)))
        .is_some_and(|(mechanism, credential)| password_matches(mechanism, password, &credential));
    if matched {
        Ok(username.to_string())
    } else {
        Err("Authentication failed: Invalid username or password".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::scram::credential_from_password;

    fn lookup(user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        (user == "alice" && mechanism == ScramMechanism::Sha256)
            .then(|| credential_from_password(mechanism, "alice-secret", b"salt", 4096))
    }

    #[test]
    fn the_password_is_checked_against_the_scram_credential() {
        assert_eq!(
            authenticate(b"\0alice\0alice-secret", lookup),
            Ok("alice".into())
        );
        assert_eq!(
            authenticate(b"alice\0alice\0alice-secret", lookup),
            Ok("alice".into())
        );
        let refused = |message: &[u8]| authenticate(message, lookup).unwrap_err();
        assert_eq!(
            refused(b"\0alice\0guess"),
            "Authentication failed: Invalid username or password"
        );
        assert_eq!(
            refused(b"\0mallory\0alice-secret"),
            "Authentication failed: Invalid username or password"
        );
        assert!(refused(b"bob\0alice\0alice-secret").contains("authorization id"));
        assert!(refused(b"alice-secret").contains("expected 3 tokens, got 1"));
        assert!(refused(b"\0\0x").contains("username not specified"));
        assert!(refused(b"\0alice\0").contains("password not specified"));
        assert!(refused(&[0xff, 0, 0]).contains("UTF-8"));
    }
}
