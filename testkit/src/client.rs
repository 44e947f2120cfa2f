//! A raw Kafka client on loopback, built on `kafka-protocol`: it sends requests of any
//! API and version one at a time, or any bytes at all (garbage, torn frames), and tells
//! when the broker closed the connection. Also the request builders the tests share.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, CreateTopicsRequest,
    CreateTopicsResponse, FetchRequest, FetchResponse, MetadataRequest, MetadataResponse,
    ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::{Request, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use oxbow_kafka_client::{decode_response_and_rest, encode_request};

use crate::process::WAIT;

pub const PRODUCE_VERSION: i16 = 9;
pub const FETCH_VERSION: i16 = 12;
pub const METADATA_VERSION: i16 = 12;
pub const CREATE_TOPICS_VERSION: i16 = 7;
pub const LIST_OFFSETS_VERSION: i16 = 7;
/// Kafka's default max.message.bytes: 1 MiB plus the 12-byte log overhead.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024 + 12;

/// One connection; requests go one at a time, each with the next correlation id.
#[derive(Debug)]
pub struct RawClient {
    pub stream: TcpStream,
    pub correlation_id: i32,
}

impl RawClient {
    pub fn connect(port: u16) -> RawClient {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connecting to 127.0.0.1:{port}: {e}"));
        stream.set_read_timeout(Some(WAIT)).unwrap();
        RawClient {
            stream,
            correlation_id: 0,
        }
    }

    /// Writes `payload` with its size prefix.
    pub fn send_frame(&mut self, payload: &[u8]) {
        let mut frame = Vec::with_capacity(payload.len() + 4);
        frame.extend_from_slice(&(payload.len() as i32).to_be_bytes());
        frame.extend_from_slice(payload);
        self.stream.write_all(&frame).unwrap();
    }

    /// Header and body of a request with the next correlation id, without the size prefix
    /// (framed as every Oxbow client frames them: `oxbow_kafka_client`).
    pub fn encode<R: Request>(&mut self, key: ApiKey, version: i16, request: &R) -> BytesMut {
        assert_eq!(
            key as i16,
            R::KEY,
            "{key:?} named for another API's request"
        );
        self.correlation_id += 1;
        encode_request(
            request,
            version,
            self.correlation_id,
            Some(StrBytes::from_static_str("oxbow-test")),
        )
        .unwrap_or_else(|e| panic!("encoding {key:?} v{version}: {e}"))
    }

    /// The next response frame, or `None` when the broker closed the connection (end of
    /// stream or a reset). Any other failure, a read timeout too, fails the test.
    pub fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        match self.stream.read_exact(&mut size) {
            Ok(()) => {}
            Err(error)
                if matches!(
                    error.kind(),
                    ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
                ) =>
            {
                return None;
            }
            Err(error) => panic!("reading a response failed: {error}"),
        }
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut body).unwrap();
        Some(Bytes::from(body))
    }

    /// Sends `request` at `version` and decodes the answer at the same version: the
    /// correlation id must match and the body must be used up exactly.
    pub fn request<Req: Request>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Req::Response {
        let payload = self.encode(key, version, request);
        self.send_frame(&payload);
        let body = self
            .read_frame()
            .unwrap_or_else(|| panic!("{key:?} v{version}: the broker closed the connection"));
        let (decoded, left) = decode_response_and_rest::<Req>(body, version, self.correlation_id)
            .unwrap_or_else(|e| panic!("{key:?} v{version}: response: {e}"));
        assert_eq!(left, 0, "{key:?} v{version}: response has trailing bytes");
        decoded
    }

    /// True when the broker closed the connection (a read sees end of stream or a reset).
    pub fn is_closed_by_broker(&mut self) -> bool {
        let mut byte = [0u8; 1];
        match self.stream.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(error) => error.kind() == ErrorKind::ConnectionReset,
        }
    }

    pub fn api_versions(&mut self, version: i16) -> ApiVersionsResponse {
        let request = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("oxbow-testkit"))
            .with_client_software_version(StrBytes::from_static_str("1"));
        self.request(ApiKey::ApiVersions, version, &request)
    }

    pub fn create_topics(&mut self, topics: Vec<CreatableTopic>) -> CreateTopicsResponse {
        let request = CreateTopicsRequest::default()
            .with_topics(topics)
            .with_timeout_ms(10_000);
        self.request(ApiKey::CreateTopics, CREATE_TOPICS_VERSION, &request)
    }

    pub fn produce(&mut self, topic: &str, partition: i32, records: Bytes) -> ProduceResponse {
        self.request(
            ApiKey::Produce,
            PRODUCE_VERSION,
            &produce_request(topic, partition, records),
        )
    }

    pub fn fetch(&mut self, topic: &str, partition: i32, offset: i64) -> FetchResponse {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(64 * 1024 * 1024)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(name(topic))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(8 * 1024 * 1024),
                    ]),
            ]);
        self.request(ApiKey::Fetch, FETCH_VERSION, &request)
    }

    pub fn metadata(&mut self, topics: &[&str], allow_create: bool) -> MetadataResponse {
        let request = MetadataRequest::default()
            .with_allow_auto_topic_creation(allow_create)
            .with_topics(Some(
                topics
                    .iter()
                    .map(|t| MetadataRequestTopic::default().with_name(Some(name(t))))
                    .collect(),
            ));
        self.request(ApiKey::Metadata, METADATA_VERSION, &request)
    }
}

pub fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

/// A topic to create with `partitions` partitions of one replica.
pub fn topic(topic: &str, partitions: i32) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(1)
}

/// `acks=all` Produce of `records` to one partition.
pub fn produce_request(topic: &str, partition: i32, records: Bytes) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records)),
                ]),
        ])
}

/// One uncompressed v2 batch with a record per value (keys and a header included).
pub fn batch(values: &[&str], value_padding: usize) -> Bytes {
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(index, value)| {
            let mut bytes = value.as_bytes().to_vec();
            bytes.resize(bytes.len() + value_padding, b'.');
            let mut headers = IndexMap::new();
            headers.insert(
                StrBytes::from_static_str("source"),
                Some(Bytes::from_static(b"oxbow-testkit")),
            );
            Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: -1,
                producer_epoch: -1,
                timestamp_type: TimestampType::Creation,
                offset: index as i64,
                sequence: -1,
                timestamp: 1_700_000_000_000 + index as i64,
                key: Some(Bytes::from(format!("key-{index}"))),
                value: Some(Bytes::from(bytes)),
                headers,
            }
        })
        .collect();
    let mut encoded = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut encoded,
        &records,
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    encoded.freeze()
}

/// One batch of one record, exactly `size` bytes long.
pub fn batch_of_size(size: usize) -> Bytes {
    let mut padding = size.saturating_sub(batch(&[""], 0).len());
    for _ in 0..8 {
        let records = batch(&[""], padding);
        if records.len() == size {
            return records;
        }
        // Varint lengths grow with the value: adjust by the difference.
        padding = (padding as i64 + size as i64 - records.len() as i64) as usize;
    }
    panic!("no batch of exactly {size} bytes");
}

/// The error code of the first partition of a Produce response.
pub fn partition_error(response: &ProduceResponse) -> i16 {
    response.responses[0].partition_responses[0].error_code
}
