//! Kafka's `TopicPartition`: a partition of a topic, and its directory name.

/// A partition of a topic: Kafka's `TopicPartition`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }

    /// The partition's directory name, `<topic>-<partition>`, as Kafka names it.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Parses `<topic>-<partition>`; topics may contain '-', the partition is after the last.
    pub fn from_dir_name(name: &str) -> Option<Self> {
        let (topic, partition) = name.rsplit_once('-')?;
        let partition: i32 = partition.parse().ok()?;
        (!topic.is_empty() && partition >= 0).then(|| Self::new(topic, partition))
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}
