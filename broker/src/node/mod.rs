//! A node: one `oxbow` process — a broker, a controller voter, or both — assembled from
//! its configuration ([`Broker::build`]) and served until a signal ([`Broker::serve`]).
//!
//! - `assemble`: the parts built in dependency order, the serve loop and the ordered stop;
//! - `listeners`: the sockets, bound first, and each listener's TLS and SASL;
//! - `tasks`: background duties (ISR proposals, log maintenance, group timers, the
//!   inter-broker credential) and controlled shutdown.

mod assemble;
mod listeners;
mod tasks;

pub use assemble::{Broker, Signals};

use crate::config::BrokerConfig;

/// Runs a node with `config` until SIGTERM or SIGINT; an error says why it could not
/// start or had to stop.
pub async fn run(config: BrokerConfig) -> anyhow::Result<()> {
    let mut signals = Signals::install()?;
    Broker::build(config).await?.serve(&mut signals).await
}
