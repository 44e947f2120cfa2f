//! The controller RPC's payloads other than Raft's, as bytes: what brokers ask of the active
//! controller and what it answers, in Kafka's flexible-version conventions over
//! [`crate::metadata::wire`]. Each message is read and written at the version its api key
//! negotiated on the connection, so a newer node can add fields (behind a version, or in
//! a tagged field) without an older one misreading them; an enum's variants have codes of
//! their own, never the Rust declaration order, so reordering a type changes no bytes.
//!
//! ```text
//!   command         = code: u16, fields (per code and version), tagged fields
//!   outcome         = code: u16, fields (per code and version), tagged fields
//!   error           = code: u16, fields (per code and version), tagged fields
//!   command-result  = ok: bool, (true: outcome, index: u64 | false: error), tagged fields
//!   voter-request   = code: u16, fields (per code and version), tagged fields
//!   voter-result    = ok: bool, (false: code: u16, message, tagged fields), tagged fields
//!   quorum-status   = leader: i32, term: u64, high watermark: u64,
//!                     voters: [id: i32, option<index: u64>], observers: [id: i32, index: u64],
//!                     nodes: [id: i32, address, option<directory id>], tagged fields
//!   metadata-update = code: u16, applied index: u64,
//!                     (1: [index: u64, batch] | 2: image), tagged fields
//!   metadata-reply  = metadata-update, option<controller: i32>, voters: [id: i32, address],
//!                     tagged fields
//!   fetch-metadata  = from index: u64, max wait ms: u64, tagged fields
//!   option<T>       = present: bool, T when present
//!   topic-image     = name, id: uuid, replication factor: i16, configs, [partition state],
//!                     tagged fields
//! ```
//!
//! `batch`, `image`, endpoints, ACL bindings, quota entities and supported features are
//! laid out as in the metadata records ([`crate::metadata::record_format`]): one encoding
//! of each, whether it is in the log or on the RPC. The committed fixtures
//! (`broker/tests/fixtures/controller-rpc`) hold the bytes of every message, variant and
//! version; a change an older node could not read fails the test that reads them.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use uuid::Uuid;

use super::{CommandReply, QuorumStatus, VoterChangeError, VoterRequest};
use crate::controller::decisions::{
    CommandOutcome, ControllerCommand, ControllerError, ElectionType, PartitionOutcome,
    QuotaChange, Reassignment, ScramAlteration, TopicToCreate,
};
use crate::controller::feed::MetadataUpdate;
use crate::metadata::features::{FeatureUpdate, UpgradeType};
use crate::metadata::image::TopicImage;
use crate::metadata::record_format::{
    acl, decode_batch, decode_image, encode_image, encode_records, endpoint, listeners,
    partition_state, quota_entity, quota_key, quota_value, read_acl, read_coded, read_endpoint,
    read_listeners, read_partition_state, read_quota_entity, read_quota_key, read_quota_value,
    read_scram_credential, read_supported_features, scram_credential, supported_features,
};
use crate::metadata::wire::{Reader, WireError, WireResult, Writer};
use crate::model::acl::{AclBinding, AclFilter, Operation, PatternType, Permission, ResourceType};

/// The newest version of every message here that this release writes and reads (all of
/// them are at 0). Each message kind gets its own once one of them moves on.
pub const NEWEST_VERSION: u16 = 0;
/// Every version this release writes and reads: what a connection negotiates within.
pub const VERSIONS: RangeInclusive<u16> = 0..=NEWEST_VERSION;

/// One variant of an enum on the wire: its code, and its name in errors and fixtures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub code: u16,
    pub name: &'static str,
}

const fn v(code: u16, name: &'static str) -> Variant {
    Variant { code, name }
}

/// A version this release cannot read is refused by name, so the log says which side is
/// newer instead of misreading its fields.
fn readable(what: &str, version: u16) -> WireResult<()> {
    if !VERSIONS.contains(&version) {
        return Err(WireError::Invalid(format!(
            "{what} version {version} is not one this release reads ({}..={})",
            VERSIONS.start(),
            VERSIONS.end()
        )));
    }
    Ok(())
}

/// Writers are handed only a negotiated version, never one above what this release knows.
fn writable(version: u16) {
    debug_assert!(
        VERSIONS.contains(&version),
        "asked to write version {version}; a connection negotiates only within {VERSIONS:?}"
    );
}

fn unknown_code<T>(what: &str, code: u16) -> WireResult<T> {
    Err(WireError::Invalid(format!("unknown {what} code {code}")))
}

fn optional<T: ?Sized>(w: &mut Writer, value: Option<&T>, write: impl FnOnce(&mut Writer, &T)) {
    match value {
        Some(value) => {
            w.bool(true);
            write(w, value);
        }
        None => w.bool(false),
    }
}

fn read_optional<'a, T>(
    r: &mut Reader<'a>,
    what: &'static str,
    read: impl FnOnce(&mut Reader<'a>) -> WireResult<T>,
) -> WireResult<Option<T>> {
    r.bool(what)?.then(|| read(r)).transpose()
}

fn assignments(w: &mut Writer, assignments: &[Vec<i32>]) {
    w.array(assignments, |w, replicas| w.i32_array(replicas));
}

fn read_assignments(r: &mut Reader<'_>) -> WireResult<Vec<Vec<i32>>> {
    r.array("assignments", 1, |r| r.i32_array("assigned replicas"))
}

/// An ACL binding as a record carries it, in an array item that can grow.
fn acl_item(w: &mut Writer, binding: &AclBinding) {
    acl(w, binding);
    w.tagged(&[]);
}

fn read_acl_item(r: &mut Reader<'_>) -> WireResult<AclBinding> {
    let binding = read_acl(r)?;
    r.tagged(|_, _| Ok(false))?;
    Ok(binding)
}

/// The fewest bytes of [`acl_item`]: four codes, three empty strings, the tagged count.
const ACL_ITEM_MIN: usize = 8;

fn read_acls(r: &mut Reader<'_>) -> WireResult<Vec<AclBinding>> {
    r.array("ACL bindings", ACL_ITEM_MIN, read_acl_item)
}

/// Kafka's ElectLeaders election type codes.
fn election_code(election: ElectionType) -> i8 {
    match election {
        ElectionType::Preferred => 0,
        ElectionType::Unclean => 1,
    }
}

fn election_from_code(code: i8) -> Option<ElectionType> {
    match code {
        0 => Some(ElectionType::Preferred),
        1 => Some(ElectionType::Unclean),
        _ => None,
    }
}

/// UpdateFeatures' upgrade type codes (the inverse of [`UpgradeType::from_code`]).
fn upgrade_code(upgrade: UpgradeType) -> i8 {
    match upgrade {
        UpgradeType::Upgrade => 1,
        UpgradeType::SafeDowngrade => 2,
        UpgradeType::UnsafeDowngrade => 3,
    }
}

fn topic_to_create(w: &mut Writer, topic: &TopicToCreate) {
    w.string(&topic.name);
    w.i32(topic.partitions);
    w.i16(topic.replication_factor);
    w.string_map(&topic.configs);
    assignments(w, &topic.assignments);
    w.tagged(&[]);
}

fn read_topic_to_create(r: &mut Reader<'_>) -> WireResult<TopicToCreate> {
    let topic = TopicToCreate {
        name: r.string("topic")?,
        partitions: r.i32("partitions")?,
        replication_factor: r.i16("replication factor")?,
        configs: r.string_map("configs")?,
        assignments: read_assignments(r)?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(topic)
}

fn reassignment(w: &mut Writer, reassignment: &Reassignment) {
    w.string(&reassignment.topic);
    w.i32(reassignment.partition);
    optional(w, reassignment.target.as_deref(), Writer::i32_array);
    w.tagged(&[]);
}

fn read_reassignment(r: &mut Reader<'_>) -> WireResult<Reassignment> {
    let reassignment = Reassignment {
        topic: r.string("topic")?,
        partition: r.i32("partition")?,
        target: read_optional(r, "target present", |r| r.i32_array("target replicas"))?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(reassignment)
}

fn feature_update(w: &mut Writer, update: &FeatureUpdate) {
    w.string(&update.name);
    w.i16(update.level);
    w.i8(upgrade_code(update.upgrade_type));
    w.tagged(&[]);
}

fn read_feature_update(r: &mut Reader<'_>) -> WireResult<FeatureUpdate> {
    let update = FeatureUpdate {
        name: r.string("feature")?,
        level: r.i16("level")?,
        upgrade_type: read_coded(r, "upgrade type", UpgradeType::from_code)?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(update)
}

/// The mechanism stays Kafka's raw type code: the controller answers an unknown one per
/// user, so the RPC must carry it unchecked.
fn scram_alteration(w: &mut Writer, alteration: &ScramAlteration) {
    match alteration {
        ScramAlteration::Upsert {
            user,
            mechanism,
            credential,
        } => {
            w.u16(1);
            w.string(user);
            w.i8(*mechanism);
            scram_credential(w, credential);
        }
        ScramAlteration::Delete { user, mechanism } => {
            w.u16(2);
            w.string(user);
            w.i8(*mechanism);
        }
    }
    w.tagged(&[]);
}

fn read_scram_alteration(r: &mut Reader<'_>) -> WireResult<ScramAlteration> {
    let alteration = match r.u16("SCRAM alteration")? {
        1 => ScramAlteration::Upsert {
            user: r.string("user")?,
            mechanism: r.i8("mechanism")?,
            credential: read_scram_credential(r)?,
        },
        2 => ScramAlteration::Delete {
            user: r.string("user")?,
            mechanism: r.i8("mechanism")?,
        },
        other => return unknown_code("SCRAM alteration", other),
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(alteration)
}

fn acl_filter(w: &mut Writer, filter: &AclFilter) {
    w.i8(filter.resource_type.code());
    w.nullable_string(filter.resource_name.as_deref());
    w.i8(filter.pattern_type.code());
    w.nullable_string(filter.principal.as_deref());
    w.nullable_string(filter.host.as_deref());
    w.i8(filter.operation.code());
    w.i8(filter.permission.code());
    w.tagged(&[]);
}

fn read_acl_filter(r: &mut Reader<'_>) -> WireResult<AclFilter> {
    let filter = AclFilter {
        resource_type: read_coded(r, "resource type", ResourceType::from_code)?,
        resource_name: r.nullable_string("resource name")?,
        pattern_type: read_coded(r, "pattern type", PatternType::from_code)?,
        principal: r.nullable_string("principal")?,
        host: r.nullable_string("host")?,
        operation: read_coded(r, "operation", Operation::from_code)?,
        permission: read_coded(r, "permission", Permission::from_code)?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(filter)
}

fn quota_change(w: &mut Writer, change: &QuotaChange) {
    quota_entity(w, &change.entity);
    quota_key(w, change.key);
    quota_value(w, change.value);
    w.tagged(&[]);
}

fn read_quota_change(r: &mut Reader<'_>) -> WireResult<QuotaChange> {
    let change = QuotaChange {
        entity: read_quota_entity(r)?,
        key: read_quota_key(r)?,
        value: read_quota_value(r)?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(change)
}

/// The code of `command` (stable: a code once used is never given to another variant).
pub fn command_variant(command: &ControllerCommand) -> Variant {
    match command {
        ControllerCommand::CreateTopics { .. } => v(1, "create-topics"),
        ControllerCommand::DeleteTopic { .. } => v(2, "delete-topic"),
        ControllerCommand::CreatePartitions { .. } => v(3, "create-partitions"),
        ControllerCommand::SetTopicConfigs { .. } => v(4, "set-topic-configs"),
        ControllerCommand::AllocateProducerIds => v(5, "allocate-producer-ids"),
        ControllerCommand::RegisterBroker { .. } => v(6, "register-broker"),
        ControllerCommand::BrokerHeartbeat { .. } => v(7, "broker-heartbeat"),
        ControllerCommand::FenceBroker { .. } => v(8, "fence-broker"),
        ControllerCommand::UnregisterBroker { .. } => v(9, "unregister-broker"),
        ControllerCommand::AlterPartition { .. } => v(10, "alter-partition"),
        ControllerCommand::ControlledShutdown { .. } => v(11, "controlled-shutdown"),
        ControllerCommand::ElectLeaders { .. } => v(12, "elect-leaders"),
        ControllerCommand::BalanceLeaders { .. } => v(13, "balance-leaders"),
        ControllerCommand::ReassignPartitions { .. } => v(14, "reassign-partitions"),
        ControllerCommand::SetBrokerConfigs { .. } => v(15, "set-broker-configs"),
        ControllerCommand::IdentifyCluster { .. } => v(16, "identify-cluster"),
        ControllerCommand::UpdateFeatures { .. } => v(17, "update-features"),
        ControllerCommand::AlterScramCredentials { .. } => v(18, "alter-scram-credentials"),
        ControllerCommand::CreateAcls { .. } => v(19, "create-acls"),
        ControllerCommand::DeleteAcls { .. } => v(20, "delete-acls"),
        ControllerCommand::AlterClientQuotas { .. } => v(21, "alter-client-quotas"),
    }
}

pub fn encode_command(w: &mut Writer, command: &ControllerCommand, version: u16) {
    writable(version);
    w.u16(command_variant(command).code);
    match command {
        ControllerCommand::CreateTopics {
            topics,
            validate_only,
        } => {
            w.array(topics, topic_to_create);
            w.bool(*validate_only);
        }
        ControllerCommand::DeleteTopic { name } => w.string(name),
        ControllerCommand::CreatePartitions {
            name,
            total,
            validate_only,
            assignments: assigned,
        } => {
            w.string(name);
            w.i32(*total);
            w.bool(*validate_only);
            assignments(w, assigned);
        }
        ControllerCommand::SetTopicConfigs {
            name,
            configs,
            validate_only,
        } => {
            w.string(name);
            w.string_map(configs);
            w.bool(*validate_only);
        }
        ControllerCommand::AllocateProducerIds => {}
        ControllerCommand::RegisterBroker {
            node_id,
            incarnation,
            endpoint: address,
            rack,
            listeners: named,
            supported_features: features,
        } => {
            w.i32(*node_id);
            w.uuid(incarnation);
            endpoint(w, address);
            w.nullable_string(rack.as_deref());
            listeners(w, named);
            optional(w, features.as_ref(), supported_features);
        }
        ControllerCommand::BrokerHeartbeat {
            node_id,
            incarnation,
            applied_index,
        } => {
            w.i32(*node_id);
            w.uuid(incarnation);
            w.u64(*applied_index);
        }
        ControllerCommand::FenceBroker { node_id }
        | ControllerCommand::UnregisterBroker { node_id } => w.i32(*node_id),
        ControllerCommand::AlterPartition {
            topic,
            partition,
            leader,
            leader_epoch,
            partition_epoch,
            in_sync_replicas,
        } => {
            w.string(topic);
            w.i32(*partition);
            w.i32(*leader);
            w.i32(*leader_epoch);
            w.i32(*partition_epoch);
            w.i32_array(in_sync_replicas);
        }
        ControllerCommand::ControlledShutdown {
            node_id,
            incarnation,
        } => {
            w.i32(*node_id);
            w.uuid(incarnation);
        }
        ControllerCommand::ElectLeaders {
            election,
            partitions,
        } => {
            w.i8(election_code(*election));
            optional(w, partitions.as_deref(), |w, partitions| {
                w.array(partitions, |w, (topic, partition)| {
                    w.string(topic);
                    w.i32(*partition);
                })
            });
        }
        ControllerCommand::BalanceLeaders { imbalance_percent } => w.u32(*imbalance_percent),
        ControllerCommand::ReassignPartitions { reassignments } => {
            w.array(reassignments, reassignment)
        }
        ControllerCommand::SetBrokerConfigs {
            node_id,
            configs,
            validate_only,
        } => {
            w.i32(*node_id);
            w.string_map(configs);
            w.bool(*validate_only);
        }
        ControllerCommand::IdentifyCluster {
            cluster_id,
            features,
        } => {
            w.string(cluster_id);
            let levels: Vec<(&String, &i16)> = features.iter().collect();
            w.array(&levels, |w, (name, level)| {
                w.string(name);
                w.i16(**level);
            });
        }
        ControllerCommand::UpdateFeatures {
            updates,
            validate_only,
        } => {
            w.array(updates, feature_update);
            w.bool(*validate_only);
        }
        ControllerCommand::AlterScramCredentials { alterations } => {
            w.array(alterations, scram_alteration)
        }
        ControllerCommand::CreateAcls { acls } => w.array(acls, acl_item),
        ControllerCommand::DeleteAcls { filters } => w.array(filters, acl_filter),
        ControllerCommand::AlterClientQuotas { changes } => w.array(changes, quota_change),
    }
    w.tagged(&[]);
}

pub fn decode_command(r: &mut Reader<'_>, version: u16) -> WireResult<ControllerCommand> {
    readable("controller command", version)?;
    let command = match r.u16("command code")? {
        1 => ControllerCommand::CreateTopics {
            // Name, partitions, replication factor, configs, assignments, tagged count.
            topics: r.array("topics", 10, read_topic_to_create)?,
            validate_only: r.bool("validate only")?,
        },
        2 => ControllerCommand::DeleteTopic {
            name: r.string("topic")?,
        },
        3 => ControllerCommand::CreatePartitions {
            name: r.string("topic")?,
            total: r.i32("partition count")?,
            validate_only: r.bool("validate only")?,
            assignments: read_assignments(r)?,
        },
        4 => ControllerCommand::SetTopicConfigs {
            name: r.string("topic")?,
            configs: r.string_map("configs")?,
            validate_only: r.bool("validate only")?,
        },
        5 => ControllerCommand::AllocateProducerIds,
        6 => ControllerCommand::RegisterBroker {
            node_id: r.i32("node id")?,
            incarnation: r.uuid("incarnation")?,
            endpoint: read_endpoint(r)?,
            rack: r.nullable_string("rack")?,
            listeners: read_listeners(r)?,
            supported_features: read_optional(
                r,
                "supported features present",
                read_supported_features,
            )?,
        },
        7 => ControllerCommand::BrokerHeartbeat {
            node_id: r.i32("node id")?,
            incarnation: r.uuid("incarnation")?,
            applied_index: r.u64("applied index")?,
        },
        8 => ControllerCommand::FenceBroker {
            node_id: r.i32("node id")?,
        },
        9 => ControllerCommand::UnregisterBroker {
            node_id: r.i32("node id")?,
        },
        10 => ControllerCommand::AlterPartition {
            topic: r.string("topic")?,
            partition: r.i32("partition")?,
            leader: r.i32("leader")?,
            leader_epoch: r.i32("leader epoch")?,
            partition_epoch: r.i32("partition epoch")?,
            in_sync_replicas: r.i32_array("in-sync replicas")?,
        },
        11 => ControllerCommand::ControlledShutdown {
            node_id: r.i32("node id")?,
            incarnation: r.uuid("incarnation")?,
        },
        12 => ControllerCommand::ElectLeaders {
            election: read_coded(r, "election type", election_from_code)?,
            partitions: read_optional(r, "partitions present", |r| {
                r.array("partitions", 5, |r| {
                    Ok((r.string("topic")?, r.i32("partition")?))
                })
            })?,
        },
        13 => ControllerCommand::BalanceLeaders {
            imbalance_percent: r.u32("imbalance percent")?,
        },
        14 => ControllerCommand::ReassignPartitions {
            // Topic, partition, target presence, tagged count.
            reassignments: r.array("reassignments", 7, read_reassignment)?,
        },
        15 => ControllerCommand::SetBrokerConfigs {
            node_id: r.i32("node id")?,
            configs: r.string_map("configs")?,
            validate_only: r.bool("validate only")?,
        },
        16 => ControllerCommand::IdentifyCluster {
            cluster_id: r.string("cluster id")?,
            features: r
                .array("feature levels", 3, |r| {
                    Ok((r.string("feature")?, r.i16("level")?))
                })?
                .into_iter()
                .collect(),
        },
        17 => ControllerCommand::UpdateFeatures {
            // Name, level, upgrade type, tagged count.
            updates: r.array("feature updates", 5, read_feature_update)?,
            validate_only: r.bool("validate only")?,
        },
        18 => ControllerCommand::AlterScramCredentials {
            // Code, user, mechanism, tagged count.
            alterations: r.array("SCRAM alterations", 5, read_scram_alteration)?,
        },
        19 => ControllerCommand::CreateAcls {
            acls: read_acls(r)?,
        },
        20 => ControllerCommand::DeleteAcls {
            // Four codes, three null strings, tagged count.
            filters: r.array("ACL filters", 8, read_acl_filter)?,
        },
        21 => ControllerCommand::AlterClientQuotas {
            // Two entity kinds, key, value presence, tagged count.
            changes: r.array("quota changes", 5, read_quota_change)?,
        },
        other => return unknown_code("controller command", other),
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(command)
}

/// The code of `error` (stable, as a command's).
pub fn error_variant(error: &ControllerError) -> Variant {
    match error {
        ControllerError::TopicAlreadyExists(_) => v(1, "topic-already-exists"),
        ControllerError::UnknownTopic(_) => v(2, "unknown-topic"),
        ControllerError::InvalidTopicName { .. } => v(3, "invalid-topic-name"),
        ControllerError::InvalidPartitions { .. } => v(4, "invalid-partitions"),
        ControllerError::InvalidReplicationFactor { .. } => v(5, "invalid-replication-factor"),
        ControllerError::InvalidConfig(_) => v(6, "invalid-config"),
        ControllerError::DuplicateBrokerRegistration { .. } => {
            v(7, "duplicate-broker-registration")
        }
        ControllerError::UnknownBroker(_) => v(8, "unknown-broker"),
        ControllerError::BrokerHoldsReplicas { .. } => v(9, "broker-holds-replicas"),
        ControllerError::NotController(_) => v(10, "not-controller"),
        ControllerError::Timeout(_) => v(11, "timeout"),
        ControllerError::Quorum(_) => v(12, "quorum"),
        ControllerError::Refused(_) => v(13, "refused"),
        ControllerError::FencedLeaderEpoch(_) => v(14, "fenced-leader-epoch"),
        ControllerError::InvalidUpdateVersion(_) => v(15, "invalid-update-version"),
        ControllerError::UnsupportedVersion(_) => v(16, "unsupported-version"),
        ControllerError::IneligibleReplica(_) => v(17, "ineligible-replica"),
        ControllerError::ElectionNotNeeded(_) => v(18, "election-not-needed"),
        ControllerError::PreferredLeaderNotAvailable(_) => v(19, "preferred-leader-not-available"),
        ControllerError::EligibleLeadersNotAvailable(_) => v(20, "eligible-leaders-not-available"),
        ControllerError::InvalidReplicaAssignment(_) => v(21, "invalid-replica-assignment"),
        ControllerError::NoReassignmentInProgress(_) => v(22, "no-reassignment-in-progress"),
        ControllerError::InvalidRequest(_) => v(23, "invalid-request"),
        ControllerError::TopicAuthorization(_) => v(24, "topic-authorization"),
        ControllerError::UnacceptableCredential(_) => v(25, "unacceptable-credential"),
        ControllerError::UnsupportedSaslMechanism(_) => v(26, "unsupported-sasl-mechanism"),
        ControllerError::ResourceNotFound(_) => v(27, "resource-not-found"),
        ControllerError::DuplicateResource(_) => v(28, "duplicate-resource"),
    }
}

/// Every field, not the message: the receiver words it exactly as a local refusal.
pub fn encode_error(w: &mut Writer, error: &ControllerError, version: u16) {
    writable(version);
    w.u16(error_variant(error).code);
    match error {
        ControllerError::TopicAlreadyExists(text)
        | ControllerError::UnknownTopic(text)
        | ControllerError::InvalidConfig(text)
        | ControllerError::Timeout(text)
        | ControllerError::Quorum(text)
        | ControllerError::Refused(text)
        | ControllerError::FencedLeaderEpoch(text)
        | ControllerError::InvalidUpdateVersion(text)
        | ControllerError::UnsupportedVersion(text)
        | ControllerError::IneligibleReplica(text)
        | ControllerError::ElectionNotNeeded(text)
        | ControllerError::PreferredLeaderNotAvailable(text)
        | ControllerError::EligibleLeadersNotAvailable(text)
        | ControllerError::InvalidReplicaAssignment(text)
        | ControllerError::NoReassignmentInProgress(text)
        | ControllerError::InvalidRequest(text)
        | ControllerError::TopicAuthorization(text)
        | ControllerError::UnacceptableCredential(text)
        | ControllerError::UnsupportedSaslMechanism(text)
        | ControllerError::ResourceNotFound(text)
        | ControllerError::DuplicateResource(text) => w.string(text),
        ControllerError::InvalidTopicName { name, reason } => {
            w.string(name);
            w.string(reason);
        }
        ControllerError::InvalidPartitions {
            topic,
            requested,
            reason,
        } => {
            w.string(topic);
            w.i32(*requested);
            w.string(reason);
        }
        ControllerError::InvalidReplicationFactor { requested, brokers } => {
            w.i16(*requested);
            w.i32(*brokers);
        }
        ControllerError::DuplicateBrokerRegistration {
            node_id,
            incarnation,
        } => {
            w.i32(*node_id);
            w.uuid(incarnation);
        }
        ControllerError::UnknownBroker(node_id) => w.i32(*node_id),
        ControllerError::BrokerHoldsReplicas {
            node_id,
            partitions,
        } => {
            w.i32(*node_id);
            w.u64(*partitions as u64);
        }
        ControllerError::NotController(detail) => w.nullable_string(detail.as_deref()),
    }
    w.tagged(&[]);
}

pub fn decode_error(r: &mut Reader<'_>, version: u16) -> WireResult<ControllerError> {
    readable("controller error", version)?;
    let text = |r: &mut Reader<'_>| r.string("error message");
    let error = match r.u16("error code")? {
        1 => ControllerError::TopicAlreadyExists(text(r)?),
        2 => ControllerError::UnknownTopic(text(r)?),
        3 => ControllerError::InvalidTopicName {
            name: r.string("topic")?,
            reason: r.string("reason")?,
        },
        4 => ControllerError::InvalidPartitions {
            topic: r.string("topic")?,
            requested: r.i32("requested partitions")?,
            reason: r.string("reason")?,
        },
        5 => ControllerError::InvalidReplicationFactor {
            requested: r.i16("requested replication factor")?,
            brokers: r.i32("brokers")?,
        },
        6 => ControllerError::InvalidConfig(text(r)?),
        7 => ControllerError::DuplicateBrokerRegistration {
            node_id: r.i32("node id")?,
            incarnation: r.uuid("incarnation")?,
        },
        8 => ControllerError::UnknownBroker(r.i32("node id")?),
        9 => ControllerError::BrokerHoldsReplicas {
            node_id: r.i32("node id")?,
            partitions: usize::try_from(r.u64("partitions")?)
                .map_err(|_| WireError::Invalid("partition count out of range".into()))?,
        },
        10 => ControllerError::NotController(r.nullable_string("detail")?),
        11 => ControllerError::Timeout(text(r)?),
        12 => ControllerError::Quorum(text(r)?),
        13 => ControllerError::Refused(text(r)?),
        14 => ControllerError::FencedLeaderEpoch(text(r)?),
        15 => ControllerError::InvalidUpdateVersion(text(r)?),
        16 => ControllerError::UnsupportedVersion(text(r)?),
        17 => ControllerError::IneligibleReplica(text(r)?),
        18 => ControllerError::ElectionNotNeeded(text(r)?),
        19 => ControllerError::PreferredLeaderNotAvailable(text(r)?),
        20 => ControllerError::EligibleLeadersNotAvailable(text(r)?),
        21 => ControllerError::InvalidReplicaAssignment(text(r)?),
        22 => ControllerError::NoReassignmentInProgress(text(r)?),
        23 => ControllerError::InvalidRequest(text(r)?),
        24 => ControllerError::TopicAuthorization(text(r)?),
        25 => ControllerError::UnacceptableCredential(text(r)?),
        26 => ControllerError::UnsupportedSaslMechanism(text(r)?),
        27 => ControllerError::ResourceNotFound(text(r)?),
        28 => ControllerError::DuplicateResource(text(r)?),
        other => return unknown_code("controller error", other),
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(error)
}

/// Field by field rather than as records: the caller answers from it directly, and a
/// record encoding would need an image to apply to.
fn topic_image(w: &mut Writer, topic: &TopicImage) {
    w.string(&topic.name);
    w.uuid(&topic.topic_id);
    w.i16(topic.replication_factor);
    w.string_map(&topic.configs);
    w.array(&topic.partitions, partition_state);
    w.tagged(&[]);
}

fn read_topic_image(r: &mut Reader<'_>) -> WireResult<TopicImage> {
    let topic = TopicImage {
        name: r.string("topic")?,
        topic_id: r.uuid("topic id")?,
        replication_factor: r.i16("replication factor")?,
        configs: r.string_map("configs")?,
        // Two empty replica lists, leader and both epochs, tagged count.
        partitions: r.array("partitions", 15, read_partition_state)?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(topic)
}

fn optional_error(w: &mut Writer, error: Option<&ControllerError>, version: u16) {
    optional(w, error, |w, error| encode_error(w, error, version));
}

fn read_optional_error(r: &mut Reader<'_>, version: u16) -> WireResult<Option<ControllerError>> {
    read_optional(r, "error present", |r| decode_error(r, version))
}

fn partition_outcome(w: &mut Writer, outcome: &PartitionOutcome, version: u16) {
    w.string(&outcome.topic);
    w.i32(outcome.partition);
    optional_error(w, outcome.error.as_ref(), version);
    w.tagged(&[]);
}

fn read_partition_outcome(r: &mut Reader<'_>, version: u16) -> WireResult<PartitionOutcome> {
    let outcome = PartitionOutcome {
        topic: r.string("topic")?,
        partition: r.i32("partition")?,
        error: read_optional_error(r, version)?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(outcome)
}

/// The code of `outcome` (stable, as a command's).
pub fn outcome_variant(outcome: &CommandOutcome) -> Variant {
    match outcome {
        CommandOutcome::Done => v(1, "done"),
        CommandOutcome::Topic(_) => v(2, "topic"),
        CommandOutcome::Topics(_) => v(3, "topics"),
        CommandOutcome::TopicDeleted(_) => v(4, "topic-deleted"),
        CommandOutcome::ProducerIds { .. } => v(5, "producer-ids"),
        CommandOutcome::Heartbeat { .. } => v(6, "heartbeat"),
        CommandOutcome::Partitions(_) => v(7, "partitions"),
        CommandOutcome::Users(_) => v(8, "users"),
        CommandOutcome::AclsDeleted(_) => v(9, "acls-deleted"),
    }
}

pub fn encode_outcome(w: &mut Writer, outcome: &CommandOutcome, version: u16) {
    writable(version);
    w.u16(outcome_variant(outcome).code);
    match outcome {
        CommandOutcome::Done => {}
        CommandOutcome::Topic(topic) => topic_image(w, topic),
        CommandOutcome::Topics(topics) => w.array(topics, |w, topic| match topic {
            Ok(topic) => {
                w.bool(true);
                topic_image(w, topic);
            }
            Err(error) => {
                w.bool(false);
                encode_error(w, error, version);
            }
        }),
        CommandOutcome::TopicDeleted(topic_id) => w.uuid(topic_id),
        CommandOutcome::ProducerIds { first, end } => {
            w.i64(*first);
            w.i64(*end);
        }
        CommandOutcome::Heartbeat { fenced } => w.bool(*fenced),
        CommandOutcome::Partitions(partitions) => w.array(partitions, |w, outcome| {
            partition_outcome(w, outcome, version)
        }),
        CommandOutcome::Users(users) => w.array(users, |w, (user, error)| {
            w.string(user);
            optional_error(w, error.as_ref(), version);
        }),
        CommandOutcome::AclsDeleted(per_filter) => {
            w.array(per_filter, |w, removed| w.array(removed, acl_item))
        }
    }
    w.tagged(&[]);
}

pub fn decode_outcome(r: &mut Reader<'_>, version: u16) -> WireResult<CommandOutcome> {
    readable("command outcome", version)?;
    let outcome = match r.u16("outcome code")? {
        1 => CommandOutcome::Done,
        2 => CommandOutcome::Topic(read_topic_image(r)?),
        // The flag, then at least an error's code, one field and tagged count.
        3 => CommandOutcome::Topics(r.array("topics", 5, |r| {
            if r.bool("topic created")? {
                Ok(Ok(read_topic_image(r)?))
            } else {
                Ok(Err(decode_error(r, version)?))
            }
        })?),
        4 => CommandOutcome::TopicDeleted(r.uuid("topic id")?),
        5 => CommandOutcome::ProducerIds {
            first: r.i64("first producer id")?,
            end: r.i64("end producer id")?,
        },
        6 => CommandOutcome::Heartbeat {
            fenced: r.bool("fenced")?,
        },
        // Topic, partition, error presence, tagged count.
        7 => CommandOutcome::Partitions(
            r.array("partitions", 7, |r| read_partition_outcome(r, version))?,
        ),
        8 => CommandOutcome::Users(r.array("users", 2, |r| {
            Ok((r.string("user")?, read_optional_error(r, version)?))
        })?),
        9 => CommandOutcome::AclsDeleted(r.array("filters", 1, read_acls)?),
        other => return unknown_code("command outcome", other),
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(outcome)
}

/// The answer to a forwarded command: its outcome and log index, or the refusal.
pub fn encode_command_result(
    w: &mut Writer,
    result: &Result<CommandReply, ControllerError>,
    version: u16,
) {
    writable(version);
    match result {
        Ok(reply) => {
            w.bool(true);
            encode_outcome(w, &reply.outcome, version);
            w.u64(reply.index);
        }
        Err(error) => {
            w.bool(false);
            encode_error(w, error, version);
        }
    }
    w.tagged(&[]);
}

pub fn decode_command_result(
    r: &mut Reader<'_>,
    version: u16,
) -> WireResult<Result<CommandReply, ControllerError>> {
    readable("command result", version)?;
    let result = if r.bool("command succeeded")? {
        Ok(CommandReply {
            outcome: decode_outcome(r, version)?,
            index: r.u64("index")?,
        })
    } else {
        Err(decode_error(r, version)?)
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(result)
}

fn optional_uuid(w: &mut Writer, id: Option<&Uuid>) {
    optional(w, id, Writer::uuid);
}

fn read_optional_uuid(r: &mut Reader<'_>, what: &'static str) -> WireResult<Option<Uuid>> {
    read_optional(r, what, |r| r.uuid(what))
}

/// The code of `request` (stable, as a command's).
pub fn voter_request_variant(request: &VoterRequest) -> Variant {
    match request {
        VoterRequest::Add { .. } => v(1, "add"),
        VoterRequest::Remove { .. } => v(2, "remove"),
        VoterRequest::Follow { .. } => v(3, "follow"),
    }
}

pub fn encode_voter_request(w: &mut Writer, request: &VoterRequest, version: u16) {
    writable(version);
    w.u16(voter_request_variant(request).code);
    match request {
        VoterRequest::Add {
            node_id,
            directory_id,
            address,
            timeout_ms,
        } => {
            w.i32(*node_id);
            optional_uuid(w, directory_id.as_ref());
            w.string(address);
            w.u64(*timeout_ms);
        }
        VoterRequest::Remove {
            node_id,
            directory_id,
        } => {
            w.i32(*node_id);
            optional_uuid(w, directory_id.as_ref());
        }
        VoterRequest::Follow {
            node_id,
            directory_id,
            address,
        } => {
            w.i32(*node_id);
            w.uuid(directory_id);
            w.string(address);
        }
    }
    w.tagged(&[]);
}

pub fn decode_voter_request(r: &mut Reader<'_>, version: u16) -> WireResult<VoterRequest> {
    readable("voter request", version)?;
    let request = match r.u16("voter request code")? {
        1 => VoterRequest::Add {
            node_id: r.i32("node id")?,
            directory_id: read_optional_uuid(r, "directory id")?,
            address: r.string("address")?,
            timeout_ms: r.u64("timeout ms")?,
        },
        2 => VoterRequest::Remove {
            node_id: r.i32("node id")?,
            directory_id: read_optional_uuid(r, "directory id")?,
        },
        3 => VoterRequest::Follow {
            node_id: r.i32("node id")?,
            directory_id: r.uuid("directory id")?,
            address: r.string("address")?,
        },
        other => return unknown_code("voter request", other),
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(request)
}

/// The code of `error` (stable, as a command's).
pub fn voter_error_variant(error: &VoterChangeError) -> Variant {
    match error {
        VoterChangeError::Duplicate(_) => v(1, "duplicate"),
        VoterChangeError::NotFound(_) => v(2, "not-found"),
        VoterChangeError::TimedOut(_) => v(3, "timed-out"),
        VoterChangeError::Invalid(_) => v(4, "invalid"),
        VoterChangeError::Static(_) => v(5, "static"),
    }
}

pub fn encode_voter_result(w: &mut Writer, result: &Result<(), VoterChangeError>, version: u16) {
    writable(version);
    match result {
        Ok(()) => w.bool(true),
        Err(error) => {
            w.bool(false);
            w.u16(voter_error_variant(error).code);
            match error {
                VoterChangeError::Duplicate(text)
                | VoterChangeError::NotFound(text)
                | VoterChangeError::TimedOut(text)
                | VoterChangeError::Invalid(text)
                | VoterChangeError::Static(text) => w.string(text),
            }
            w.tagged(&[]);
        }
    }
    w.tagged(&[]);
}

pub fn decode_voter_result(
    r: &mut Reader<'_>,
    version: u16,
) -> WireResult<Result<(), VoterChangeError>> {
    readable("voter change result", version)?;
    let result = if r.bool("voter change succeeded")? {
        Ok(())
    } else {
        let code = r.u16("voter error code")?;
        let text = r.string("error message")?;
        let error = match code {
            1 => VoterChangeError::Duplicate(text),
            2 => VoterChangeError::NotFound(text),
            3 => VoterChangeError::TimedOut(text),
            4 => VoterChangeError::Invalid(text),
            5 => VoterChangeError::Static(text),
            other => return unknown_code("voter change error", other),
        };
        r.tagged(|_, _| Ok(false))?;
        Err(error)
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(result)
}

pub fn encode_quorum_status(w: &mut Writer, status: &QuorumStatus, version: u16) {
    writable(version);
    w.i32(status.leader_id);
    w.u64(status.term);
    w.u64(status.high_watermark);
    w.array(&status.voters, |w, (id, replicated)| {
        w.i32(*id);
        optional(w, replicated.as_ref(), |w, index| w.u64(*index));
    });
    w.array(&status.observers, |w, (id, applied)| {
        w.i32(*id);
        w.u64(*applied);
    });
    let nodes: Vec<(&i32, &(String, Option<Uuid>))> = status.nodes.iter().collect();
    w.array(&nodes, |w, (id, (address, directory_id))| {
        w.i32(**id);
        w.string(address);
        optional_uuid(w, directory_id.as_ref());
    });
    w.tagged(&[]);
}

pub fn decode_quorum_status(r: &mut Reader<'_>, version: u16) -> WireResult<QuorumStatus> {
    readable("quorum status", version)?;
    let status = QuorumStatus {
        leader_id: r.i32("leader id")?,
        term: r.u64("term")?,
        high_watermark: r.u64("high watermark")?,
        voters: r.array("voters", 5, |r| {
            Ok((
                r.i32("voter")?,
                read_optional(r, "replicated index present", |r| r.u64("replicated index"))?,
            ))
        })?,
        observers: r.array("observers", 12, |r| {
            Ok((r.i32("observer")?, r.u64("applied index")?))
        })?,
        nodes: r
            .array("nodes", 6, |r| {
                Ok((
                    r.i32("node")?,
                    (r.string("address")?, read_optional_uuid(r, "directory id")?),
                ))
            })?
            .into_iter()
            .collect(),
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(status)
}

/// The code of `update` (stable, as a command's).
pub fn metadata_update_variant(update: &MetadataUpdate) -> Variant {
    match update {
        MetadataUpdate::Batches { .. } => v(1, "batches"),
        MetadataUpdate::Image { .. } => v(2, "image"),
    }
}

/// Batches in the log's own record encoding, and an image as the records a snapshot
/// rebuilds it from: an observer applies exactly what a voter would.
pub fn encode_metadata_update(w: &mut Writer, update: &MetadataUpdate, version: u16) {
    writable(version);
    w.u16(metadata_update_variant(update).code);
    match update {
        MetadataUpdate::Batches {
            batches,
            applied_index,
        } => {
            w.u64(*applied_index);
            w.array(batches, |w, (index, records)| {
                w.u64(*index);
                encode_records(w, records);
            });
        }
        MetadataUpdate::Image {
            applied_index,
            image,
        } => {
            w.u64(*applied_index);
            encode_image(w, image);
        }
    }
    w.tagged(&[]);
}

pub fn decode_metadata_update(r: &mut Reader<'_>, version: u16) -> WireResult<MetadataUpdate> {
    readable("metadata update", version)?;
    let update = match r.u16("metadata update code")? {
        1 => MetadataUpdate::Batches {
            applied_index: r.u64("applied index")?,
            // Index, batch format, record count.
            batches: r.array("batches", 10, |r| {
                Ok((r.u64("batch index")?, decode_batch(r)?.records))
            })?,
        },
        2 => MetadataUpdate::Image {
            applied_index: r.u64("applied index")?,
            image: decode_image(r)?,
        },
        other => return unknown_code("metadata update", other),
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(update)
}

/// The answer to a metadata fetch: the update, the active controller (when known) and
/// the quorum's voters, for the observer's client.
pub fn encode_metadata_reply(
    w: &mut Writer,
    update: &MetadataUpdate,
    controller_id: Option<i32>,
    voters: &BTreeMap<i32, String>,
    version: u16,
) {
    writable(version);
    encode_metadata_update(w, update, version);
    optional(w, controller_id.as_ref(), |w, id| w.i32(*id));
    let voters: Vec<(&i32, &String)> = voters.iter().collect();
    w.array(&voters, |w, (id, address)| {
        w.i32(**id);
        w.string(address);
    });
    w.tagged(&[]);
}

pub fn decode_metadata_reply(
    r: &mut Reader<'_>,
    version: u16,
) -> WireResult<(MetadataUpdate, Option<i32>, BTreeMap<i32, String>)> {
    readable("metadata reply", version)?;
    let update = decode_metadata_update(r, version)?;
    let controller_id = read_optional(r, "controller present", |r| r.i32("controller id"))?;
    let voters = r
        .array("voters", 5, |r| Ok((r.i32("voter")?, r.string("address")?)))?
        .into_iter()
        .collect();
    r.tagged(|_, _| Ok(false))?;
    Ok((update, controller_id, voters))
}

/// An observer's long poll for the records after `from_index`.
pub fn encode_fetch_metadata(w: &mut Writer, from_index: u64, max_wait_ms: u64, version: u16) {
    writable(version);
    w.u64(from_index);
    w.u64(max_wait_ms);
    w.tagged(&[]);
}

/// (from index, max wait ms).
pub fn decode_fetch_metadata(r: &mut Reader<'_>, version: u16) -> WireResult<(u64, u64)> {
    readable("metadata fetch", version)?;
    let from_index = r.u64("from index")?;
    let max_wait_ms = r.u64("max wait ms")?;
    r.tagged(|_, _| Ok(false))?;
    Ok((from_index, max_wait_ms))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::sync::Arc;

    use super::*;
    use crate::metadata::features::{METADATA_VERSION, TRANSACTION_VERSION};
    use crate::metadata::image::{BrokerImage, ClusterImage};
    use crate::metadata::record_format::tests::{fixture, fixtures_dir, one_of_each as records};
    use crate::metadata::records::{Endpoint, MetadataRecord, PartitionState, ScramCredential};
    use crate::metadata::wire::field;
    use crate::model::quota::{EntityName, QuotaEntity, QuotaKey};

    fn incarnation() -> Uuid {
        Uuid::from_u128(0x0b0e_0001)
    }

    fn topic_image() -> TopicImage {
        TopicImage {
            name: "payments".into(),
            topic_id: Uuid::from_u128(0x7091c),
            replication_factor: 3,
            configs: BTreeMap::from([("min.insync.replicas".to_string(), "2".to_string())]),
            partitions: vec![
                PartitionState {
                    replicas: vec![2, 3, 1],
                    in_sync_replicas: vec![2, 3],
                    leader: 2,
                    leader_epoch: 6,
                    partition_epoch: 11,
                    adding_replicas: vec![1],
                    removing_replicas: vec![],
                },
                PartitionState {
                    replicas: vec![3, 1, 2],
                    in_sync_replicas: vec![3],
                    leader: -1,
                    leader_epoch: 2,
                    partition_epoch: 3,
                    adding_replicas: vec![],
                    removing_replicas: vec![2],
                },
            ],
        }
    }

    fn binding() -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Group,
            resource_name: "billing".into(),
            pattern_type: PatternType::Literal,
            principal: "User:bob".into(),
            host: "10.0.0.7".into(),
            operation: Operation::Read,
            permission: Permission::Deny,
        }
    }

    /// One command of every variant, in code order, with every optional field set.
    fn commands() -> Vec<ControllerCommand> {
        let configs =
            |key: &str, value: &str| BTreeMap::from([(key.to_string(), value.to_string())]);
        vec![
            ControllerCommand::CreateTopics {
                topics: vec![
                    TopicToCreate {
                        name: "audit".into(),
                        partitions: 1,
                        replication_factor: 3,
                        configs: configs("retention.ms", "86400000"),
                        assignments: vec![],
                    },
                    TopicToCreate {
                        name: "clicks".into(),
                        partitions: 2,
                        replication_factor: 1,
                        configs: BTreeMap::new(),
                        assignments: vec![vec![1], vec![2]],
                    },
                ],
                validate_only: true,
            },
            ControllerCommand::DeleteTopic {
                name: "clicks".into(),
            },
            ControllerCommand::CreatePartitions {
                name: "payments".into(),
                total: 4,
                validate_only: false,
                assignments: vec![vec![1, 3, 2]],
            },
            ControllerCommand::SetTopicConfigs {
                name: "payments".into(),
                configs: configs("segment.bytes", "1048576"),
                validate_only: true,
            },
            ControllerCommand::AllocateProducerIds,
            ControllerCommand::RegisterBroker {
                node_id: 2,
                incarnation: incarnation(),
                endpoint: Endpoint {
                    host: "b2.internal".into(),
                    port: 19093,
                },
                rack: Some("rack-2".into()),
                listeners: BTreeMap::from([(
                    "EXTERNAL".to_string(),
                    Endpoint {
                        host: "b2.example.com".into(),
                        port: 29092,
                    },
                )]),
                supported_features: Some(BTreeMap::from([(METADATA_VERSION.to_string(), (7, 25))])),
            },
            ControllerCommand::BrokerHeartbeat {
                node_id: 2,
                incarnation: incarnation(),
                applied_index: 1207,
            },
            ControllerCommand::FenceBroker { node_id: 3 },
            ControllerCommand::UnregisterBroker { node_id: 4 },
            ControllerCommand::AlterPartition {
                topic: "payments".into(),
                partition: 1,
                leader: 3,
                leader_epoch: 2,
                partition_epoch: 3,
                in_sync_replicas: vec![3, 1],
            },
            ControllerCommand::ControlledShutdown {
                node_id: 2,
                incarnation: incarnation(),
            },
            ControllerCommand::ElectLeaders {
                election: ElectionType::Unclean,
                partitions: Some(vec![("payments".into(), 1), ("audit".into(), 0)]),
            },
            ControllerCommand::BalanceLeaders {
                imbalance_percent: 10,
            },
            ControllerCommand::ReassignPartitions {
                reassignments: vec![
                    Reassignment {
                        topic: "payments".into(),
                        partition: 0,
                        target: Some(vec![3, 2, 1]),
                    },
                    Reassignment {
                        topic: "payments".into(),
                        partition: 1,
                        target: None,
                    },
                ],
            },
            ControllerCommand::SetBrokerConfigs {
                node_id: -1,
                configs: configs("log.retention.ms", "3600000"),
                validate_only: false,
            },
            ControllerCommand::IdentifyCluster {
                cluster_id: "rpc-fixture-cluster".into(),
                features: BTreeMap::from([
                    (METADATA_VERSION.to_string(), 25),
                    (TRANSACTION_VERSION.to_string(), 2),
                ]),
            },
            ControllerCommand::UpdateFeatures {
                updates: vec![
                    FeatureUpdate {
                        name: METADATA_VERSION.into(),
                        level: 25,
                        upgrade_type: UpgradeType::Upgrade,
                    },
                    FeatureUpdate {
                        name: TRANSACTION_VERSION.into(),
                        level: 0,
                        upgrade_type: UpgradeType::UnsafeDowngrade,
                    },
                ],
                validate_only: true,
            },
            ControllerCommand::AlterScramCredentials {
                alterations: vec![
                    ScramAlteration::Upsert {
                        user: "bob".into(),
                        mechanism: 1,
                        credential: ScramCredential {
                            salt: vec![9, 8, 7, 6],
                            stored_key: vec![0x11; 32],
                            server_key: vec![0x22; 32],
                            iterations: 4096,
                        },
                    },
                    ScramAlteration::Delete {
                        user: "carol".into(),
                        mechanism: 99,
                    },
                ],
            },
            ControllerCommand::CreateAcls {
                acls: vec![binding()],
            },
            ControllerCommand::DeleteAcls {
                filters: vec![AclFilter {
                    resource_type: ResourceType::Any,
                    resource_name: Some("billing".into()),
                    pattern_type: PatternType::Match,
                    principal: Some("User:bob".into()),
                    host: None,
                    operation: Operation::Any,
                    permission: Permission::Deny,
                }],
            },
            ControllerCommand::AlterClientQuotas {
                changes: vec![
                    QuotaChange {
                        entity: QuotaEntity {
                            user: Some(EntityName::Named("bob".into())),
                            client_id: Some(EntityName::Default),
                        },
                        key: QuotaKey::ConsumerByteRate,
                        value: Some(2_097_152.0),
                    },
                    QuotaChange {
                        entity: QuotaEntity {
                            user: None,
                            client_id: Some(EntityName::Named("reporting".into())),
                        },
                        key: QuotaKey::RequestPercentage,
                        value: None,
                    },
                ],
            },
        ]
    }

    /// One error of every variant, in code order.
    fn errors() -> Vec<ControllerError> {
        let text = |s: &str| s.to_string();
        vec![
            ControllerError::TopicAlreadyExists(text("payments")),
            ControllerError::UnknownTopic(text("ledger")),
            ControllerError::InvalidTopicName {
                name: text("a/b"),
                reason: text("contains `/`"),
            },
            ControllerError::InvalidPartitions {
                topic: text("payments"),
                requested: 2,
                reason: text("the topic already has 3"),
            },
            ControllerError::InvalidReplicationFactor {
                requested: 5,
                brokers: 3,
            },
            ControllerError::InvalidConfig(text("Invalid value x for configuration retention.ms")),
            ControllerError::DuplicateBrokerRegistration {
                node_id: 2,
                incarnation: incarnation(),
            },
            ControllerError::UnknownBroker(9),
            ControllerError::BrokerHoldsReplicas {
                node_id: 3,
                partitions: 12,
            },
            ControllerError::NotController(Some(text("controller 1 is unreachable"))),
            ControllerError::Timeout(text("no commit after 5 s")),
            ControllerError::Quorum(text("log store closed")),
            ControllerError::Refused(text("another cluster")),
            ControllerError::FencedLeaderEpoch(text("epoch 4 is behind 5")),
            ControllerError::InvalidUpdateVersion(text("level 99 is not supported")),
            ControllerError::UnsupportedVersion(text("metadata.version 7 is too old")),
            ControllerError::IneligibleReplica(text("replica 4 is fenced")),
            ControllerError::ElectionNotNeeded(text("payments-0 is led by 2")),
            ControllerError::PreferredLeaderNotAvailable(text("replica 2 is offline")),
            ControllerError::EligibleLeadersNotAvailable(text("no live replica")),
            ControllerError::InvalidReplicaAssignment(text("replica 7 is not registered")),
            ControllerError::NoReassignmentInProgress(text("payments-1")),
            ControllerError::InvalidRequest(text("duplicate partition")),
            ControllerError::TopicAuthorization(text("ledger")),
            ControllerError::UnacceptableCredential(text("too few iterations")),
            ControllerError::UnsupportedSaslMechanism(text("mechanism 99")),
            ControllerError::ResourceNotFound(text("user carol")),
            ControllerError::DuplicateResource(text("user bob twice")),
        ]
    }

    /// One outcome of every variant, in code order.
    fn outcomes() -> Vec<CommandOutcome> {
        vec![
            CommandOutcome::Done,
            CommandOutcome::Topic(topic_image()),
            CommandOutcome::Topics(vec![
                Ok(topic_image()),
                Err(ControllerError::TopicAlreadyExists("audit".into())),
            ]),
            CommandOutcome::TopicDeleted(Uuid::from_u128(0xc11c5)),
            CommandOutcome::ProducerIds {
                first: 7000,
                end: 8000,
            },
            CommandOutcome::Heartbeat { fenced: true },
            CommandOutcome::Partitions(vec![
                PartitionOutcome {
                    topic: "payments".into(),
                    partition: 0,
                    error: None,
                },
                PartitionOutcome {
                    topic: "payments".into(),
                    partition: 1,
                    error: Some(ControllerError::NoReassignmentInProgress(
                        "payments-1".into(),
                    )),
                },
            ]),
            CommandOutcome::Users(vec![
                ("bob".into(), None),
                (
                    "carol".into(),
                    Some(ControllerError::UnsupportedSaslMechanism(
                        "mechanism 99".into(),
                    )),
                ),
            ]),
            CommandOutcome::AclsDeleted(vec![vec![binding()], vec![]]),
        ]
    }

    fn voter_requests() -> Vec<VoterRequest> {
        vec![
            VoterRequest::Add {
                node_id: 4,
                directory_id: Some(Uuid::from_u128(0xd14)),
                address: "c4.internal:9093".into(),
                timeout_ms: 30_000,
            },
            VoterRequest::Remove {
                node_id: 2,
                directory_id: None,
            },
            VoterRequest::Follow {
                node_id: 5,
                directory_id: Uuid::from_u128(0xd15),
                address: "c5.internal:9093".into(),
            },
        ]
    }

    fn voter_errors() -> Vec<VoterChangeError> {
        vec![
            VoterChangeError::Duplicate("node 4 is already a voter".into()),
            VoterChangeError::NotFound("node 6 is not a voter".into()),
            VoterChangeError::TimedOut("node 4 did not catch up".into()),
            VoterChangeError::Invalid("no address".into()),
            VoterChangeError::Static("the quorum is static".into()),
        ]
    }

    /// An image with something of everything (brokers fenced and not, a topic with a
    /// reassignment, configs, credentials, an ACL, a quota, features and their epoch): an
    /// image the records can build, as every real one is.
    fn cluster_image() -> ClusterImage {
        let mut image = ClusterImage::default();
        for record in records() {
            image.apply(&record);
        }
        image
            .topics
            .insert(topic_image().name, Arc::new(topic_image()));
        Arc::make_mut(&mut image.acls).insert(binding());
        image.brokers.insert(
            5,
            BrokerImage {
                node_id: 5,
                incarnation: incarnation(),
                endpoint: Endpoint {
                    host: "b5.internal".into(),
                    port: 19093,
                },
                rack: None,
                fenced: true,
                listeners: BTreeMap::new(),
                supported_features: None,
            },
        );
        image.features.epoch = 31;
        image
    }

    fn metadata_updates() -> Vec<MetadataUpdate> {
        vec![
            MetadataUpdate::Batches {
                batches: vec![
                    (11, records()),
                    (13, vec![MetadataRecord::BrokerFenced { node_id: 5 }]),
                ],
                applied_index: 14,
            },
            MetadataUpdate::Image {
                applied_index: 40,
                image: cluster_image(),
            },
        ]
    }

    /// Every payload, as the RPC carries it.
    #[derive(Debug, Clone, PartialEq)]
    enum Message {
        Command(ControllerCommand),
        Outcome(CommandOutcome),
        Error(ControllerError),
        CommandResult(Result<CommandReply, ControllerError>),
        VoterRequest(VoterRequest),
        VoterResult(Result<(), VoterChangeError>),
        QuorumStatus(QuorumStatus),
        MetadataUpdate(MetadataUpdate),
        MetadataReply(MetadataUpdate, Option<i32>, BTreeMap<i32, String>),
        FetchMetadata(u64, u64),
    }

    /// Every message kind; a kind comes before any kind its name is a prefix of, so a
    /// fixture's name is matched by its own kind.
    const KINDS: [&str; 10] = [
        "command-result",
        "command",
        "outcome",
        "error",
        "voter-request",
        "voter-result",
        "quorum-status",
        "metadata-update",
        "metadata-reply",
        "fetch-metadata",
    ];

    impl Message {
        fn kind(&self) -> &'static str {
            match self {
                Message::Command(_) => "command",
                Message::Outcome(_) => "outcome",
                Message::Error(_) => "error",
                Message::CommandResult(_) => "command-result",
                Message::VoterRequest(_) => "voter-request",
                Message::VoterResult(_) => "voter-result",
                Message::QuorumStatus(_) => "quorum-status",
                Message::MetadataUpdate(_) => "metadata-update",
                Message::MetadataReply(..) => "metadata-reply",
                Message::FetchMetadata(..) => "fetch-metadata",
            }
        }

        /// The kind and, for an enum, the variant: a fixture's name without its version.
        fn name(&self) -> String {
            let variant = match self {
                Message::Command(command) => command_variant(command).name,
                Message::Outcome(outcome) => outcome_variant(outcome).name,
                Message::Error(error) => error_variant(error).name,
                Message::CommandResult(Ok(_)) | Message::VoterResult(Ok(())) => "ok",
                Message::CommandResult(Err(_)) => "error",
                Message::VoterRequest(request) => voter_request_variant(request).name,
                Message::VoterResult(Err(error)) => voter_error_variant(error).name,
                Message::MetadataUpdate(update) => metadata_update_variant(update).name,
                Message::QuorumStatus(_)
                | Message::MetadataReply(..)
                | Message::FetchMetadata(..) => return self.kind().to_string(),
            };
            format!("{}-{variant}", self.kind())
        }

        fn encode(&self, version: u16) -> Vec<u8> {
            let mut w = Writer::new();
            match self {
                Message::Command(command) => encode_command(&mut w, command, version),
                Message::Outcome(outcome) => encode_outcome(&mut w, outcome, version),
                Message::Error(error) => encode_error(&mut w, error, version),
                Message::CommandResult(result) => encode_command_result(&mut w, result, version),
                Message::VoterRequest(request) => encode_voter_request(&mut w, request, version),
                Message::VoterResult(result) => encode_voter_result(&mut w, result, version),
                Message::QuorumStatus(status) => encode_quorum_status(&mut w, status, version),
                Message::MetadataUpdate(update) => encode_metadata_update(&mut w, update, version),
                Message::MetadataReply(update, controller_id, voters) => {
                    encode_metadata_reply(&mut w, update, *controller_id, voters, version)
                }
                Message::FetchMetadata(from_index, max_wait_ms) => {
                    encode_fetch_metadata(&mut w, *from_index, *max_wait_ms, version)
                }
            }
            w.into_bytes()
        }

        fn decode(kind: &str, r: &mut Reader<'_>, version: u16) -> WireResult<Message> {
            Ok(match kind {
                "command" => Message::Command(decode_command(r, version)?),
                "outcome" => Message::Outcome(decode_outcome(r, version)?),
                "error" => Message::Error(decode_error(r, version)?),
                "command-result" => Message::CommandResult(decode_command_result(r, version)?),
                "voter-request" => Message::VoterRequest(decode_voter_request(r, version)?),
                "voter-result" => Message::VoterResult(decode_voter_result(r, version)?),
                "quorum-status" => Message::QuorumStatus(decode_quorum_status(r, version)?),
                "metadata-update" => Message::MetadataUpdate(decode_metadata_update(r, version)?),
                "metadata-reply" => {
                    let (update, controller_id, voters) = decode_metadata_reply(r, version)?;
                    Message::MetadataReply(update, controller_id, voters)
                }
                "fetch-metadata" => {
                    let (from_index, max_wait_ms) = decode_fetch_metadata(r, version)?;
                    Message::FetchMetadata(from_index, max_wait_ms)
                }
                other => panic!("no decoder for message kind {other}"),
            })
        }
    }

    /// One message of every kind and variant, every optional field set: the fixtures.
    fn one_of_each() -> Vec<Message> {
        let mut messages: Vec<Message> = commands().into_iter().map(Message::Command).collect();
        messages.extend(outcomes().into_iter().map(Message::Outcome));
        messages.extend(errors().into_iter().map(Message::Error));
        messages.push(Message::CommandResult(Ok(CommandReply {
            outcome: CommandOutcome::Topic(topic_image()),
            index: 1207,
        })));
        messages.push(Message::CommandResult(Err(ControllerError::NotController(
            None,
        ))));
        messages.extend(voter_requests().into_iter().map(Message::VoterRequest));
        messages.push(Message::VoterResult(Ok(())));
        messages.extend(
            voter_errors()
                .into_iter()
                .map(|e| Message::VoterResult(Err(e))),
        );
        messages.push(Message::QuorumStatus(QuorumStatus {
            leader_id: 1,
            term: 7,
            high_watermark: 1207,
            voters: vec![(1, Some(1207)), (2, None)],
            observers: vec![(5, 1199)],
            nodes: BTreeMap::from([
                (
                    1,
                    ("c1.internal:9093".to_string(), Some(Uuid::from_u128(0xd11))),
                ),
                (2, ("c2.internal:9093".to_string(), None)),
            ]),
        }));
        messages.extend(metadata_updates().into_iter().map(Message::MetadataUpdate));
        messages.push(Message::MetadataReply(
            metadata_updates().swap_remove(0),
            Some(1),
            BTreeMap::from([
                (1, "c1.internal:9093".to_string()),
                (2, "c2.internal:9093".to_string()),
            ]),
        ));
        messages.push(Message::FetchMetadata(1207, 500));
        messages
    }

    /// Optional fields left out (the fixtures set them).
    fn bare() -> Vec<Message> {
        vec![
            Message::Command(ControllerCommand::RegisterBroker {
                node_id: 6,
                incarnation: Uuid::nil(),
                endpoint: Endpoint {
                    host: "b6".into(),
                    port: 1,
                },
                rack: None,
                listeners: BTreeMap::new(),
                supported_features: None,
            }),
            Message::Command(ControllerCommand::ElectLeaders {
                election: ElectionType::Preferred,
                partitions: None,
            }),
            Message::Command(ControllerCommand::DeleteAcls {
                filters: vec![AclFilter {
                    resource_type: ResourceType::Topic,
                    resource_name: None,
                    pattern_type: PatternType::Any,
                    principal: None,
                    host: Some("*".into()),
                    operation: Operation::All,
                    permission: Permission::Any,
                }],
            }),
            Message::Outcome(CommandOutcome::Topics(vec![])),
            Message::QuorumStatus(QuorumStatus {
                leader_id: 3,
                term: 1,
                high_watermark: 0,
                voters: vec![],
                observers: vec![],
                nodes: BTreeMap::new(),
            }),
            Message::MetadataUpdate(MetadataUpdate::Image {
                applied_index: 0,
                image: ClusterImage::default(),
            }),
            Message::MetadataReply(
                MetadataUpdate::Batches {
                    batches: vec![],
                    applied_index: 3,
                },
                None,
                BTreeMap::new(),
            ),
        ]
    }

    fn round_trip(message: &Message) -> Message {
        let bytes = message.encode(NEWEST_VERSION);
        let mut r = Reader::new(&bytes);
        let back = Message::decode(message.kind(), &mut r, NEWEST_VERSION)
            .unwrap_or_else(|e| panic!("{}: {e}", message.name()));
        assert!(r.is_empty(), "{}: bytes left over", message.name());
        back
    }

    #[test]
    fn every_message_round_trips() {
        for message in one_of_each().iter().chain(&bare()) {
            assert_eq!(&round_trip(message), message, "{}", message.name());
        }
        // The image is rebuilt from its records: the same image, digest and epoch.
        let image = cluster_image();
        assert!(image.brokers[&1].supported_features.is_some() && image.brokers[&5].fenced);
        assert!(!image.client_quotas.is_empty() && !image.scram_credentials.is_empty());
        let Message::MetadataUpdate(MetadataUpdate::Image { image: back, .. }) =
            round_trip(&Message::MetadataUpdate(MetadataUpdate::Image {
                applied_index: 1,
                image: image.clone(),
            }))
        else {
            panic!("not an image");
        };
        assert_eq!(back.digest(), image.digest());
        assert_eq!(back.features.epoch, 31);
    }

    /// Codes 1..=n in the order of `values` (one of each variant), distinct names, and a
    /// reader that refuses code n + 1 by number: a variant added to the reader without a
    /// value here fails.
    fn codes_in_order<T>(
        what: &str,
        values: &[T],
        variant: impl Fn(&T) -> Variant,
        refusal: impl Fn(u16) -> WireError,
    ) {
        let codes: Vec<u16> = values.iter().map(|v| variant(v).code).collect();
        let expected: Vec<u16> = (1..=values.len() as u16).collect();
        assert_eq!(codes, expected, "{what} codes");
        let names: BTreeSet<&str> = values.iter().map(|v| variant(v).name).collect();
        assert_eq!(names.len(), values.len(), "{what} names are distinct");
        let next = values.len() as u16 + 1;
        let error = refusal(next).to_string();
        assert!(
            error.contains(&format!("unknown {what} code {next}")),
            "{what}: {error}"
        );
    }

    fn refusal_of(kind: &str, bytes: Vec<u8>) -> WireError {
        Message::decode(kind, &mut Reader::new(&bytes), NEWEST_VERSION).unwrap_err()
    }

    #[test]
    fn every_variant_has_its_own_code_and_unknown_codes_are_refused() {
        let code = |code: u16| code.to_be_bytes().to_vec();
        codes_in_order("controller command", &commands(), command_variant, |c| {
            refusal_of("command", code(c))
        });
        codes_in_order("command outcome", &outcomes(), outcome_variant, |c| {
            refusal_of("outcome", code(c))
        });
        codes_in_order("controller error", &errors(), error_variant, |c| {
            refusal_of("error", code(c))
        });
        codes_in_order(
            "voter request",
            &voter_requests(),
            voter_request_variant,
            |c| refusal_of("voter-request", code(c)),
        );
        codes_in_order(
            "voter change error",
            &voter_errors(),
            voter_error_variant,
            |c| {
                let mut w = Writer::new();
                w.bool(false);
                w.u16(c);
                w.string("");
                refusal_of("voter-result", w.into_bytes())
            },
        );
        codes_in_order(
            "metadata update",
            &metadata_updates(),
            metadata_update_variant,
            |c| refusal_of("metadata-update", code(c)),
        );
    }

    #[test]
    fn a_version_this_release_does_not_read_is_refused_by_name() {
        let newer = NEWEST_VERSION + 1;
        for message in one_of_each() {
            let bytes = message.encode(NEWEST_VERSION);
            let error = Message::decode(message.kind(), &mut Reader::new(&bytes), newer)
                .unwrap_err()
                .to_string();
            assert!(
                error.contains(&format!("version {newer} is not one this release reads")),
                "{}: {error}",
                message.name()
            );
        }
    }

    #[test]
    fn a_newer_writers_tagged_fields_are_passed_over() {
        for message in one_of_each() {
            let mut bytes = message.encode(NEWEST_VERSION);
            // Every message ends in its own tagged-field section, empty today: one 0.
            assert_eq!(bytes.pop(), Some(0), "{}", message.name());
            let mut later = Writer::new();
            later.tagged(&[(7, field(|w| w.string("from a later release")))]);
            bytes.extend(later.into_bytes());
            let mut r = Reader::new(&bytes);
            let back = Message::decode(message.kind(), &mut r, NEWEST_VERSION)
                .unwrap_or_else(|e| panic!("{}: {e}", message.name()));
            assert!(r.is_empty());
            assert_eq!(back, message);
        }
    }

    fn decode_as_every_kind(bytes: &[u8]) {
        for kind in KINDS {
            let _ = Message::decode(kind, &mut Reader::new(bytes), NEWEST_VERSION);
        }
    }

    proptest::proptest! {
        /// Bytes from a peer never panic a reader: any mutation of real messages, and any
        /// bytes at all, are read or refused.
        #[test]
        fn damaged_messages_are_refused_not_panicked_on(
            which in 0usize..1024,
            flips in proptest::collection::vec((0usize..8192, proptest::num::u8::ANY), 1..8),
            cut in 0usize..8192,
        ) {
            let messages = one_of_each();
            let mut bytes = messages[which % messages.len()].encode(NEWEST_VERSION);
            for (at, value) in flips {
                let len = bytes.len();
                bytes[at % len] ^= value;
            }
            bytes.truncate(cut);
            decode_as_every_kind(&bytes);
        }

        #[test]
        fn random_bytes_are_refused_not_panicked_on(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512),
        ) {
            decode_as_every_kind(&bytes);
        }
    }

    #[test]
    fn every_committed_fixture_still_decodes() {
        let dir = fixtures_dir("controller-rpc");
        for message in one_of_each() {
            let bytes = message.encode(NEWEST_VERSION);
            let name = format!("{}-v{NEWEST_VERSION}.bin", message.name());
            let path = dir.join(&name);
            assert!(
                path.exists() || std::env::var_os("OXBOW_WRITE_FIXTURES").is_some(),
                "{name} has no fixture: run `OXBOW_WRITE_FIXTURES=1 cargo test -p oxbow-broker --lib command_format` and commit broker/tests/fixtures/controller-rpc/{name}"
            );
            let committed = fixture(&path, &bytes);
            assert_eq!(committed, bytes, "{name} is encoded as before");
        }
        // Every version ever committed, not only the newest, must decode: a node of the
        // release before still sends it during a rolling upgrade.
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().to_string();
            let (stem, version) = file
                .strip_suffix(".bin")
                .and_then(|name| name.rsplit_once("-v"))
                .unwrap_or_else(|| panic!("{file}: not <kind>[-<variant>]-v<version>.bin"));
            let version: u16 = version.parse().unwrap();
            let kind = KINDS
                .into_iter()
                .find(|kind| stem == *kind || stem.starts_with(&format!("{kind}-")))
                .unwrap_or_else(|| panic!("{file}: no message kind"));
            let bytes = std::fs::read(&path).unwrap();
            let mut r = Reader::new(&bytes);
            let decoded =
                Message::decode(kind, &mut r, version).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert!(r.is_empty(), "{file}: bytes left over");
            assert_eq!(decoded.name(), stem, "{file} holds what its name says");
            assert_eq!(
                decoded.encode(version),
                bytes,
                "{file} is encoded as before"
            );
            read += 1;
        }
        assert!(read >= one_of_each().len());
    }
}
