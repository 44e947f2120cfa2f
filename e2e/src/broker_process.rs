//! The real `oxbow` binary as a child process: free loopback ports, a log directory that
//! outlives restarts, SIGKILL, and waiting on conditions (the port accepting) rather than
//! on time.
//!
//! The binary is `$OXBOW_BINARY`, else `oxbow` in the cargo target directory the running
//! test was built into (`cargo test --workspace` builds it with the broker's tests).

use std::fs::File;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// How long a start may take before the broker counts as broken.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running (or stopped) broker and the directory that holds its data and log.
#[derive(Debug)]
pub struct BrokerProcess {
    child: Option<Child>,
    binary: PathBuf,
    dir: PathBuf,
    port: u16,
    metrics_port: u16,
    overrides: Vec<String>,
}

/// A port that was free a moment ago (bind to port 0, read it, release it).
pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")
        .context("binding a loopback port")?
        .local_addr()
        .context("reading the bound address")?
        .port())
}

/// Where the `oxbow` binary is: `$OXBOW_BINARY`, else beside the test's deps directory.
pub fn oxbow_binary() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("OXBOW_BINARY") {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().context("locating the test executable")?;
    // target/<profile>/deps/<test> -> target/<profile>/oxbow
    let candidate = exe
        .parent()
        .and_then(Path::parent)
        .map(|profile| profile.join("oxbow"))
        .context("the test executable has no target directory")?;
    if !candidate.exists() {
        bail!(
            "{} is missing: build it with `cargo build -p oxbow-broker --bin oxbow` or set OXBOW_BINARY",
            candidate.display()
        );
    }
    Ok(candidate)
}

impl BrokerProcess {
    /// Starts a broker with its data and log in `dir` and the extra `overrides`
    /// (`key=value`), and waits until it accepts connections.
    pub fn start(dir: &Path, overrides: &[&str]) -> Result<BrokerProcess> {
        let mut broker = BrokerProcess {
            child: None,
            binary: oxbow_binary()?,
            dir: dir.to_path_buf(),
            port: free_port()?,
            metrics_port: free_port()?,
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
        };
        broker.restart(&[])?;
        Ok(broker)
    }

    /// `127.0.0.1:PORT` of the Kafka listener.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The broker's log so far (stdout and stderr of every run).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("oxbow.log")).unwrap_or_default()
    }

    /// Starts the broker again on the same ports and data (after [`Self::sigkill`] or
    /// [`Self::stop`]), with `extra` overrides on top of those given at start.
    pub fn restart(&mut self, extra: &[&str]) -> Result<()> {
        if self.child.is_some() {
            bail!("the broker is still running");
        }
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("oxbow.log"))
            .context("opening the broker log")?;
        let mut command = Command::new(&self.binary);
        let settings = [
            format!("listeners=PLAINTEXT://127.0.0.1:{}", self.port),
            format!("metrics.listener=127.0.0.1:{}", self.metrics_port),
            format!("log.dirs={}", self.dir.join("data").display()),
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
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("duplicating the log handle")?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        self.child = Some(child);
        self.wait_listening()
    }

    fn wait_listening(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait().context("polling the broker")?
            {
                self.child = None;
                bail!("oxbow exited during start ({status}):\n{}", self.log());
            }
            if Instant::now() >= deadline {
                bail!("oxbow is not listening on {}:\n{}", self.port, self.log());
            }
            // Polling a condition (the port), not sleeping as synchronisation.
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Kills the broker with SIGKILL (no shutdown, no flush) and reaps it.
    pub fn sigkill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().context("sending SIGKILL")?;
            let status = child.wait().context("reaping the broker")?;
            if status.success() {
                bail!("the broker exited cleanly instead of dying from SIGKILL");
            }
        }
        Ok(())
    }

    /// Stops the broker with SIGTERM through kill(1) (the workspace forbids `unsafe`) and
    /// waits for a clean exit.
    pub fn stop(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            let status = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .context("running kill -TERM")?;
            if !status.success() {
                bail!("kill -TERM failed");
            }
            let exit = child.wait().context("waiting for the broker")?;
            if !exit.success() {
                bail!(
                    "the broker exited with {exit} after SIGTERM:\n{}",
                    self.log()
                );
            }
        }
        Ok(())
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
