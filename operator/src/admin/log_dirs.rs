//! How many bytes each replica holds, from DescribeLogDirs (KIP-113). A broker answers for
//! its own log directories only, so the operator asks every broker.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_log_dirs_request::DescribeLogDirsRequest;
use oxbow_placement::reassignment::TopicPartition;

use super::{AdminClient, AdminError, check};

impl AdminClient {
    /// The size of every partition replica the connected broker holds (a future replica,
    /// still being moved between its directories, is left out).
    pub async fn replica_sizes(&mut self) -> Result<BTreeMap<TopicPartition, u64>, AdminError> {
        let request = DescribeLogDirsRequest::default().with_topics(None);
        let response = self.call(&request).await?;
        check("DescribeLogDirs", response.error_code, None)?;
        let mut sizes = BTreeMap::new();
        for dir in &response.results {
            check("DescribeLogDirs", dir.error_code, None)?;
            for topic in &dir.topics {
                for partition in topic.partitions.iter().filter(|p| !p.is_future_key) {
                    let partition_id = TopicPartition {
                        topic: topic.name.0.to_string(),
                        partition: partition.partition_index,
                    };
                    let size = u64::try_from(partition.partition_size).unwrap_or(0);
                    sizes.insert(partition_id, size);
                }
            }
        }
        Ok(sizes)
    }
}
