//! Who a connection is and what it proves: TLS on `SSL` listeners (rustls, PEM stores
//! re-read when they change) and the principal a client certificate maps to.
//!
//! ```text
//!   server::run ─► tls::ServerTls::accept ─► (TLS stream, Principal) ─► connection
//!                  principal::subject_name ─► PrincipalMapper (ssl.principal.mapping.rules)
//! ```
//!
//! SASL, ACLs and quotas (issue 33's later steps) build on the `Principal` a connection
//! carries from here.

mod principal;
mod tls;

pub use principal::{Principal, PrincipalMapper};
pub use tls::{HandshakeError, ServerTls, TlsError};
