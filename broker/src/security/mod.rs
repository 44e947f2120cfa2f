//! Who a connection is and what it proves: TLS on `SSL` listeners (rustls, PEM stores
//! re-read when they change), the principal a client certificate maps to, and SASL/SCRAM
//! on `SASL_*` listeners with credentials from the metadata log.
//!
//! ```text
//!   server::run ─► tls::ServerTls::accept ─► (TLS stream, Principal) ─► connection
//!                  principal::subject_name ─► PrincipalMapper (ssl.principal.mapping.rules)
//! ```
//!
//! ACLs and quotas (issue 33's later steps) build on the `Principal` a connection carries
//! from here.

mod principal;
mod sasl;
mod scram;
mod tls;

pub use principal::{Principal, PrincipalMapper};
pub use sasl::{HandshakeRefusal, SaslAuthenticator, SaslFailure, SaslStep};
pub use scram::credential_from_salted_password;
pub use tls::{HandshakeError, ServerTls, TlsError};
