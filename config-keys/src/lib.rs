//! Every configuration key Oxbow knows, declared once with its default, Kafka type,
//! allowed values and documentation: the broker's loader and `--help`, DescribeConfigs
//! (types, documentation, synonyms), the operator's validation of Cluster and Topic specs,
//! and docs/configuration.md's table (generated; a test fails when it is stale) all read
//! this catalog, so a key added here is known everywhere.

mod broker;
mod readme;
mod topic;

pub use broker::BROKER_KEYS;
pub use readme::{README_BEGIN, README_END, markdown_table};
pub use topic::TOPIC_KEYS;

/// A value's type, as Kafka declares it (DescribeConfigs reports it, KIP-569).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Boolean,
    String,
    Int,
    Short,
    Long,
    Double,
    List,
    Class,
    Password,
}

impl Kind {
    /// Kafka's `ConfigType` code in DescribeConfigs responses.
    pub fn kafka_code(self) -> i8 {
        match self {
            Kind::Boolean => 1,
            Kind::String => 2,
            Kind::Int => 3,
            Kind::Short => 4,
            Kind::Long => 5,
            Kind::Double => 6,
            Kind::List => 7,
            Kind::Class => 8,
            Kind::Password => 9,
        }
    }

    /// Kafka's name of the type, as its documentation prints it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Boolean => "boolean",
            Kind::String => "string",
            Kind::Int => "int",
            Kind::Short => "short",
            Kind::Long => "long",
            Kind::Double => "double",
            Kind::List => "list",
            Kind::Class => "class",
            Kind::Password => "password",
        }
    }
}

/// `cleanup.policy` values (empty: neither, every record kept — Kafka 4.2+, KIP-1161).
pub const CLEANUP_POLICIES: &[&str] =
    &["delete", "compact", "delete,compact", "compact,delete", ""];
/// `message.timestamp.type` values.
pub const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];
/// `compression.type` values.
pub const COMPRESSION_TYPES: &[&str] =
    &["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"];

/// One broker configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerKey {
    pub name: &'static str,
    /// The built-in default, as the loader reads it (empty: unset).
    pub default: &'static str,
    pub kind: Kind,
    /// The values allowed, when only some are (empty: any value of the kind).
    pub choices: &'static [&'static str],
    /// What it does, in Markdown (docs/configuration.md's table); [`BrokerKey::plain_doc`] for
    /// terminals.
    pub doc: &'static str,
    /// How the default reads in documentation when the value alone says too little.
    pub shown_default: Option<&'static str>,
    /// Set only at run time (IncrementalAlterConfigs, stored in the metadata log), never in
    /// the start-up configuration.
    pub dynamic_only: bool,
    /// The integers allowed, when fewer than the kind's (see [`BrokerKey::integer_range`]).
    pub range: Option<(i64, i64)>,
}

impl BrokerKey {
    const fn new(name: &'static str, default: &'static str, kind: Kind, doc: &'static str) -> Self {
        Self {
            name,
            default,
            kind,
            choices: &[],
            doc,
            shown_default: None,
            dynamic_only: false,
            range: None,
        }
    }

    const fn range(mut self, min: i64, max: i64) -> Self {
        self.range = Some((min, max));
        self
    }

    /// The integers an integer key takes: its range, else its kind's bounds.
    pub fn integer_range(&self) -> (i64, i64) {
        self.range.unwrap_or(match self.kind {
            Kind::Short => (i64::from(i16::MIN), i64::from(i16::MAX)),
            Kind::Int => (i64::from(i32::MIN), i64::from(i32::MAX)),
            _ => (i64::MIN, i64::MAX),
        })
    }

    const fn dynamic_only(mut self) -> Self {
        self.dynamic_only = true;
        self
    }

    const fn choices(mut self, choices: &'static [&'static str]) -> Self {
        self.choices = choices;
        self
    }

    const fn shown(mut self, default: &'static str) -> Self {
        self.shown_default = Some(default);
        self
    }

    /// The documentation without Markdown (for `--help` and DescribeConfigs).
    pub fn plain_doc(&self) -> String {
        self.doc.replace('`', "")
    }
}

/// One topic configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicKey {
    pub name: &'static str,
    /// The broker key that gives its default (Kafka's synonym: `segment.bytes` falls back to
    /// `log.segment.bytes`); `None` for a topic-only key.
    pub broker_synonym: Option<&'static str>,
    kind: Option<Kind>,
    choices: &'static [&'static str],
    doc: Option<&'static str>,
}

impl TopicKey {
    const fn falls_back_to(name: &'static str, broker_key: &'static str) -> Self {
        Self {
            name,
            broker_synonym: Some(broker_key),
            kind: None,
            choices: &[],
            doc: None,
        }
    }

    const fn topic_only(name: &'static str, kind: Kind, doc: &'static str) -> Self {
        Self {
            name,
            broker_synonym: None,
            kind: Some(kind),
            choices: &[],
            doc: Some(doc),
        }
    }

    fn synonym(&self) -> Option<&'static BrokerKey> {
        self.broker_synonym.and_then(broker_key)
    }

    /// The type (a key with a broker synonym has the synonym's).
    pub fn kind(&self) -> Kind {
        self.kind
            .or_else(|| self.synonym().map(|k| k.kind))
            .unwrap_or(Kind::String)
    }

    /// The values allowed (empty: any value of the kind).
    pub fn choices(&self) -> &'static [&'static str] {
        match self.synonym() {
            Some(synonym) if self.choices.is_empty() => synonym.choices,
            _ => self.choices,
        }
    }

    /// What it does, in Markdown.
    pub fn doc(&self) -> &'static str {
        self.doc
            .or_else(|| self.synonym().map(|k| k.doc))
            .unwrap_or_default()
    }
}

/// The broker keys a start-up configuration may set.
pub fn static_broker_keys() -> impl Iterator<Item = &'static BrokerKey> {
    BROKER_KEYS.iter().filter(|k| !k.dynamic_only)
}

/// The broker key `name` (static or dynamic only).
pub fn broker_key(name: &str) -> Option<&'static BrokerKey> {
    BROKER_KEYS.iter().find(|k| k.name == name)
}

/// The topic key `name`.
pub fn topic_key(name: &str) -> Option<&'static TopicKey> {
    TOPIC_KEYS.iter().find(|k| k.name == name)
}

/// The broker key `topic_key` falls back to.
pub fn broker_synonym(topic_key_name: &str) -> Option<&'static str> {
    topic_key(topic_key_name).and_then(|k| k.broker_synonym)
}

#[cfg(test)]
mod tests;
