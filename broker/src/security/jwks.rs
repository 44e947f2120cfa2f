//! Signed OAUTHBEARER tokens checked against a JSON Web Key Set, as Kafka's
//! `OAuthBearerValidatorCallbackHandler` checks them with `sasl.oauthbearer.jwks.endpoint.url`:
//! the JWS signature against the key its header names (`kid`, else every key of its type),
//! `exp` required, `iat`/`nbf` not ahead, each with `sasl.oauthbearer.clock.skew.seconds`
//! of tolerance, the expected audience and issuer when set, and the principal in
//! `sasl.oauthbearer.sub.claim.name`.
//!
//! The key set is a file (`file:` URL or a path: an identity provider's keys mounted from a
//! Secret). It is read at start-up — a broker with an unreadable set refuses to start — and
//! again whenever its modification time changes, so rotated keys apply without a restart; a
//! set that cannot be read later keeps the keys last read, with an error logged.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as BASE64URL;
use parking_lot::Mutex;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::{Map, Value};

/// The JWS algorithms a key of the set can verify (never `none` or an HMAC).
const ACCEPTED: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// The `sasl.oauthbearer.*` settings of the signed-token validator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksSettings {
    pub path: PathBuf,
    /// Tokens must name one of these in `aud` (none: not checked).
    pub expected_audience: Vec<String>,
    pub expected_issuer: Option<String>,
    pub sub_claim_name: String,
    pub clock_skew_seconds: u64,
}

impl JwksSettings {
    /// `sasl.oauthbearer.jwks.endpoint.url`: a `file:` URL or a plain path. An HTTP(S)
    /// endpoint is refused: Oxbow does not fetch keys over the network (mount them instead).
    pub fn path_of(url: &str) -> Result<PathBuf, String> {
        if url.starts_with("http://") || url.starts_with("https://") {
            return Err(
                "HTTP(S) key endpoints are not fetched: give a file: URL or a path to the JWKS file (e.g. a mounted Secret)"
                    .into(),
            );
        }
        let path = url
            .strip_prefix("file://")
            .or_else(|| url.strip_prefix("file:"));
        Ok(PathBuf::from(path.unwrap_or(url)))
    }
}

/// One verification key of the set.
#[derive(Debug, Clone)]
struct Key {
    kid: Option<String>,
    /// The key's own `alg`, when it pins one.
    alg: Option<String>,
    material: Material,
}

#[derive(Debug, Clone)]
enum Material {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (0x04 ‖ x ‖ y) on the named curve.
    Ec {
        curve: String,
        point: Vec<u8>,
    },
    Ed25519(Vec<u8>),
}

/// The key set, re-read when its file changes.
#[derive(Debug)]
pub struct JwksValidator {
    settings: JwksSettings,
    loaded: Mutex<(Option<SystemTime>, Vec<Key>)>,
}

/// A verified token: who it names and until when (ms since the epoch).
pub type Verified = super::oauthbearer::Token;

impl JwksValidator {
    /// Reads the key set now: an unreadable or empty set is an error (the broker refuses to
    /// start with it).
    pub fn load(settings: JwksSettings) -> Result<Self, String> {
        let modified = modified(&settings.path);
        let keys = read_keys(&settings.path)?;
        Ok(Self {
            settings,
            loaded: Mutex::new((modified, keys)),
        })
    }

    pub fn settings(&self) -> &JwksSettings {
        &self.settings
    }

    fn keys(&self) -> Vec<Key> {
        let mut loaded = self.loaded.lock();
        let now = modified(&self.settings.path);
        if now.is_some() && now != loaded.0 {
            match read_keys(&self.settings.path) {
                Ok(keys) => {
                    tracing::info!(path = %self.settings.path.display(), keys = keys.len(), "Re-read the OAUTHBEARER key set");
                    *loaded = (now, keys);
                }
                Err(reason) => {
                    tracing::error!(path = %self.settings.path.display(), %reason, "Cannot re-read the OAUTHBEARER key set; the keys read before stay in use");
                    loaded.0 = now;
                }
            }
        }
        loaded.1.clone()
    }

    /// Verifies a compact JWS at `now_ms`.
    pub fn verify(&self, token: &str, now_ms: u64) -> Result<Verified, String> {
        let parts: Vec<&str> = token.split('.').collect();
        let [header_part, claims_part, signature_part] = parts.as_slice() else {
            return Err("invalid_token: not a JWS (three dot-separated parts)".into());
        };
        let header = json_object(header_part, "header")?;
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or("invalid_token: the header names no `alg`")?;
        if !ACCEPTED.contains(&alg) {
            return Err(format!(
                "invalid_token: the signing algorithm `{alg}` is not accepted"
            ));
        }
        let kid = header.get("kid").and_then(Value::as_str);
        let signature = BASE64URL
            .decode(signature_part)
            .map_err(|_| "invalid_token: the signature is not base64url".to_string())?;
        let signed = format!("{header_part}.{claims_part}");
        let keys = self.keys();
        let candidates: Vec<&Key> = keys
            .iter()
            .filter(|k| kid.is_none() || k.kid.as_deref() == kid)
            .filter(|k| k.alg.as_deref().is_none_or(|own| own == alg))
            .collect();
        if candidates.is_empty() {
            return Err(match kid {
                Some(kid) => format!("invalid_token: no key with kid `{kid}` in the key set"),
                None => format!("invalid_token: no key in the key set for `{alg}`"),
            });
        }
        let verified = candidates
            .iter()
            .any(|key| verifies(key, alg, signed.as_bytes(), &signature).unwrap_or(false));
        if !verified {
            if candidates
                .iter()
                .all(|key| verifies(key, alg, b"", b"").is_err())
            {
                return Err(format!(
                    "invalid_token: the signing algorithm `{alg}` is not accepted"
                ));
            }
            return Err("invalid_token: the signature does not verify".into());
        }
        self.check_claims(&json_object(claims_part, "claims")?, now_ms)
    }

    fn check_claims(&self, claims: &Map<String, Value>, now_ms: u64) -> Result<Verified, String> {
        let settings = &self.settings;
        let skew_ms = settings.clock_skew_seconds.saturating_mul(1000);
        let seconds = |name: &str| claims.get(name).and_then(Value::as_f64);
        let expires = seconds("exp").ok_or("invalid_token: no `exp` claim")?;
        let expires_ms = (expires * 1000.0).max(0.0) as u64;
        if expires_ms.saturating_add(skew_ms) <= now_ms {
            return Err(format!("invalid_token: the token expired at {expires}"));
        }
        for (claim, what) in [("iat", "issued"), ("nbf", "valid from")] {
            if let Some(at) = seconds(claim)
                && (at * 1000.0) as u64 > now_ms.saturating_add(skew_ms)
            {
                return Err(format!(
                    "invalid_token: the token is {what} in the future ({at})"
                ));
            }
        }
        if let Some(issuer) = &settings.expected_issuer
            && claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str())
        {
            return Err(format!("invalid_token: the issuer is not `{issuer}`"));
        }
        if !settings.expected_audience.is_empty() {
            let audience: Vec<&str> = match claims.get("aud") {
                Some(Value::String(one)) => vec![one.as_str()],
                Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !audience
                .iter()
                .any(|a| settings.expected_audience.iter().any(|e| e == a))
            {
                return Err(format!(
                    "invalid_token: the audience is none of {}",
                    settings.expected_audience.join(", ")
                ));
            }
        }
        let principal = claims
            .get(&settings.sub_claim_name)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| format!("invalid_token: no `{}` claim", settings.sub_claim_name))?;
        Ok(Verified {
            principal: principal.to_string(),
            expires_ms,
        })
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn json_object(part: &str, what: &str) -> Result<Map<String, Value>, String> {
    let bytes = BASE64URL
        .decode(part.trim_end_matches('='))
        .map_err(|_| format!("invalid_token: the {what} is not base64url"))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(format!("invalid_token: the {what} is not a JSON object")),
    }
}

/// Whether `signature` over `message` verifies with `key` under `alg`; `Err` when the
/// algorithm does not fit the key (or is not accepted at all: `none`, HMAC).
fn verifies(key: &Key, alg: &str, message: &[u8], signature: &[u8]) -> Result<bool, ()> {
    match &key.material {
        Material::Rsa { n, e } => {
            let params: &signature::RsaParameters = match alg {
                "RS256" => &signature::RSA_PKCS1_2048_8192_SHA256,
                "RS384" => &signature::RSA_PKCS1_2048_8192_SHA384,
                "RS512" => &signature::RSA_PKCS1_2048_8192_SHA512,
                "PS256" => &signature::RSA_PSS_2048_8192_SHA256,
                "PS384" => &signature::RSA_PSS_2048_8192_SHA384,
                "PS512" => &signature::RSA_PSS_2048_8192_SHA512,
                _ => return Err(()),
            };
            Ok(RsaPublicKeyComponents { n, e }
                .verify(params, message, signature)
                .is_ok())
        }
        Material::Ec { curve, point } => {
            let algorithm: &dyn signature::VerificationAlgorithm = match (alg, curve.as_str()) {
                ("ES256", "P-256") => &signature::ECDSA_P256_SHA256_FIXED,
                ("ES384", "P-384") => &signature::ECDSA_P384_SHA384_FIXED,
                _ => return Err(()),
            };
            Ok(UnparsedPublicKey::new(algorithm, point)
                .verify(message, signature)
                .is_ok())
        }
        Material::Ed25519(public) => {
            if alg != "EdDSA" {
                return Err(());
            }
            Ok(UnparsedPublicKey::new(&signature::ED25519, public)
                .verify(message, signature)
                .is_ok())
        }
    }
}

fn read_keys(path: &Path) -> Result<Vec<Key>, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("cannot read the JWKS file {}: {e}", path.display()))?;
    let keys = parse_keys(&text).map_err(|reason| format!("{}: {reason}", path.display()))?;
    if keys.is_empty() {
        return Err(format!(
            "{}: the key set holds no signature key Oxbow can use (RSA, EC P-256/P-384, Ed25519)",
            path.display()
        ));
    }
    Ok(keys)
}

/// The signature keys of a JWKS document (RFC 7517); keys of other types or uses are
/// skipped, as a JWKS consumer does.
fn parse_keys(text: &[u8]) -> Result<Vec<Key>, String> {
    let document: Value =
        serde_json::from_slice(text).map_err(|e| format!("not a JSON document: {e}"))?;
    let entries = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("not a JSON Web Key Set (no `keys` array)")?;
    let mut keys = Vec::new();
    for entry in entries {
        let field = |name: &str| entry.get(name).and_then(Value::as_str);
        if field("use").is_some_and(|u| u != "sig") {
            continue;
        }
        let bytes = |name: &str| -> Result<Vec<u8>, String> {
            let value = field(name).ok_or_else(|| format!("a key lacks `{name}`"))?;
            BASE64URL
                .decode(value.trim_end_matches('='))
                .map_err(|_| format!("a key's `{name}` is not base64url"))
        };
        let material = match (field("kty"), field("crv")) {
            (Some("RSA"), _) => Material::Rsa {
                n: bytes("n")?,
                e: bytes("e")?,
            },
            (Some("EC"), Some(curve @ ("P-256" | "P-384"))) => {
                let mut point = vec![0x04];
                point.extend(bytes("x")?);
                point.extend(bytes("y")?);
                Material::Ec {
                    curve: curve.to_string(),
                    point,
                }
            }
            (Some("OKP"), Some("Ed25519")) => Material::Ed25519(bytes("x")?),
            _ => continue,
        };
        keys.push(Key {
            kid: field("kid").map(str::to_string),
            alg: field("alg").map(str::to_string),
            material,
        });
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

    struct Issuer {
        pair: EcdsaKeyPair,
        dir: tempfile::TempDir,
    }

    impl Issuer {
        fn new() -> Self {
            let rng = SystemRandom::new();
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
                .expect("key generation");
            let pair =
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
                    .expect("key");
            Self {
                pair,
                dir: tempfile::tempdir().expect("tempdir"),
            }
        }

        fn jwks(&self, kid: &str) -> String {
            let point = self.pair.public_key().as_ref();
            format!(
                r#"{{"keys":[{{"kty":"RSA","use":"enc","n":"AQ","e":"AQAB"}},{{"kty":"EC","crv":"P-256","kid":"{kid}","use":"sig","x":"{}","y":"{}"}}]}}"#,
                BASE64URL.encode(&point[1..33]),
                BASE64URL.encode(&point[33..65])
            )
        }

        fn validator(&self, kid: &str, audience: &[&str]) -> JwksValidator {
            let path = self.dir.path().join("jwks.json");
            std::fs::write(&path, self.jwks(kid)).expect("write jwks");
            JwksValidator::load(JwksSettings {
                path,
                expected_audience: audience.iter().map(|a| a.to_string()).collect(),
                expected_issuer: Some("https://issuer.example".into()),
                sub_claim_name: "sub".into(),
                clock_skew_seconds: 30,
            })
            .expect("load")
        }

        fn sign(&self, kid: &str, claims: &str) -> String {
            let header = BASE64URL.encode(format!(r#"{{"alg":"ES256","kid":"{kid}"}}"#));
            let body = BASE64URL.encode(claims);
            let signed = format!("{header}.{body}");
            let signature = self
                .pair
                .sign(&SystemRandom::new(), signed.as_bytes())
                .expect("sign");
            format!("{signed}.{}", BASE64URL.encode(signature.as_ref()))
        }
    }

    const GOOD: &str =
        r#"{"sub":"alice","exp":2000,"iat":1000,"iss":"https://issuer.example","aud":["kafka"]}"#;

    #[test]
    fn a_token_signed_by_a_key_of_the_set_names_its_subject() {
        let issuer = Issuer::new();
        let validator = issuer.validator("k1", &["kafka"]);
        let verified = validator
            .verify(&issuer.sign("k1", GOOD), 1_500_000)
            .unwrap();
        assert_eq!(verified.principal, "alice");
        assert_eq!(verified.expires_ms, 2_000_000);
    }

    #[test]
    fn forged_unsecured_and_misaddressed_tokens_are_refused() {
        let issuer = Issuer::new();
        let validator = issuer.validator("k1", &["kafka"]);
        let now = 1_500_000;
        let refused = |token: &str| validator.verify(token, now).unwrap_err();
        // Another key signs: the set's key does not verify it.
        let stranger = Issuer::new();
        assert!(refused(&stranger.sign("k1", GOOD)).contains("does not verify"));
        // The claims changed after signing.
        let token = issuer.sign("k1", GOOD);
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        parts[1] = BASE64URL.encode(GOOD.replace("alice", "admin"));
        assert!(refused(&parts.join(".")).contains("does not verify"));
        // alg:none is not a signature.
        let unsecured = format!(
            "{}.{}.",
            BASE64URL.encode(r#"{"alg":"none","kid":"k1"}"#),
            BASE64URL.encode(GOOD)
        );
        assert!(refused(&unsecured).contains("not accepted"));
        assert!(refused(&issuer.sign("k2", GOOD)).contains("kid `k2`"));
        let expired = GOOD.replace("2000", "1000");
        assert!(refused(&issuer.sign("k1", &expired)).contains("expired"));
        let elsewhere = GOOD.replace("kafka", "other");
        assert!(refused(&issuer.sign("k1", &elsewhere)).contains("audience"));
        let issuer_elsewhere = GOOD.replace("issuer.example", "evil.example");
        assert!(refused(&issuer.sign("k1", &issuer_elsewhere)).contains("issuer"));
        let future = GOOD.replace("\"iat\":1000", "\"iat\":1600");
        assert!(refused(&issuer.sign("k1", &future)).contains("future"));
        assert!(refused("a.b").contains("three"));
        assert!(refused("!!.??.**").contains("base64url"));
    }

    #[test]
    fn the_clock_skew_is_tolerated() {
        let issuer = Issuer::new();
        let validator = issuer.validator("k1", &[]);
        // Expired 20 s ago, 30 s of skew allowed.
        assert!(
            validator
                .verify(&issuer.sign("k1", GOOD), 2_020_000)
                .is_ok()
        );
        assert!(
            validator
                .verify(&issuer.sign("k1", GOOD), 2_031_000)
                .is_err()
        );
    }

    #[test]
    fn a_rotated_key_set_applies_without_a_restart() {
        let issuer = Issuer::new();
        let validator = issuer.validator("k1", &[]);
        let next = Issuer::new();
        let token = next.sign("k2", GOOD);
        assert!(validator.verify(&token, 1_500_000).is_err());
        // A later modification time: the file is re-read at the next verification.
        std::fs::write(&validator.settings.path, next.jwks("k2")).unwrap();
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        let file = std::fs::File::options()
            .write(true)
            .open(&validator.settings.path)
            .unwrap();
        file.set_modified(later).unwrap();
        assert_eq!(
            validator.verify(&token, 1_500_000).unwrap().principal,
            "alice"
        );
        // A broken file later keeps the keys read before.
        std::fs::write(&validator.settings.path, "not json").unwrap();
        file.set_modified(later + std::time::Duration::from_secs(5))
            .unwrap();
        assert!(validator.verify(&token, 1_500_000).is_ok());
    }

    #[test]
    fn key_sets_without_usable_keys_and_network_urls_are_refused() {
        assert!(parse_keys(b"{}").is_err());
        assert!(parse_keys(b"[1]").is_err());
        assert!(
            parse_keys(br#"{"keys":[{"kty":"oct","k":"AA"}]}"#)
                .unwrap()
                .is_empty()
        );
        assert!(parse_keys(br#"{"keys":[{"kty":"RSA","n":"***","e":"AQAB"}]}"#).is_err());
        assert!(JwksSettings::path_of("https://idp.example/jwks").is_err());
        assert_eq!(
            JwksSettings::path_of("file:///etc/keys/jwks.json").unwrap(),
            PathBuf::from("/etc/keys/jwks.json")
        );
        assert_eq!(
            JwksSettings::path_of("/etc/keys/jwks.json").unwrap(),
            PathBuf::from("/etc/keys/jwks.json")
        );
    }
}
