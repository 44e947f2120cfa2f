//! Who a connection is and what it proves: TLS on `SSL` listeners (rustls, PEM stores
//! re-read when they change), the principal a client certificate maps to, and SASL/SCRAM
//! on `SASL_*` listeners with credentials from the metadata log (PLAIN checked against
//! them), and OAUTHBEARER tokens, unsecured or signed by a key of a JWKS file ([`jwks`]).
//!
//! ```text
//!   server::run ─► tls::ServerTls::accept ─► (TLS stream, Principal) ─► connection
//!                  principal::subject_name ─► PrincipalMapper (ssl.principal.mapping.rules)
//! ```
//!
//! What a principal may do: access control entries ([`acl`], kept in the metadata log) and
//! Kafka's StandardAuthorizer rules over them ([`authorizer`]), asked by every API handler
//! through its request context.

pub use crate::model::acl;
mod authorizer;
mod jwks;
mod oauthbearer;
mod plain;
mod principal;
mod sasl;
mod scram;
mod scram_client;
mod tls;

pub use authorizer::{Authorizer, STANDARD_AUTHORIZER};
pub use jwks::{JwksSettings, JwksValidator};
pub use oauthbearer::TokenValidator;
pub use principal::Principal;
pub use sasl::{
    Admission, HandshakeRefusal, SaslAuthenticator, SaslFailure, SaslListener, SaslMechanism,
    SaslStep,
};
pub use scram::{credential_from_password, credential_from_salted_password};
pub use scram_client::ScramClient;
pub use tls::{HandshakeError, ServerTls};
