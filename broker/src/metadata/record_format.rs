//! Metadata records as bytes: each record carries its type and version ahead of its fields
//! (Kafka's `ApiMessageAndVersion` is the model), optional data sits in tagged fields, and
//! a record's type or version is written only once the finalized `metadata.version`
//! allows it, so every node that can run that level can read it.
//!
//! ```text
//!   record  = type: u16, version: u16, fields (per type and version), tagged fields
//!   batch   = format: u8 (1), count: uvarint, count × (length: uvarint, record)
//!   image   = features epoch: i64, batch (the records that build it from an empty image)
//! ```
//!
//! Types are Oxbow's own (its records are not Kafka's: a partition change carries the
//! whole partition state). The committed fixtures (`broker/tests/fixtures/metadata-records`)
//! hold the bytes of every type and version; a change that an older reader could not
//! decode fails the test that reads them.

use std::collections::BTreeMap;

use super::features::{MINIMUM_METADATA_VERSION, SCRAM_METADATA_VERSION, SupportedFeatures};
use super::image::ClusterImage;
use super::records::{
    AclBinding, Endpoint, ListenerEndpoints, MetadataBatch, MetadataRecord, PartitionState,
    ScramCredential, ScramMechanism,
};
use super::wire::{Reader, WireError, WireResult, Writer, field};
use crate::model::acl::{Operation, PatternType, Permission, ResourceType};
use crate::model::quota::{EntityName, QuotaEntity, QuotaKey, QuotaValue};

/// The batch format this release writes.
const BATCH_FORMAT: u8 = 1;

/// Every record type, its number on the wire and the newest version this release writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordType {
    pub id: u16,
    pub name: &'static str,
    pub version: u16,
    /// The lowest `metadata.version` at which the type may be written.
    pub since_metadata_version: i16,
}

pub const RECORD_TYPES: [RecordType; 18] = [
    rt(1, "ClusterIdentified"),
    rt(2, "BrokerRegistered"),
    rt(3, "BrokerFenced"),
    rt(4, "BrokerUnfenced"),
    rt(5, "BrokerUnregistered"),
    rt(6, "TopicCreated"),
    rt(7, "PartitionCreated"),
    rt(8, "PartitionChanged"),
    rt(9, "TopicConfigChanged"),
    rt(10, "TopicDeleted"),
    rt(11, "BrokerConfigChanged"),
    rt(12, "ProducerIdsAllocated"),
    RecordType {
        since_metadata_version: SCRAM_METADATA_VERSION,
        ..rt(13, "ScramCredentialSet")
    },
    RecordType {
        since_metadata_version: SCRAM_METADATA_VERSION,
        ..rt(14, "ScramCredentialRemoved")
    },
    rt(15, "AclCreated"),
    rt(16, "AclRemoved"),
    rt(17, "ClientQuotaChanged"),
    rt(18, "FeatureLevel"),
];

const fn rt(id: u16, name: &'static str) -> RecordType {
    RecordType {
        id,
        name,
        version: 0,
        since_metadata_version: MINIMUM_METADATA_VERSION,
    }
}

/// The type of `record`.
pub fn record_type(record: &MetadataRecord) -> RecordType {
    let id: u16 = match record {
        MetadataRecord::ClusterIdentified { .. } => 1,
        MetadataRecord::BrokerRegistered { .. } => 2,
        MetadataRecord::BrokerFenced { .. } => 3,
        MetadataRecord::BrokerUnfenced { .. } => 4,
        MetadataRecord::BrokerUnregistered { .. } => 5,
        MetadataRecord::TopicCreated { .. } => 6,
        MetadataRecord::PartitionCreated { .. } => 7,
        MetadataRecord::PartitionChanged { .. } => 8,
        MetadataRecord::TopicConfigChanged { .. } => 9,
        MetadataRecord::TopicDeleted { .. } => 10,
        MetadataRecord::BrokerConfigChanged { .. } => 11,
        MetadataRecord::ProducerIdsAllocated { .. } => 12,
        MetadataRecord::ScramCredentialSet { .. } => 13,
        MetadataRecord::ScramCredentialRemoved { .. } => 14,
        MetadataRecord::AclCreated { .. } => 15,
        MetadataRecord::AclRemoved { .. } => 16,
        MetadataRecord::ClientQuotaChanged { .. } => 17,
        MetadataRecord::FeatureLevel { .. } => 18,
    };
    RECORD_TYPES[usize::from(id) - 1]
}

/// Whether `record` may be written at `metadata_version` (0: not finalized yet, as while
/// a cluster is formatted — the first batch finalizes it).
pub fn allowed_at(record: &MetadataRecord, metadata_version: i16) -> bool {
    metadata_version == 0 || record_type(record).since_metadata_version <= metadata_version
}

pub(crate) fn endpoint(w: &mut Writer, e: &Endpoint) {
    w.string(&e.host);
    w.u16(e.port);
}

pub(crate) fn read_endpoint(r: &mut Reader<'_>) -> WireResult<Endpoint> {
    Ok(Endpoint {
        host: r.string("endpoint host")?,
        port: r.u16("endpoint port")?,
    })
}

pub(crate) fn partition_state(w: &mut Writer, s: &PartitionState) {
    w.i32_array(&s.replicas);
    w.i32_array(&s.in_sync_replicas);
    w.i32(s.leader);
    w.i32(s.leader_epoch);
    w.i32(s.partition_epoch);
    let mut tags = Vec::new();
    if !s.adding_replicas.is_empty() {
        tags.push((0, field(|w| w.i32_array(&s.adding_replicas))));
    }
    if !s.removing_replicas.is_empty() {
        tags.push((1, field(|w| w.i32_array(&s.removing_replicas))));
    }
    w.tagged(&tags);
}

pub(crate) fn read_partition_state(r: &mut Reader<'_>) -> WireResult<PartitionState> {
    let mut state = PartitionState {
        replicas: r.i32_array("replicas")?,
        in_sync_replicas: r.i32_array("in-sync replicas")?,
        leader: r.i32("leader")?,
        leader_epoch: r.i32("leader epoch")?,
        partition_epoch: r.i32("partition epoch")?,
        ..Default::default()
    };
    r.tagged(|tag, f| match tag {
        0 => f.i32_array("adding replicas").map(|v| {
            state.adding_replicas = v;
            true
        }),
        1 => f.i32_array("removing replicas").map(|v| {
            state.removing_replicas = v;
            true
        }),
        _ => Ok(false),
    })?;
    Ok(state)
}

pub(crate) fn acl(w: &mut Writer, a: &AclBinding) {
    w.i8(a.resource_type.code());
    w.string(&a.resource_name);
    w.i8(a.pattern_type.code());
    w.string(&a.principal);
    w.string(&a.host);
    w.i8(a.operation.code());
    w.i8(a.permission.code());
}

fn coded<T>(code: i8, what: &str, from: impl Fn(i8) -> Option<T>) -> WireResult<T> {
    from(code).ok_or_else(|| WireError::Invalid(format!("unknown {what} code {code}")))
}

/// An i8 type code as `T`; an unknown one is refused by name.
pub(crate) fn read_coded<T>(
    r: &mut Reader<'_>,
    what: &'static str,
    from: impl Fn(i8) -> Option<T>,
) -> WireResult<T> {
    coded(r.i8(what)?, what, from)
}

fn read_mechanism(r: &mut Reader<'_>) -> WireResult<ScramMechanism> {
    coded(
        r.i8("mechanism")?,
        "SCRAM mechanism",
        ScramMechanism::from_code,
    )
}

pub(crate) fn read_acl(r: &mut Reader<'_>) -> WireResult<AclBinding> {
    Ok(AclBinding {
        resource_type: read_coded(r, "resource type", ResourceType::from_code)?,
        resource_name: r.string("resource name")?,
        pattern_type: read_coded(r, "pattern type", PatternType::from_code)?,
        principal: r.string("principal")?,
        host: r.string("host")?,
        operation: read_coded(r, "operation", Operation::from_code)?,
        permission: read_coded(r, "permission", Permission::from_code)?,
    })
}

/// An entity side: absent (-1), the default (0) or a name (1).
fn entity_name(w: &mut Writer, name: &Option<EntityName>) {
    match name {
        None => w.i8(-1),
        Some(EntityName::Default) => w.i8(0),
        Some(EntityName::Named(n)) => {
            w.i8(1);
            w.string(n);
        }
    }
}

fn read_entity_name(r: &mut Reader<'_>) -> WireResult<Option<EntityName>> {
    match r.i8("entity kind")? {
        -1 => Ok(None),
        0 => Ok(Some(EntityName::Default)),
        1 => Ok(Some(EntityName::Named(r.string("entity name")?))),
        other => Err(WireError::Invalid(format!("unknown entity kind {other}"))),
    }
}

pub(crate) fn quota_entity(w: &mut Writer, entity: &QuotaEntity) {
    entity_name(w, &entity.user);
    entity_name(w, &entity.client_id);
}

pub(crate) fn read_quota_entity(r: &mut Reader<'_>) -> WireResult<QuotaEntity> {
    Ok(QuotaEntity {
        user: read_entity_name(r)?,
        client_id: read_entity_name(r)?,
    })
}

/// A key by Kafka's name for it, so the wire does not depend on the enum's order.
pub(crate) fn quota_key(w: &mut Writer, key: QuotaKey) {
    w.string(key.name());
}

pub(crate) fn read_quota_key(r: &mut Reader<'_>) -> WireResult<QuotaKey> {
    let name = r.string("quota key")?;
    QuotaKey::ALL
        .into_iter()
        .find(|k| k.name() == name)
        .ok_or_else(|| WireError::Invalid(format!("unknown quota key {name}")))
}

/// A quota set (its value) or removed (`None`).
pub(crate) fn quota_value(w: &mut Writer, value: Option<f64>) {
    match value {
        Some(v) => {
            w.bool(true);
            w.f64(v);
        }
        None => w.bool(false),
    }
}

pub(crate) fn read_quota_value(r: &mut Reader<'_>) -> WireResult<Option<f64>> {
    r.bool("quota set")?
        .then(|| r.f64("quota value"))
        .transpose()
}

pub(crate) fn listeners(w: &mut Writer, listeners: &ListenerEndpoints) {
    let entries: Vec<(&String, &Endpoint)> = listeners.iter().collect();
    w.array(&entries, |w, (name, e)| {
        w.string(name);
        endpoint(w, e);
    });
}

pub(crate) fn read_listeners(r: &mut Reader<'_>) -> WireResult<ListenerEndpoints> {
    Ok(r.array("listeners", 4, |r| {
        Ok((r.string("listener")?, read_endpoint(r)?))
    })?
    .into_iter()
    .collect())
}

pub(crate) fn scram_credential(w: &mut Writer, credential: &ScramCredential) {
    w.bytes(&credential.salt);
    w.bytes(&credential.stored_key);
    w.bytes(&credential.server_key);
    w.u32(credential.iterations);
}

pub(crate) fn read_scram_credential(r: &mut Reader<'_>) -> WireResult<ScramCredential> {
    Ok(ScramCredential {
        salt: r.bytes("salt")?,
        stored_key: r.bytes("stored key")?,
        server_key: r.bytes("server key")?,
        iterations: r.u32("iterations")?,
    })
}

pub(crate) fn supported_features(w: &mut Writer, features: &SupportedFeatures) {
    let entries: Vec<(&String, &(i16, i16))> = features.iter().collect();
    w.array(&entries, |w, (name, (min, max))| {
        w.string(name);
        w.i16(*min);
        w.i16(*max);
    });
}

pub(crate) fn read_supported_features(r: &mut Reader<'_>) -> WireResult<SupportedFeatures> {
    Ok(r.array("supported features", 5, |r| {
        Ok((
            r.string("feature")?,
            (r.i16("min level")?, r.i16("max level")?),
        ))
    })?
    .into_iter()
    .collect())
}

/// One record: type, version, fields.
pub fn encode_record(w: &mut Writer, record: &MetadataRecord) {
    let kind = record_type(record);
    w.u16(kind.id);
    w.u16(kind.version);
    let mut tags: Vec<(u32, Vec<u8>)> = Vec::new();
    match record {
        MetadataRecord::ClusterIdentified { cluster_id } => w.string(cluster_id),
        MetadataRecord::BrokerRegistered {
            node_id,
            incarnation,
            endpoint: e,
            rack,
            listeners,
            supported_features: features,
        } => {
            w.i32(*node_id);
            w.uuid(incarnation);
            endpoint(w, e);
            w.nullable_string(rack.as_deref());
            if !listeners.is_empty() {
                tags.push((0, field(|w| self::listeners(w, listeners))));
            }
            if let Some(features) = features {
                tags.push((1, field(|w| supported_features(w, features))));
            }
        }
        MetadataRecord::BrokerFenced { node_id }
        | MetadataRecord::BrokerUnfenced { node_id }
        | MetadataRecord::BrokerUnregistered { node_id } => w.i32(*node_id),
        MetadataRecord::TopicCreated {
            name,
            topic_id,
            replication_factor,
            configs,
        } => {
            w.string(name);
            w.uuid(topic_id);
            w.i16(*replication_factor);
            w.string_map(configs);
        }
        MetadataRecord::PartitionCreated {
            topic,
            partition,
            state,
        }
        | MetadataRecord::PartitionChanged {
            topic,
            partition,
            state,
        } => {
            w.string(topic);
            w.i32(*partition);
            partition_state(w, state);
        }
        MetadataRecord::TopicConfigChanged { name, configs } => {
            w.string(name);
            w.string_map(configs);
        }
        MetadataRecord::TopicDeleted { name, topic_id } => {
            w.string(name);
            w.uuid(topic_id);
        }
        MetadataRecord::BrokerConfigChanged { node_id, configs } => {
            w.i32(*node_id);
            w.string_map(configs);
        }
        MetadataRecord::ProducerIdsAllocated { next_producer_id } => w.i64(*next_producer_id),
        MetadataRecord::ScramCredentialSet {
            user,
            mechanism,
            credential,
        } => {
            w.string(user);
            w.i8(mechanism.code());
            scram_credential(w, credential);
        }
        MetadataRecord::ScramCredentialRemoved { user, mechanism } => {
            w.string(user);
            w.i8(mechanism.code());
        }
        MetadataRecord::AclCreated { acl: a } | MetadataRecord::AclRemoved { acl: a } => acl(w, a),
        MetadataRecord::ClientQuotaChanged { entity, key, value } => {
            quota_entity(w, entity);
            quota_key(w, *key);
            quota_value(w, value.map(|v| v.0));
        }
        MetadataRecord::FeatureLevel { name, level } => {
            w.string(name);
            w.i16(*level);
        }
    }
    w.tagged(&tags);
}

/// One record, or why it cannot be read: an unknown type or a version newer than this
/// release reads is named, so the node can say which release wrote it.
pub fn decode_record(r: &mut Reader<'_>) -> WireResult<MetadataRecord> {
    let id = r.u16("record type")?;
    let version = r.u16("record version")?;
    let kind = RECORD_TYPES
        .iter()
        .find(|t| t.id == id)
        .ok_or_else(|| WireError::Invalid(format!("unknown metadata record type {id}")))?;
    if version > kind.version {
        return Err(WireError::Invalid(format!(
            "{} record version {version} is newer than this release reads (up to {})",
            kind.name, kind.version
        )));
    }
    let record = match id {
        1 => MetadataRecord::ClusterIdentified {
            cluster_id: r.string("cluster id")?,
        },
        2 => {
            let node_id = r.i32("node id")?;
            let incarnation = r.uuid("incarnation")?;
            let endpoint = read_endpoint(r)?;
            let rack = r.nullable_string("rack")?;
            let mut listeners = BTreeMap::new();
            let mut features = None;
            r.tagged(|tag, f| match tag {
                0 => {
                    listeners = read_listeners(f)?;
                    Ok(true)
                }
                1 => {
                    features = Some(read_supported_features(f)?);
                    Ok(true)
                }
                _ => Ok(false),
            })?;
            return Ok(MetadataRecord::BrokerRegistered {
                node_id,
                incarnation,
                endpoint,
                rack,
                listeners,
                supported_features: features,
            });
        }
        3 => MetadataRecord::BrokerFenced {
            node_id: r.i32("node id")?,
        },
        4 => MetadataRecord::BrokerUnfenced {
            node_id: r.i32("node id")?,
        },
        5 => MetadataRecord::BrokerUnregistered {
            node_id: r.i32("node id")?,
        },
        6 => MetadataRecord::TopicCreated {
            name: r.string("topic")?,
            topic_id: r.uuid("topic id")?,
            replication_factor: r.i16("replication factor")?,
            configs: r.string_map("configs")?,
        },
        7 => MetadataRecord::PartitionCreated {
            topic: r.string("topic")?,
            partition: r.i32("partition")?,
            state: read_partition_state(r)?,
        },
        8 => MetadataRecord::PartitionChanged {
            topic: r.string("topic")?,
            partition: r.i32("partition")?,
            state: read_partition_state(r)?,
        },
        9 => MetadataRecord::TopicConfigChanged {
            name: r.string("topic")?,
            configs: r.string_map("configs")?,
        },
        10 => MetadataRecord::TopicDeleted {
            name: r.string("topic")?,
            topic_id: r.uuid("topic id")?,
        },
        11 => MetadataRecord::BrokerConfigChanged {
            node_id: r.i32("node id")?,
            configs: r.string_map("configs")?,
        },
        12 => MetadataRecord::ProducerIdsAllocated {
            next_producer_id: r.i64("next producer id")?,
        },
        13 => MetadataRecord::ScramCredentialSet {
            user: r.string("user")?,
            mechanism: read_mechanism(r)?,
            credential: read_scram_credential(r)?,
        },
        14 => MetadataRecord::ScramCredentialRemoved {
            user: r.string("user")?,
            mechanism: read_mechanism(r)?,
        },
        15 => MetadataRecord::AclCreated { acl: read_acl(r)? },
        16 => MetadataRecord::AclRemoved { acl: read_acl(r)? },
        17 => MetadataRecord::ClientQuotaChanged {
            entity: read_quota_entity(r)?,
            key: read_quota_key(r)?,
            value: read_quota_value(r)?.map(QuotaValue),
        },
        18 => MetadataRecord::FeatureLevel {
            name: r.string("feature")?,
            level: r.i16("level")?,
        },
        _ => unreachable_type(id)?,
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(record)
}

fn unreachable_type(id: u16) -> WireResult<MetadataRecord> {
    Err(WireError::Invalid(format!(
        "metadata record type {id} has no reader"
    )))
}

/// An image as the records that build it from an empty one, behind the features epoch
/// (which no record carries): how a snapshot holds the image, and how an observer too far
/// behind for batches is sent one.
pub fn encode_image(w: &mut Writer, image: &ClusterImage) {
    w.i64(image.features.epoch);
    encode_records(w, &image.to_records());
}

pub fn decode_image(r: &mut Reader<'_>) -> WireResult<ClusterImage> {
    let features_epoch = r.i64("features epoch")?;
    let mut image = ClusterImage::default();
    for record in &decode_batch(r)?.records {
        image.apply(record);
    }
    image.features.epoch = features_epoch;
    Ok(image)
}

/// One Raft entry's records.
pub fn encode_batch(w: &mut Writer, batch: &MetadataBatch) {
    encode_records(w, &batch.records);
}

/// [`encode_batch`] of records not held in a [`MetadataBatch`] (the RPC sends the feed's
/// batches without copying them into one).
pub fn encode_records(w: &mut Writer, records: &[MetadataRecord]) {
    w.u8(BATCH_FORMAT);
    w.uvarint(records.len() as u64);
    for record in records {
        let mut one = Writer::new();
        encode_record(&mut one, record);
        w.bytes(&one.into_bytes());
    }
}

pub fn decode_batch(r: &mut Reader<'_>) -> WireResult<MetadataBatch> {
    let format = r.u8("batch format")?;
    if format != BATCH_FORMAT {
        return Err(WireError::Invalid(format!(
            "metadata batch format {format} is not one this release reads ({BATCH_FORMAT})"
        )));
    }
    let count = r.uvarint("record count")?;
    if count > r.remaining() as u64 {
        return Err(WireError::Truncated("records"));
    }
    let mut records = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let bytes = r.bytes("record")?;
        let mut one = Reader::new(&bytes);
        records.push(decode_record(&mut one)?);
        // A newer version's fields past the ones known are the writer's; the record is
        // length-delimited, so the next one starts where it should.
    }
    Ok(MetadataBatch { records })
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use uuid::Uuid;

    use super::*;
    use crate::metadata::features;

    /// One record of every type, with every optional field set where the type has one.
    pub(crate) fn one_of_each() -> Vec<MetadataRecord> {
        let state = PartitionState {
            replicas: vec![1, 2, 3],
            in_sync_replicas: vec![1, 2],
            leader: 1,
            leader_epoch: 4,
            partition_epoch: 9,
            adding_replicas: vec![3],
            removing_replicas: vec![],
        };
        let acl = AclBinding {
            resource_type: ResourceType::Topic,
            resource_name: "orders".into(),
            pattern_type: PatternType::Prefixed,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: Operation::Write,
            permission: Permission::Allow,
        };
        vec![
            MetadataRecord::ClusterIdentified {
                cluster_id: "oxbow-fixture".into(),
            },
            MetadataRecord::BrokerRegistered {
                node_id: 1,
                incarnation: Uuid::from_u128(0x1234),
                endpoint: Endpoint {
                    host: "broker-1".into(),
                    port: 9093,
                },
                rack: Some("zone-a".into()),
                listeners: BTreeMap::from([(
                    "CLIENT".to_string(),
                    Endpoint {
                        host: "broker-1.example".into(),
                        port: 9092,
                    },
                )]),
                supported_features: Some(SupportedFeatures::from([
                    (features::METADATA_VERSION.to_string(), (7, 25)),
                    (features::TRANSACTION_VERSION.to_string(), (0, 2)),
                ])),
            },
            MetadataRecord::BrokerFenced { node_id: 1 },
            MetadataRecord::BrokerUnfenced { node_id: 1 },
            MetadataRecord::BrokerUnregistered { node_id: 2 },
            MetadataRecord::TopicCreated {
                name: "orders".into(),
                topic_id: Uuid::from_u128(0xabcd),
                replication_factor: 3,
                configs: BTreeMap::from([("cleanup.policy".to_string(), "compact".to_string())]),
            },
            MetadataRecord::PartitionCreated {
                topic: "orders".into(),
                partition: 0,
                state: state.clone(),
            },
            MetadataRecord::PartitionChanged {
                topic: "orders".into(),
                partition: 0,
                state: PartitionState {
                    removing_replicas: vec![2],
                    ..state
                },
            },
            MetadataRecord::TopicConfigChanged {
                name: "orders".into(),
                configs: BTreeMap::from([("retention.ms".to_string(), "1000".to_string())]),
            },
            MetadataRecord::TopicDeleted {
                name: "orders".into(),
                topic_id: Uuid::from_u128(0xabcd),
            },
            MetadataRecord::BrokerConfigChanged {
                node_id: -1,
                configs: BTreeMap::from([("min.insync.replicas".to_string(), "2".to_string())]),
            },
            MetadataRecord::ProducerIdsAllocated {
                next_producer_id: 5000,
            },
            MetadataRecord::ScramCredentialSet {
                user: "alice".into(),
                mechanism: ScramMechanism::Sha512,
                credential: ScramCredential {
                    salt: vec![1, 2, 3],
                    stored_key: vec![4; 64],
                    server_key: vec![5; 64],
                    iterations: 8192,
                },
            },
            MetadataRecord::ScramCredentialRemoved {
                user: "alice".into(),
                mechanism: ScramMechanism::Sha256,
            },
            MetadataRecord::AclCreated { acl: acl.clone() },
            MetadataRecord::AclRemoved { acl },
            MetadataRecord::ClientQuotaChanged {
                entity: QuotaEntity {
                    user: Some(EntityName::Named("alice".into())),
                    client_id: Some(EntityName::Default),
                },
                key: QuotaKey::ProducerByteRate,
                value: Some(QuotaValue(1_048_576.0)),
            },
            MetadataRecord::FeatureLevel {
                name: features::METADATA_VERSION.into(),
                level: 25,
            },
        ]
    }

    fn round_trip(record: &MetadataRecord) -> MetadataRecord {
        let mut w = Writer::new();
        encode_record(&mut w, record);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        let back = decode_record(&mut r).unwrap();
        assert!(r.is_empty());
        back
    }

    #[test]
    fn every_record_type_round_trips() {
        let records = one_of_each();
        let ids: Vec<u16> = records.iter().map(|r| record_type(r).id).collect();
        assert_eq!(ids, (1..=RECORD_TYPES.len() as u16).collect::<Vec<_>>());
        for record in &records {
            assert_eq!(&round_trip(record), record);
        }
        // Optional fields left out decode as absent.
        let bare = MetadataRecord::BrokerRegistered {
            node_id: 3,
            incarnation: Uuid::nil(),
            endpoint: Endpoint {
                host: "h".into(),
                port: 1,
            },
            rack: None,
            listeners: BTreeMap::new(),
            supported_features: None,
        };
        assert_eq!(round_trip(&bare), bare);
        let removed = MetadataRecord::ClientQuotaChanged {
            entity: QuotaEntity {
                user: None,
                client_id: Some(EntityName::Named("c".into())),
            },
            key: QuotaKey::RequestPercentage,
            value: None,
        };
        assert_eq!(round_trip(&removed), removed);
    }

    #[test]
    fn a_batch_round_trips_and_bad_bytes_are_refused_by_name() {
        let batch = MetadataBatch {
            records: one_of_each(),
        };
        let mut w = Writer::new();
        encode_batch(&mut w, &batch);
        let bytes = w.into_bytes();
        assert_eq!(decode_batch(&mut Reader::new(&bytes)).unwrap(), batch);
        for cut in [0, 1, 5, bytes.len() / 2, bytes.len() - 1] {
            assert!(
                decode_batch(&mut Reader::new(&bytes[..cut])).is_err(),
                "cut at {cut}"
            );
        }
        let unknown = [0u8, 99, 0, 0];
        let error = decode_record(&mut Reader::new(&unknown)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("unknown metadata record type 99")
        );
        let newer = [0u8, 18, 0, 1];
        let error = decode_record(&mut Reader::new(&newer)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("FeatureLevel record version 1 is newer")
        );
    }

    #[test]
    fn a_newer_writers_tagged_fields_are_passed_over() {
        let mut w = Writer::new();
        w.u16(3);
        w.u16(0);
        w.i32(7);
        w.tagged(&[(5, field(|w| w.string("from a later release")))]);
        let bytes = w.into_bytes();
        assert_eq!(
            decode_record(&mut Reader::new(&bytes)).unwrap(),
            MetadataRecord::BrokerFenced { node_id: 7 }
        );
    }

    /// The committed bytes of every record type and version.
    pub(crate) fn fixtures_dir(kind: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(kind)
    }

    /// Writes the fixture when asked (`OXBOW_WRITE_FIXTURES=1`, for a new type or
    /// version); otherwise reads it. A fixture once committed is never rewritten.
    pub(crate) fn fixture(path: &std::path::Path, bytes: &[u8]) -> Vec<u8> {
        if std::env::var_os("OXBOW_WRITE_FIXTURES").is_some() && !path.exists() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        std::fs::read(path).unwrap_or_else(|error| {
            panic!(
                "{}: {error} (a new record type or version needs its fixture: run the test with OXBOW_WRITE_FIXTURES=1 and commit it)",
                path.display()
            )
        })
    }

    #[test]
    fn every_committed_record_fixture_still_decodes() {
        let dir = fixtures_dir("metadata-records");
        for record in one_of_each() {
            let kind = record_type(&record);
            let mut w = Writer::new();
            encode_record(&mut w, &record);
            let bytes = w.into_bytes();
            let path = dir.join(format!(
                "{:02}-{}-v{}.bin",
                kind.id, kind.name, kind.version
            ));
            let committed = fixture(&path, &bytes);
            assert_eq!(
                committed, bytes,
                "{} v{} is encoded as before",
                kind.name, kind.version
            );
        }
        // Every version ever committed, not only the newest, must decode: what an older
        // release wrote is still in logs and snapshots.
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let mut r = Reader::new(&bytes);
            let decoded =
                decode_record(&mut r).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(r.is_empty(), "{}: bytes left over", path.display());
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            assert!(name.contains(record_type(&decoded).name), "{name}");
            read += 1;
        }
        assert!(read >= RECORD_TYPES.len());
    }

    #[test]
    fn scram_records_wait_for_their_metadata_version() {
        let scram = &one_of_each()[12];
        assert!(!allowed_at(scram, 10));
        assert!(allowed_at(scram, SCRAM_METADATA_VERSION));
        assert!(allowed_at(&one_of_each()[0], MINIMUM_METADATA_VERSION));
    }
}
