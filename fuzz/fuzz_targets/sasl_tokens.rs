//! SASL tokens as a connection's authenticator receives them (SaslAuthenticate bytes or raw
//! frames): the first byte picks the mechanism (SCRAM-SHA-256/512, PLAIN, OAUTHBEARER with
//! unsecured tokens or against a key set), the rest is split at 0xFF into up to three
//! messages. Any panic, abort or runaway allocation is a bug; every outcome must be an
//! answer, a challenge or a refusal.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use oxbow_broker::ScramMechanism;
use oxbow_broker::{
    JwksSettings, JwksValidator, SaslAuthenticator, SaslListener, SaslMechanism, TokenValidator,
    credential_from_password,
};

const MECHANISMS: [&str; 4] = ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN", "OAUTHBEARER"];

/// A key set with one EC P-256 key (the point of RFC 7515's appendix A.3 example).
const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"k1","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

fn listener(jwks: bool) -> Arc<SaslListener> {
    let mechanisms = MECHANISMS
        .iter()
        .filter_map(|name| SaslMechanism::from_name(name))
        .collect();
    let tokens = if jwks {
        let path =
            std::env::temp_dir().join(format!("oxbow-fuzz-jwks-{}.json", std::process::id()));
        std::fs::write(&path, JWKS).expect("write the key set");
        TokenValidator::Jwks(
            JwksValidator::load(JwksSettings {
                path,
                expected_audience: vec!["kafka".into()],
                expected_issuer: None,
                sub_claim_name: "sub".into(),
                clock_skew_seconds: 30,
            })
            .expect("load the key set"),
        )
    } else {
        TokenValidator::Unsecured
    };
    Arc::new(SaslListener {
        mechanisms,
        tokens: Arc::new(tokens),
    })
}

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static LISTENERS: [Arc<SaslListener>; 2] = [listener(false), listener(true)];
    }
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let listener = LISTENERS.with(|l| Arc::clone(&l[usize::from(pick >> 7)]));
    let mut authenticator = SaslAuthenticator::new(listener, 60_000);
    if authenticator
        .handshake(MECHANISMS[usize::from(pick & 3)])
        .is_err()
    {
        return;
    }
    for message in rest.split(|b| *b == 0xff).take(3) {
        authenticator.authenticate(
            message,
            1_700_000_000_000,
            |user, mechanism: ScramMechanism| {
                (user == "alice")
                    .then(|| credential_from_password(mechanism, "secret", b"salt", 4096))
            },
        );
    }
});
