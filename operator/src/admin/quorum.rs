//! The metadata quorum's voters (KIP-853): who votes, and adding or removing one, as
//! `kafka-metadata-quorum describe / add-controller / remove-controller` do.

use std::collections::BTreeSet;

use kafka_protocol::messages::add_raft_voter_request::{AddRaftVoterRequest, Listener};
use kafka_protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use kafka_protocol::messages::describe_quorum_request::{
    DescribeQuorumRequest, PartitionData, TopicData,
};
use kafka_protocol::messages::remove_raft_voter_request::RemoveRaftVoterRequest;
use kafka_protocol::protocol::StrBytes;

use super::{AdminClient, AdminError, RESOURCE_BROKER, check, topic_name};

/// How long the leader may wait for a new voter to catch up (within the request timeout).
const CATCH_UP_MS: i32 = 20_000;

/// The quorum as its leader describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumState {
    pub voters: BTreeSet<i32>,
    pub leader: Option<i32>,
}

impl AdminClient {
    /// The quorum's voters and leader (DescribeQuorum).
    pub async fn quorum(&mut self) -> Result<QuorumState, AdminError> {
        let request = DescribeQuorumRequest::default().with_topics(vec![
            TopicData::default()
                .with_topic_name(topic_name("__cluster_metadata"))
                .with_partitions(vec![PartitionData::default().with_partition_index(0)]),
        ]);
        let response = self.call(&request).await?;
        check(
            "DescribeQuorum",
            response.error_code,
            response.error_message.as_ref(),
        )?;
        let mut state = QuorumState::default();
        for partition in response
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .filter(|p| p.partition_index == 0)
        {
            check(
                "DescribeQuorum",
                partition.error_code,
                partition.error_message.as_ref(),
            )?;
            state.leader = Some(partition.leader_id.0).filter(|id| *id >= 0);
            state.voters = partition
                .current_voters
                .iter()
                .map(|v| v.replica_id.0)
                .collect();
        }
        Ok(state)
    }

    /// Makes `broker` a voter; its controller listener is at `host:port`. The leader waits
    /// for it to catch up first.
    pub async fn add_voter(
        &mut self,
        broker: i32,
        host: &str,
        port: u16,
    ) -> Result<(), AdminError> {
        let request = AddRaftVoterRequest::default()
            .with_cluster_id(None)
            .with_voter_id(broker)
            .with_timeout_ms(CATCH_UP_MS)
            .with_listeners(vec![
                Listener::default()
                    .with_name(StrBytes::from_static_str("CONTROLLER"))
                    .with_host(StrBytes::from_string(host.to_string()))
                    .with_port(port),
            ]);
        let response = self.call(&request).await?;
        check(
            "AddRaftVoter",
            response.error_code,
            response.error_message.as_ref(),
        )
    }

    /// Stops `broker` voting (it goes on as an observer).
    pub async fn remove_voter(&mut self, broker: i32) -> Result<(), AdminError> {
        let request = RemoveRaftVoterRequest::default()
            .with_cluster_id(None)
            .with_voter_id(broker);
        let response = self.call(&request).await?;
        check(
            "RemoveRaftVoter",
            response.error_code,
            response.error_message.as_ref(),
        )
    }

    /// `process.roles` as `broker` runs with it (asked of that broker itself).
    pub async fn process_roles(&mut self, broker: i32) -> Result<String, AdminError> {
        let request = DescribeConfigsRequest::default().with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(RESOURCE_BROKER)
                .with_resource_name(StrBytes::from_string(broker.to_string()))
                .with_configuration_keys(Some(vec![StrBytes::from_static_str("process.roles")])),
        ]);
        let response = self.call(&request).await?;
        let mut roles = String::new();
        for result in &response.results {
            check(
                "DescribeConfigs",
                result.error_code,
                result.error_message.as_ref(),
            )?;
            if let Some(value) = result
                .configs
                .iter()
                .find(|c| c.name.as_str() == "process.roles")
                .and_then(|c| c.value.as_ref())
            {
                roles = value.to_string();
            }
        }
        Ok(roles)
    }
}
