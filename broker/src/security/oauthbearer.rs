//! SASL/OAUTHBEARER (RFC 7628) with Kafka's default server validator for it, the unsecured
//! one (`OAuthBearerUnsecuredValidatorCallbackHandler`): the client's token is a JWT with
//! `"alg":"none"`, trusted as it is; its `sub` claim is the principal and its `exp` claim
//! must lie ahead. Kafka documents it for development and tests; so does Oxbow (a broker
//! offering OAUTHBEARER logs a warning at start-up).
//!
//! ```text
//!   client:  n,,\x01auth=Bearer <header>.<claims>.\x01\x01
//!   server:  (empty)                      the connection is User:<sub>
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;

/// A validated token: who it names and until when (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub principal: String,
    pub expires_ms: u64,
}

/// How tokens are validated: Kafka's default unsecured validator, or signatures checked
/// against a key set (`sasl.oauthbearer.jwks.endpoint.url`).
#[derive(Debug)]
pub enum TokenValidator {
    Unsecured,
    Jwks(super::jwks::JwksValidator),
}

impl TokenValidator {
    fn validate(&self, token: &str, now_ms: u64) -> Result<Token, String> {
        match self {
            Self::Unsecured => validate(token, now_ms),
            Self::Jwks(keys) => keys.verify(token, now_ms),
        }
    }
}

/// The token of a client's initial response, validated at `now_ms`, or why it is refused.
pub fn authenticate(
    message: &[u8],
    now_ms: u64,
    validator: &TokenValidator,
) -> Result<Token, String> {
    let text = std::str::from_utf8(message)
        .map_err(|_| "Invalid OAUTHBEARER initial response: not UTF-8".to_string())?;
    let mut parts = text.split('\u{1}');
    let gs2 = parts.next().unwrap_or_default();
    let authzid = parse_gs2(gs2)?;
    let mut token = None;
    for part in parts.filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("Invalid OAUTHBEARER key-value pair `{part}`"))?;
        if key == "auth" {
            token = Some(
                value
                    .strip_prefix("Bearer ")
                    .ok_or("Invalid OAUTHBEARER auth value: expected `Bearer <token>`")?,
            );
        }
    }
    let token = validator.validate(
        token.ok_or("Invalid OAUTHBEARER initial response: no token")?,
        now_ms,
    )?;
    if authzid.is_some_and(|a| a != token.principal) {
        return Err(format!(
            "Authentication failed: the authorization id differs from the token's principal {}",
            token.principal
        ));
    }
    Ok(token)
}

/// `n,,` or `n,a=<authzid>,`: no channel binding.
fn parse_gs2(gs2: &str) -> Result<Option<&str>, String> {
    let rest = gs2
        .strip_prefix("n,")
        .ok_or("Invalid OAUTHBEARER GS2 header: channel binding is not supported")?;
    let authzid = rest
        .strip_suffix(',')
        .ok_or("Invalid OAUTHBEARER GS2 header")?;
    if authzid.is_empty() {
        return Ok(None);
    }
    authzid
        .strip_prefix("a=")
        .map(Some)
        .ok_or_else(|| "Invalid OAUTHBEARER GS2 header".to_string())
}

fn claims_of(part: &str, what: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let bytes = BASE64URL
        .decode(part.trim_end_matches('='))
        .map_err(|_| format!("invalid_token: the {what} is not base64url"))?;
    match serde_json::from_slice(&bytes) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        _ => Err(format!("invalid_token: the {what} is not a JSON object")),
    }
}

fn validate(token: &str, now_ms: u64) -> Result<Token, String> {
    let parts: Vec<&str> = token.split('.').collect();
    let [header, claims, signature] = parts.as_slice() else {
        return Err("invalid_token: not a JWT (three dot-separated parts)".into());
    };
    let header = claims_of(header, "header")?;
    if header.get("alg").and_then(|a| a.as_str()) != Some("none") || !signature.is_empty() {
        return Err("invalid_token: only unsecured tokens (\"alg\":\"none\") are accepted".into());
    }
    let claims = claims_of(claims, "claims")?;
    let principal = claims
        .get("sub")
        .and_then(|s| s.as_str())
        .filter(|s| !s.trim().is_empty())
        .ok_or("invalid_token: no `sub` claim")?
        .to_string();
    let seconds = |name: &str| claims.get(name).and_then(serde_json::Value::as_f64);
    let expires = seconds("exp").ok_or("invalid_token: no `exp` claim")?;
    let expires_ms = (expires * 1000.0).max(0.0) as u64;
    if expires_ms <= now_ms {
        return Err(format!("invalid_token: the token expired at {expires}"));
    }
    if seconds("iat").is_some_and(|issued| (issued * 1000.0) as u64 > now_ms) {
        return Err("invalid_token: the token was issued in the future".into());
    }
    Ok(Token {
        principal,
        expires_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: &str) -> String {
        format!(
            "{}.{}.",
            BASE64URL.encode(r#"{"alg":"none"}"#),
            BASE64URL.encode(claims)
        )
    }

    fn message(token: &str) -> Vec<u8> {
        format!("n,,\u{1}auth=Bearer {token}\u{1}\u{1}").into_bytes()
    }

    #[test]
    fn an_unexpired_unsecured_token_names_its_subject() {
        let good = token(r#"{"sub":"alice","exp":2000,"iat":1000}"#);
        assert_eq!(
            authenticate(&message(&good), 1_500_000, &TokenValidator::Unsecured),
            Ok(Token {
                principal: "alice".into(),
                expires_ms: 2_000_000
            })
        );
        let with_authzid = format!("n,a=alice,\u{1}auth=Bearer {good}\u{1}\u{1}");
        assert!(
            authenticate(
                with_authzid.as_bytes(),
                1_500_000,
                &TokenValidator::Unsecured
            )
            .is_ok()
        );
    }

    #[test]
    fn expired_signed_and_malformed_tokens_are_refused() {
        let now = 1_500_000;
        let refused = |m: &[u8]| authenticate(m, now, &TokenValidator::Unsecured).unwrap_err();
        assert!(refused(&message(&token(r#"{"sub":"alice","exp":1000}"#))).contains("expired"));
        assert!(refused(&message(&token(r#"{"exp":2000}"#))).contains("sub"));
        assert!(refused(&message(&token(r#"{"sub":"alice"}"#))).contains("exp"));
        let signed = format!(
            "{}.{}.c2ln",
            BASE64URL.encode(r#"{"alg":"RS256"}"#),
            BASE64URL.encode(r#"{"sub":"a","exp":2000}"#)
        );
        assert!(refused(&message(&signed)).contains("unsecured"));
        assert!(refused(&message("garbage")).contains("JWT"));
        assert!(refused(b"y,,\x01auth=Bearer x\x01\x01").contains("channel binding"));
        assert!(refused(b"n,,\x01\x01").contains("no token"));
        let other = format!(
            "n,a=bob,\u{1}auth=Bearer {}\u{1}\u{1}",
            token(r#"{"sub":"alice","exp":2000}"#)
        );
        assert!(refused(other.as_bytes()).contains("authorization id"));
        assert!(refused(&[0xff]).contains("UTF-8"));
    }
}
