//! A real `oxbow` process on free loopback ports and a raw Kafka client built on
//! `kafka-protocol`, shared by the `server_*` tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, BrokerId, CreateTopicsRequest,
    CreateTopicsResponse, FetchRequest, FetchResponse, MetadataRequest, MetadataResponse,
    ProduceRequest, ProduceResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

pub const PRODUCE_VERSION: i16 = 9;
pub const FETCH_VERSION: i16 = 12;
pub const METADATA_VERSION: i16 = 12;
pub const CREATE_TOPICS_VERSION: i16 = 7;
pub const LIST_OFFSETS_VERSION: i16 = 7;
/// Kafka's default max.message.bytes: 1 MiB plus the 12-byte log overhead.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024 + 12;
pub const STORED_TOPIC: &str = "stored";
pub const STORED_VALUES: [&str; 3] = ["first", "second", "third"];
pub const WAIT: Duration = Duration::from_secs(60);

pub struct Broker {
    pub child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Broker {
    /// Starts `oxbow` with `overrides`, waits until it accepts connections and stores
    /// [`STORED_VALUES`] in partition 0 of [`STORED_TOPIC`].
    pub fn start(overrides: &[&str]) -> Broker {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("oxbow.log")).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_oxbow"));
        let data = dir.path().join("data");
        for setting in [
            format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
            format!("metrics.listener=127.0.0.1:{}", free_port()),
            format!("log.dirs={}", data.display()),
        ]
        .iter()
        .map(String::as_str)
        .chain(overrides.iter().copied())
        {
            command.arg("--override").arg(setting);
        }
        let child = command
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut broker = Broker { child, port, dir };
        broker.wait_listening();
        broker.store_known_records();
        broker
    }

    pub fn wait_listening(&mut self) {
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("oxbow exited during start ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "oxbow is not listening:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("oxbow.log")).unwrap_or_default()
    }

    pub fn client(&self) -> Client {
        Client::connect(self.port)
    }

    pub fn store_known_records(&mut self) {
        let mut client = self.client();
        let created = client.create_topics(vec![topic(STORED_TOPIC, 1)]);
        assert_eq!(created.topics[0].error_code, 0, "{created:?}");
        let response = client.produce(STORED_TOPIC, 0, batch(&STORED_VALUES, 0));
        let partition = &response.responses[0].partition_responses[0];
        assert_eq!(partition.error_code, 0, "{partition:?}");
        assert_eq!(partition.base_offset, 0);
    }

    /// From a fresh connection: the broker answers, and the stored records and offsets
    /// are exactly those stored by [`Broker::start`].
    pub fn assert_serving_and_intact(&mut self) {
        assert!(
            self.child.try_wait().unwrap().is_none(),
            "oxbow died:\n{}",
            self.log()
        );
        let mut client = self.client();
        let versions = client.api_versions(3);
        assert_eq!(versions.error_code, 0);
        let fetched = client.fetch(STORED_TOPIC, 0, 0);
        let partition = &fetched.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "{partition:?}");
        assert_eq!(partition.high_watermark, STORED_VALUES.len() as i64);
        let mut records = partition.records.clone().unwrap_or_default();
        let mut values = Vec::new();
        while records.has_remaining() {
            for record in RecordBatchDecoder::decode(&mut records).unwrap().records {
                values.push((
                    record.offset,
                    String::from_utf8(record.value.unwrap().to_vec()).unwrap(),
                ));
            }
        }
        let expected: Vec<(i64, String)> = STORED_VALUES
            .iter()
            .enumerate()
            .map(|(offset, value)| (offset as i64, value.to_string()))
            .collect();
        assert_eq!(values, expected);
    }

    pub fn assert_logged(&self, needle: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.log().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no log line with {needle:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Client {
    pub stream: TcpStream,
    pub correlation_id: i32,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        Client {
            stream,
            correlation_id: 0,
        }
    }

    pub fn send_frame(&mut self, payload: &[u8]) {
        let mut frame = Vec::with_capacity(payload.len() + 4);
        frame.extend_from_slice(&(payload.len() as i32).to_be_bytes());
        frame.extend_from_slice(payload);
        self.stream.write_all(&frame).unwrap();
    }

    /// Header and body of a request, without the size prefix.
    pub fn encode<R: Encodable>(&mut self, key: ApiKey, version: i16, request: &R) -> BytesMut {
        self.correlation_id += 1;
        let mut payload = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("server_bad_input")))
            .encode(&mut payload, key.request_header_version(version))
            .unwrap();
        request
            .encode(&mut payload, version)
            .unwrap_or_else(|e| panic!("encoding {key:?} v{version}: {e}"));
        payload
    }

    /// The next response frame, or `None` when the broker closed the connection.
    pub fn receive(&mut self) -> Option<Bytes> {
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

    pub fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        let payload = self.encode(key, version, request);
        self.send_frame(&payload);
        let mut body = self.receive().expect("the broker closed the connection");
        let header = ResponseHeader::decode(&mut body, key.response_header_version(version))
            .expect("response header");
        assert_eq!(header.correlation_id, self.correlation_id);
        Resp::decode(&mut body, version).expect("response body")
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
            .with_client_software_name(StrBytes::from_static_str("server-bad-input"))
            .with_client_software_version(StrBytes::from_static_str("1"));
        self.call(ApiKey::ApiVersions, version, &request)
    }

    pub fn create_topics(&mut self, topics: Vec<CreatableTopic>) -> CreateTopicsResponse {
        let request = CreateTopicsRequest::default()
            .with_topics(topics)
            .with_timeout_ms(10_000);
        self.call(ApiKey::CreateTopics, CREATE_TOPICS_VERSION, &request)
    }

    pub fn produce(&mut self, topic: &str, partition: i32, records: Bytes) -> ProduceResponse {
        let payload = self.encode(
            ApiKey::Produce,
            PRODUCE_VERSION,
            &produce_request(topic, partition, records),
        );
        self.send_frame(&payload);
        let mut body = self.receive().expect("the broker closed the connection");
        ResponseHeader::decode(
            &mut body,
            ApiKey::Produce.response_header_version(PRODUCE_VERSION),
        )
        .unwrap();
        ProduceResponse::decode(&mut body, PRODUCE_VERSION).unwrap()
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
        self.call(ApiKey::Fetch, FETCH_VERSION, &request)
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
        self.call(ApiKey::Metadata, METADATA_VERSION, &request)
    }
}

pub fn name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_string()))
}

pub fn topic(topic: &str, partitions: i32) -> CreatableTopic {
    CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(partitions)
        .with_replication_factor(1)
}

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
                Some(Bytes::from_static(b"server_bad_input")),
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

pub fn partition_error(response: &ProduceResponse) -> i16 {
    response.responses[0].partition_responses[0].error_code
}
