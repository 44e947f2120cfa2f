//! `oxbow-loadgen`: the load generator of Oxbow's benchmark suite, on librdkafka (the `rdkafka`
//! crate), so Oxbow and Apache Kafka are driven by the same real client.
//!
//! ```text
//!   args ──► produce ─┐
//!        ├─► consume ─┼─► Report ──► human table (stdout) + one JSON line (last line of stdout)
//!        └─► latency ─┘
//!              │ producer thread: fixed rate, send time in the payload
//!              └ consumer thread: end-to-end latency = receive time - send time
//! ```
//!
//! Modules: [`args`] (command line), [`client`] (librdkafka configs, topic creation),
//! [`produce`], [`consume`], [`latency`] (the three modes), [`delivery`] (ack timing),
//! [`payload`] (message contents, and files of them for Kafka's perf tool), [`histogram`]
//! (latency percentiles), [`report`] (table and JSON).

mod args;
mod client;
mod consume;
mod delivery;
mod histogram;
mod latency;
mod payload;
mod produce;
mod report;

use anyhow::Result;
use clap::Parser;

use crate::args::{Args, Mode};

fn main() -> Result<()> {
    let args = Args::parse();
    if args.create_topic || matches!(args.mode, Mode::Create) {
        client::ensure_topic(&args)?;
    }
    let report = match &args.mode {
        Mode::Create => return Ok(()),
        Mode::PayloadFile(file) => return payload::write_payload_file(file),
        Mode::Produce(produce) => produce::run(&args, produce)?,
        Mode::Consume(consume) => consume::run(&args, consume)?,
        Mode::Latency(latency) => latency::run(&args, latency)?,
    };
    report.print()?;
    if report.errors > 0 {
        anyhow::bail!("{} message(s) failed", report.errors);
    }
    Ok(())
}
