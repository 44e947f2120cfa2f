//! One real `oxbow` process on free loopback ports, with its data and log in one
//! directory that outlives restarts; SIGKILL, SIGTERM and restart on the same ports and
//! data; waiting on conditions (the port accepting, a log line), never on time.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::client::RawClient;

/// How long a start, or a wait for a log line, may take before the broker counts as broken.
pub const WAIT: Duration = Duration::from_secs(60);

/// A port that was free a moment ago (bind to port 0, read it, release it).
pub fn free_port() -> u16 {
    // Below the ephemeral range (32768-): a port the kernel hands out for a bind to port 0
    // can be taken, before the broker binds it, by the ephemeral end of any outgoing
    // connection (seen in CI: "Address already in use" with many clusters in parallel).
    // Ports from 11000-18999, spread by process id, are never handed out that way.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 11_000;
    const COUNT: u32 = 8_000;
    let start = std::process::id().wrapping_mul(7_919);
    for _ in 0..COUNT {
        let offset = start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)) % COUNT;
        let port = u16::try_from(FIRST + offset).expect("below 19000");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {FIRST}-{}", FIRST + COUNT - 1)
}

/// Where the `oxbow` binary is: `$OXBOW_BINARY`, else `oxbow` in the cargo target
/// directory the running test was built into (`target/<profile>/deps/<test>` →
/// `target/<profile>/oxbow`). Cargo builds it for the broker's integration tests, and
/// `cargo test --workspace` for the e2e crate's.
pub fn oxbow_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("OXBOW_BINARY") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().expect("locating the test executable");
    let candidate = exe
        .parent()
        .and_then(Path::parent)
        .map(|profile| profile.join("oxbow"))
        .expect("the test executable has no target directory");
    assert!(
        candidate.exists(),
        "{} is missing: build it with `cargo build -p oxbow-broker --bin oxbow` or set OXBOW_BINARY",
        candidate.display()
    );
    candidate
}

/// GET `path` on `127.0.0.1:port` (a metrics listener): (status, body), or `None` when
/// nothing answers there.
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

/// A running (or stopped) broker: data in `dir/data`, the log of every run in
/// `dir/oxbow.log`. Dropping it kills the process.
#[derive(Debug)]
pub struct BrokerProcess {
    child: Option<Child>,
    binary: PathBuf,
    pub port: u16,
    pub metrics_port: u16,
    pub dir: PathBuf,
    pub data: PathBuf,
    overrides: Vec<String>,
    /// Where the current run's part of the log begins.
    run_log_start: usize,
    /// The directory, when the broker made it itself ([`Self::start_temp`]).
    _temp: Option<tempfile::TempDir>,
}

impl BrokerProcess {
    /// Starts a broker with its data and log in `dir` and the extra `overrides`
    /// (`key=value`), and waits until it accepts connections.
    pub fn start(dir: &Path, overrides: &[&str]) -> BrokerProcess {
        Self::start_in(dir.to_path_buf(), None, overrides)
    }

    /// [`Self::start`] in a temporary directory the broker owns (removed on drop).
    pub fn start_temp(overrides: &[&str]) -> BrokerProcess {
        let temp = tempfile::tempdir().expect("creating a temporary directory");
        Self::start_in(temp.path().to_path_buf(), Some(temp), overrides)
    }

    fn start_in(
        dir: PathBuf,
        temp: Option<tempfile::TempDir>,
        overrides: &[&str],
    ) -> BrokerProcess {
        std::fs::create_dir_all(&dir).expect("creating the broker directory");
        let mut broker = BrokerProcess {
            child: None,
            binary: oxbow_binary(),
            port: free_port(),
            metrics_port: free_port(),
            data: dir.join("data"),
            dir,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            run_log_start: 0,
            _temp: temp,
        };
        broker.restart(&[]);
        broker
    }

    /// Starts the broker again on the same ports and data (after [`Self::sigkill`] or
    /// [`Self::stop`]), with `extra` overrides on top of those given at start, and waits
    /// until it accepts connections.
    pub fn restart(&mut self, extra: &[&str]) {
        assert!(self.child.is_none(), "the broker is still running");
        self.run_log_start = self.log().len();
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("oxbow.log"))
            .expect("opening the broker log");
        let mut command = Command::new(&self.binary);
        let settings = [
            format!("listeners=PLAINTEXT://127.0.0.1:{}", self.port),
            format!("metrics.listener=127.0.0.1:{}", self.metrics_port),
            format!("log.dirs={}", self.data.display()),
        ];
        for setting in settings
            .iter()
            .chain(&self.overrides)
            .map(String::as_str)
            .chain(extra.iter().copied())
        {
            command.arg("--override").arg(setting);
        }
        let child = command
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("duplicating the log handle"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.binary.display()));
        self.child = Some(child);
        self.wait_listening();
    }

    fn wait_listening(&mut self) {
        let deadline = Instant::now() + WAIT;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait().expect("polling the broker")
            {
                self.child = None;
                panic!("oxbow exited during start ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "oxbow is not listening on {}:\n{}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `127.0.0.1:PORT` of the Kafka listener.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A new connection to the Kafka listener.
    pub fn client(&self) -> RawClient {
        RawClient::connect(self.port)
    }

    /// The broker's log of every run so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("oxbow.log")).unwrap_or_default()
    }

    /// The log of the current (or last) run only.
    pub fn run_log(&self) -> String {
        self.log()
            .get(self.run_log_start..)
            .unwrap_or_default()
            .to_string()
    }

    /// Waits until the current run has logged a line containing `needle`.
    pub fn wait_logged(&self, needle: &str) {
        let deadline = Instant::now() + WAIT;
        while !self.run_log().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no log line with {needle:?}:\n{}",
                self.run_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process id of the running broker.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the broker is not running").id()
    }

    /// Sends `signal` (`TERM`, `STOP`, `CONT`, …) through kill(1): the workspace forbids
    /// `unsafe`, which libc::kill would need.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Kills the broker with SIGKILL (no shutdown, no flush) and reaps it.
    pub fn sigkill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("sending SIGKILL");
            let status = child.wait().expect("reaping the broker");
            assert!(
                !status.success(),
                "the broker exited cleanly instead of dying from SIGKILL"
            );
        }
    }

    /// Stops the broker with SIGTERM and requires a clean exit (status 0).
    pub fn stop(&mut self) -> ExitStatus {
        self.signal("TERM");
        let mut child = self.child.take().expect("the broker is not running");
        let status = child.wait().expect("waiting for the broker");
        assert_eq!(
            status.code(),
            Some(0),
            "the broker exited with {status} after SIGTERM:\n{}",
            self.run_log()
        );
        status
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
