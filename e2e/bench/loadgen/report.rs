//! The result of one run: a human table, then one JSON line (always the last line of stdout,
//! so scripts take `tail -n1`). MB is 1,048,576 bytes, as in Kafka's perf tools.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::histogram::LatencySummary;

const MB: f64 = 1024.0 * 1024.0;

#[derive(Debug, Serialize)]
pub struct Report {
    pub mode: &'static str,
    pub label: String,
    pub topic: String,
    pub messages: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub msgs_per_s: f64,
    pub mb_per_s: f64,
    /// Produce: send to acknowledgement. Latency mode: send to acknowledgement too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_latency_ms: Option<LatencySummary>,
    /// Latency mode: send to receipt by the consumer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e2e_latency_ms: Option<LatencySummary>,
    pub errors: u64,
    pub params: BTreeMap<&'static str, String>,
}

impl Report {
    pub fn new(mode: &'static str, label: &str, topic: &str) -> Self {
        Report {
            mode,
            label: label.to_owned(),
            topic: topic.to_owned(),
            messages: 0,
            bytes: 0,
            seconds: 0.0,
            msgs_per_s: 0.0,
            mb_per_s: 0.0,
            ack_latency_ms: None,
            e2e_latency_ms: None,
            errors: 0,
            params: BTreeMap::new(),
        }
    }

    /// Sets the counts and derives the rates.
    pub fn throughput(&mut self, messages: u64, bytes: u64, elapsed: Duration) {
        self.messages = messages;
        self.bytes = bytes;
        self.seconds = elapsed.as_secs_f64();
        if self.seconds > 0.0 {
            self.msgs_per_s = messages as f64 / self.seconds;
            self.mb_per_s = bytes as f64 / MB / self.seconds;
        }
    }

    pub fn param(&mut self, key: &'static str, value: impl ToString) {
        self.params.insert(key, value.to_string());
    }

    pub fn print(&self) -> Result<()> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{:<22} {}", "mode", self.mode)?;
        for (key, value) in &self.params {
            writeln!(out, "{key:<22} {value}")?;
        }
        writeln!(out, "{:<22} {}", "messages", self.messages)?;
        writeln!(out, "{:<22} {:.2}", "seconds", self.seconds)?;
        writeln!(out, "{:<22} {:.0}", "msgs/s", self.msgs_per_s)?;
        writeln!(out, "{:<22} {:.2}", "MB/s", self.mb_per_s)?;
        for (name, summary) in [
            ("ack latency ms", &self.ack_latency_ms),
            ("e2e latency ms", &self.e2e_latency_ms),
        ] {
            if let Some(s) = summary {
                writeln!(
                    out,
                    "{name:<22} p50 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}",
                    s.p50, s.p99, s.p999, s.max
                )?;
            }
        }
        if self.errors > 0 {
            writeln!(out, "{:<22} {}", "errors", self.errors)?;
        }
        writeln!(out, "{}", serde_json::to_string(self)?)?;
        Ok(())
    }
}
