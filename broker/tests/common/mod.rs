//! A real `oxbow` process on loopback and a minimal raw Kafka client for tests that
//! need to send exact requests (duplicates, gaps, garbage).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

pub mod cluster;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A broker process with its own data directory.
pub struct Broker {
    pub child: Child,
    pub port: u16,
    pub metrics_port: u16,
    pub data: PathBuf,
    pub log: PathBuf,
}

impl Broker {
    pub fn start(data: &Path, extra: &[&str]) -> Self {
        let port = free_port();
        let metrics_port = free_port();
        Self::start_on(data, port, metrics_port, extra)
    }

    pub fn start_on(data: &Path, port: u16, metrics_port: u16, extra: &[&str]) -> Self {
        let log = data.with_extension(format!("{port}.log"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_oxbow"));
        command
            .arg("--override")
            .arg(format!("listeners=PLAINTEXT://127.0.0.1:{port}"))
            .arg("--override")
            .arg(format!("metrics.listener=127.0.0.1:{metrics_port}"))
            .arg("--override")
            .arg(format!("log.dirs={}", data.display()));
        for item in extra {
            command.arg("--override").arg(item);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let broker = Self {
            child,
            port,
            metrics_port,
            data: data.to_path_buf(),
            log,
        };
        broker.wait_until_listening();
        broker
    }

    fn wait_until_listening(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "broker did not start: {}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn client(&self) -> RawClient {
        RawClient::connect(self.port)
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// SIGKILL and reap.
    pub fn kill(mut self) {
        self.signal("KILL");
        self.child.wait().unwrap();
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends requests of any API and version, one at a time.
pub struct RawClient {
    pub stream: TcpStream,
    correlation_id: i32,
}

impl RawClient {
    pub fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Self {
            stream,
            correlation_id: 0,
        }
    }

    pub fn send_frame(&mut self, body: &[u8]) {
        let mut frame = BytesMut::new();
        frame.put_i32(body.len() as i32);
        frame.extend_from_slice(body);
        self.stream.write_all(&frame).unwrap();
    }

    /// The next response frame, or `None` when the broker closed the connection.
    pub fn read_frame(&mut self) -> Option<Bytes> {
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size).ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
        self.stream.read_exact(&mut body).ok()?;
        Some(Bytes::from(body))
    }

    pub fn request<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> Resp {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("oxbow-test")));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .unwrap();
        request.encode(&mut body, version).unwrap();
        self.send_frame(&body);
        let mut response = self.read_frame().expect("broker closed the connection");
        let header =
            ResponseHeader::decode(&mut response, key.response_header_version(version)).unwrap();
        assert_eq!(header.correlation_id, self.correlation_id);
        let decoded = Resp::decode(&mut response, version).unwrap();
        assert_eq!(response.remaining(), 0, "response has trailing bytes");
        decoded
    }
}
