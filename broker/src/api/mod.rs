//! The Kafka APIs: one module per API, each registered in [`routes`] — the single
//! table that also answers ApiVersions. Adding an API costs one file and one line.
//!
//! A handler decodes its request with `kafka-protocol`, does the work against the
//! [`BrokerState`], and encodes its response; framing, ordering and back-pressure belong
//! to the server. Kafka error codes are chosen in exactly one place, [`errors`].

pub mod errors;

mod access;
mod acls;
mod admin;
mod configs;
#[cfg(test)]
mod unserved_keys_doc;

mod add_offsets_to_txn;
mod add_partitions_to_txn;
mod alter_configs;
mod alter_partition_reassignments;
mod alter_replica_log_dirs;
mod alter_user_scram_credentials;
pub mod api_versions;
mod client_quotas;
mod consumer_group_describe;
mod consumer_group_heartbeat;
mod create_partitions;
mod create_topics;
mod delete_groups;
mod delete_records;
mod delete_topics;
mod describe_cluster;
mod describe_configs;
mod describe_groups;
mod describe_log_dirs;
mod describe_producers;
mod describe_quorum;
mod describe_topic_partitions;
mod describe_transactions;
mod describe_user_scram_credentials;
mod elect_leaders;
mod end_txn;
mod fetch;
mod fetch_session;
mod find_coordinator;
mod heartbeat;
mod incremental_alter_configs;
mod init_producer_id;
mod join_group;
mod leader_hints;
mod leave_group;
mod list_config_resources;
mod list_groups;
mod list_offsets;
mod list_partition_reassignments;
mod lookup;
pub(crate) mod metadata;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offset_for_leader_epoch;
mod produce;
mod produce_legacy;
mod raft_voters;
mod sasl;
mod sync_group;
mod txn_offset_commit;
mod txn_verification;
mod unregister_broker;
mod update_features;
mod write_txn_markers;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{Decodable, Encodable, VersionRange};

pub use access::Access;

use crate::state::BrokerState;
use crate::storage::FileRegion;

/// A response ready for the wire, minus the frame's size prefix.
#[derive(Debug)]
pub enum ApiResponse {
    /// The whole response, encoded.
    Encoded(BytesMut),
    /// An encoded Fetch response whose record fields hold placeholders; the server
    /// replaces each placeholder with the file regions (zero-copy or copied).
    WithRecords {
        encoded: BytesMut,
        records: Vec<RecordsPlaceholder>,
    },
    /// No response at all (Produce with acks=0).
    None,
}

/// Where a Fetch response's record bytes go: the placeholder bytes written by the
/// encoder, the regions to put there, and whether the length prefix is a compact varint.
#[derive(Debug)]
pub struct RecordsPlaceholder {
    pub marker: [u8; 16],
    pub regions: Vec<FileRegion>,
    pub compact: bool,
}

/// A request that cannot be answered: the connection is closed with a log line.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot decode {api:?} v{version} request: {reason}")]
    Decode {
        api: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("cannot encode {api:?} v{version} response: {reason}")]
    Encode {
        api: ApiKey,
        version: i16,
        reason: String,
    },
}

/// What a handler gets: the broker, the request header and the negotiated version.
#[derive(Debug)]
pub struct RequestContext<'a> {
    pub broker: &'a Arc<BrokerState>,
    pub header: &'a RequestHeader,
    pub api: ApiKey,
    pub version: i16,
    /// The name of the listener the request came in on: brokers' addresses in answers are
    /// those of that listener (Kafka's `advertised.listeners` per listener).
    pub listener: &'a str,
    /// Who sent it (TLS client certificate, SASL, or `User:ANONYMOUS`), and from where:
    /// what ACLs are checked against.
    pub principal: &'a crate::security::Principal,
    pub client_address: std::net::IpAddr,
    /// Milliseconds the connection must not be read from after this answer: the client
    /// went over a quota (KIP-219 muting; the answer carries it as `throttle_time_ms`).
    pub throttle_ms: std::sync::atomic::AtomicU64,
    /// Microseconds the handler spent parked waiting for data (a Fetch's long poll):
    /// left out of the request latency metric, which would otherwise show `max_wait_ms`.
    pub parked_us: std::sync::atomic::AtomicU64,
}

impl<'a> RequestContext<'a> {
    /// The authorizer's view for this request (one ACL snapshot).
    pub fn access(&'a self) -> Access<'a> {
        Access::new(self)
    }

    /// Records `value` against the connection's quota on `key` (producer or consumer bytes,
    /// request time) and returns the throttle it earned in ms, for the answer's
    /// `throttle_time_ms`; the connection is muted for the longest throttle of the request.
    pub fn quota_throttle(&self, key: crate::quota::QuotaKey, value: f64) -> i32 {
        if !self.broker.controller.client_quotas_set() {
            return 0;
        }
        let image = self.broker.controller.image();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let client_id = self.header.client_id.as_deref().unwrap_or("");
        let throttle = self.broker.quotas.record(
            &image.client_quotas,
            key,
            &self.principal.name,
            client_id,
            value,
            now_ms,
        );
        if throttle > 0 {
            let metrics = &self.broker.metrics;
            metrics
                .quota_throttle_ms
                .with_label_values(&[key.label()])
                .inc_by(throttle);
            metrics
                .quota_throttled
                .with_label_values(&[key.label()])
                .inc();
            self.throttle_ms
                .fetch_max(throttle, std::sync::atomic::Ordering::Relaxed);
        }
        i32::try_from(throttle).unwrap_or(i32::MAX)
    }

    /// The throttle the handler asked for so far (see [`Self::quota_throttle`]).
    pub fn throttled_ms(&self) -> u64 {
        self.throttle_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Notes time the handler spent waiting for data, not working.
    pub fn add_parked(&self, waited: std::time::Duration) {
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.parked_us
            .fetch_add(micros, std::sync::atomic::Ordering::Relaxed);
    }

    /// Time parked so far (see [`Self::add_parked`]).
    pub fn parked(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.parked_us.load(std::sync::atomic::Ordering::Relaxed))
    }
    pub fn decode<T: Decodable>(&self, mut body: Bytes) -> Result<T, ApiError> {
        T::decode(&mut body, self.version).map_err(|error| ApiError::Decode {
            api: self.api,
            version: self.version,
            reason: error.to_string(),
        })
    }

    pub fn encode<T: Encodable>(&self, response: &T) -> Result<BytesMut, ApiError> {
        let mut bytes = BytesMut::new();
        response
            .encode(&mut bytes, self.version)
            .map_err(|error| ApiError::Encode {
                api: self.api,
                version: self.version,
                reason: error.to_string(),
            })?;
        Ok(bytes)
    }

    pub fn respond<T: Encodable>(&self, response: &T) -> Result<ApiResponse, ApiError> {
        self.encode(response).map(ApiResponse::Encoded)
    }
}

pub type HandlerFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ApiResponse, ApiError>> + Send + 'a>>;

/// One Kafka API.
pub trait Api: Send + Sync + std::fmt::Debug {
    fn key(&self) -> ApiKey;

    /// Versions served: from the KIP-896 floor (what the protocol crate decodes) up.
    fn versions(&self) -> VersionRange {
        self.key().valid_versions()
    }

    /// Versions listed in ApiVersions and routed to the handler: the served ones, unless
    /// Kafka lists more (Produce from v0, whose v0–2 requests are refused one by one).
    fn advertised_versions(&self) -> VersionRange {
        self.versions()
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a>;
}

/// `key`'s versions from the lowest Kafka lists up to `max`: the newest one served, when the
/// protocol crate decodes newer ones Oxbow does not serve yet.
fn up_to(key: ApiKey, max: i16) -> VersionRange {
    VersionRange {
        min: key.valid_versions().min,
        max: key.valid_versions().max.min(max),
    }
}

/// The route table: every API the broker serves.
#[derive(Debug)]
pub struct Routes {
    apis: BTreeMap<i16, Box<dyn Api>>,
}

impl Routes {
    pub fn get(&self, key: i16) -> Option<&dyn Api> {
        self.apis.get(&key).map(|api| api.as_ref())
    }

    /// (key, min, max) of every API, for ApiVersions.
    pub fn version_ranges(&self) -> Vec<(i16, i16, i16)> {
        self.apis
            .iter()
            .map(|(key, api)| {
                let versions = api.advertised_versions();
                (*key, versions.min, versions.max)
            })
            .collect()
    }

    pub fn register(&mut self, api: Box<dyn Api>) {
        self.apis.insert(api.key() as i16, api);
    }
}

/// Every API the broker serves (`fetch_session_slots`: the incremental fetch sessions
/// Fetch keeps). Other layers (groups) add theirs with [`Routes::register`].
pub fn routes(fetch_session_slots: usize) -> Routes {
    let apis: Vec<Box<dyn Api>> = vec![
        Box::new(api_versions::ApiVersionsApi),
        Box::new(metadata::MetadataApi),
        Box::new(produce::ProduceApi),
        Box::new(fetch::FetchApi::new(fetch_session_slots)),
        Box::new(list_offsets::ListOffsetsApi),
        Box::new(offset_for_leader_epoch::OffsetForLeaderEpochApi),
        Box::new(init_producer_id::InitProducerIdApi),
        Box::new(create_topics::CreateTopicsApi),
        Box::new(delete_topics::DeleteTopicsApi),
        Box::new(create_partitions::CreatePartitionsApi),
        Box::new(describe_configs::DescribeConfigsApi),
        Box::new(alter_configs::AlterConfigsApi),
        Box::new(incremental_alter_configs::IncrementalAlterConfigsApi),
        Box::new(describe_cluster::DescribeClusterApi),
        Box::new(describe_topic_partitions::DescribeTopicPartitionsApi),
        Box::new(list_config_resources::ListConfigResourcesApi),
        Box::new(delete_records::DeleteRecordsApi),
        Box::new(describe_log_dirs::DescribeLogDirsApi),
        Box::new(alter_replica_log_dirs::AlterReplicaLogDirsApi),
        Box::new(describe_quorum::DescribeQuorumApi),
        Box::new(raft_voters::AddRaftVoterApi),
        Box::new(raft_voters::RemoveRaftVoterApi),
        Box::new(elect_leaders::ElectLeadersApi),
        Box::new(update_features::UpdateFeaturesApi),
        Box::new(alter_partition_reassignments::AlterPartitionReassignmentsApi),
        Box::new(list_partition_reassignments::ListPartitionReassignmentsApi),
        Box::new(unregister_broker::UnregisterBrokerApi),
        Box::new(write_txn_markers::WriteTxnMarkersApi),
        Box::new(add_partitions_to_txn::AddPartitionsToTxnApi),
        Box::new(add_offsets_to_txn::AddOffsetsToTxnApi),
        Box::new(end_txn::EndTxnApi),
        Box::new(txn_offset_commit::TxnOffsetCommitApi),
        Box::new(describe_transactions::DescribeTransactionsApi),
        Box::new(describe_transactions::ListTransactionsApi),
        Box::new(describe_producers::DescribeProducersApi),
        Box::new(find_coordinator::FindCoordinatorApi),
        Box::new(join_group::JoinGroupApi),
        Box::new(sync_group::SyncGroupApi),
        Box::new(heartbeat::HeartbeatApi),
        Box::new(leave_group::LeaveGroupApi),
        Box::new(offset_commit::OffsetCommitApi),
        Box::new(offset_fetch::OffsetFetchApi),
        Box::new(list_groups::ListGroupsApi),
        Box::new(describe_groups::DescribeGroupsApi),
        Box::new(delete_groups::DeleteGroupsApi),
        Box::new(offset_delete::OffsetDeleteApi),
        Box::new(consumer_group_heartbeat::ConsumerGroupHeartbeatApi),
        Box::new(consumer_group_describe::ConsumerGroupDescribeApi),
        Box::new(sasl::SaslHandshakeApi),
        Box::new(sasl::SaslAuthenticateApi),
        Box::new(alter_user_scram_credentials::AlterUserScramCredentialsApi),
        Box::new(describe_user_scram_credentials::DescribeUserScramCredentialsApi),
        Box::new(acls::CreateAclsApi),
        Box::new(acls::DescribeAclsApi),
        Box::new(acls::DeleteAclsApi),
        Box::new(client_quotas::DescribeClientQuotasApi),
        Box::new(client_quotas::AlterClientQuotasApi),
    ];
    let mut routes = Routes {
        apis: BTreeMap::new(),
    };
    for api in apis {
        routes.register(api);
    }
    routes
}

/// The client host reported for group members, as Kafka writes it (`/10.0.0.7`).
pub(crate) fn client_host(context: &RequestContext<'_>) -> String {
    format!("/{}", context.client_address)
}

/// The request header's client id, for group members.
pub(crate) fn client_id(context: &RequestContext<'_>) -> String {
    context
        .header
        .client_id
        .as_ref()
        .map(|c| c.to_string())
        .unwrap_or_default()
}

/// The API's name as a metric label: a closed set, computed once per key.
pub fn api_name(key: ApiKey) -> &'static str {
    static NAMES: std::sync::OnceLock<std::collections::HashMap<i16, &'static str>> =
        std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            ApiKey::iter()
                .map(|k| (k as i16, &*Box::leak(format!("{k:?}").into_boxed_str())))
                .collect()
        })
        .get(&(key as i16))
        .copied()
        .unwrap_or("Unknown")
}
