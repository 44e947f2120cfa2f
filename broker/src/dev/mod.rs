//! `oxbow dev --brokers N`: a local cluster of N separate `oxbow` processes on loopback,
//! each a combined broker and controller voter, data under one directory. It runs exactly
//! the plain commands it prints, so what works here works the same by hand. With
//! `--secure` every port asks for credentials ([`secure`]).

mod secure;

use std::path::PathBuf;

use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};

#[derive(Debug, clap::Args)]
pub struct DevArgs {
    /// Number of nodes (1, 3 or 5 make sensible quorums).
    #[arg(long, default_value_t = 3)]
    brokers: u16,
    /// Directory holding every node's data (`node-1`, `node-2`, ...).
    #[arg(long, default_value = "./oxbow-dev")]
    dir: PathBuf,
    /// Client port of node 1; node N listens on this + N - 1.
    #[arg(long, default_value_t = 9092)]
    base_port: u16,
    /// Controller port of node 1. With `--secure`, node N also replicates over mutual TLS
    /// on this + 100 + N - 1.
    #[arg(long, default_value_t = 19092)]
    controller_base_port: u16,
    /// Metrics port of node 1.
    #[arg(long, default_value_t = 9644)]
    metrics_base_port: u16,
    /// Secure every port: clients authenticate with SASL/SCRAM over TLS (user `admin`,
    /// password in `<dir>/admin.password`), brokers replicate and run the quorum over
    /// mutual TLS (on the controller port + 100), ACLs are on. Client configs for kcat and
    /// the Java client are written to `<dir>/kcat.conf` and `<dir>/client.properties`.
    #[arg(long)]
    secure: bool,
}

/// The `--override` flags of node `node` (1-based).
pub fn node_overrides(args: &DevArgs, node: u16, cluster_id: &str) -> Vec<String> {
    let voters: Vec<String> = (1..=args.brokers)
        .map(|n| format!("{n}@127.0.0.1:{}", args.controller_base_port + n - 1))
        .collect();
    vec![
        format!("node.id={node}"),
        "process.roles=broker,controller".into(),
        format!(
            "listeners=PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
            args.base_port + node - 1,
            args.controller_base_port + node - 1
        ),
        format!("controller.quorum.voters={}", voters.join(",")),
        format!(
            "log.dirs={}",
            args.dir.join(format!("node-{node}")).display()
        ),
        format!(
            "metrics.listener=127.0.0.1:{}",
            args.metrics_base_port + node - 1
        ),
        format!("cluster.id={cluster_id}"),
    ]
}

pub fn run(args: &DevArgs, extra_overrides: &[String]) -> i32 {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("oxbow dev: cannot start the runtime: {error}");
            return 1;
        }
    };
    match runtime.block_on(supervise(args, extra_overrides)) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(error) => {
            eprintln!("oxbow dev: {error:#}");
            1
        }
    }
}

async fn supervise(args: &DevArgs, extra_overrides: &[String]) -> anyhow::Result<bool> {
    use anyhow::Context;
    if args.brokers == 0 {
        anyhow::bail!("--brokers must be at least 1");
    }
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let id_file = args.dir.join("cluster.id");
    let cluster_id = match std::fs::read_to_string(&id_file) {
        Ok(id) if !id.trim().is_empty() => id.trim().to_string(),
        _ => {
            let id = uuid::Uuid::new_v4().simple().to_string();
            std::fs::write(&id_file, &id)
                .with_context(|| format!("writing {}", id_file.display()))?;
            id
        }
    };
    // Client configs name their files by absolute path: they work from any directory.
    let dir = std::path::absolute(&args.dir)
        .with_context(|| format!("resolving {}", args.dir.display()))?;
    let files = if args.secure {
        Some(secure::prepare(&dir)?)
    } else {
        None
    };
    let program = std::env::current_exe().context("locating the oxbow binary")?;
    let mut children: Vec<(u16, Child)> = Vec::new();
    // Each node's log lines, prefixed with the node: merged output an operator can read.
    let mut output = tokio::task::JoinSet::new();
    for node in 1..=args.brokers {
        let mut overrides = node_overrides(args, node, &cluster_id);
        if let Some(files) = &files {
            overrides.retain(|o| !o.starts_with("listeners="));
            overrides.extend(secure::overrides(
                files,
                args.base_port + node - 1,
                args.controller_base_port + 100 + node - 1,
                args.controller_base_port + node - 1,
            ));
        }
        overrides.extend(extra_overrides.iter().cloned());
        let flags: Vec<String> = overrides
            .iter()
            .flat_map(|o| ["--override".to_string(), o.clone()])
            .collect();
        // Quoted for a POSIX shell: pasted back, it starts the same node (`super.users`
        // holds a `;`).
        let shown: Vec<String> = flags.iter().map(|f| shell_quote(f)).collect();
        eprintln!(
            "oxbow dev: node {node}: {} {}",
            shell_quote(&program.display().to_string()),
            shown.join(" ")
        );
        let mut child = Command::new(&program)
            .args(&flags)
            .kill_on_drop(true)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .with_context(|| format!("starting node {node}"))?;
        if let Some(out) = child.stdout.take() {
            output.spawn(prefix_lines(node, out));
        }
        if let Some(err) = child.stderr.take() {
            output.spawn(prefix_lines(node, err));
        }
        children.push((node, child));
    }
    let bootstrap: Vec<String> = (1..=args.brokers)
        .map(|n| format!("127.0.0.1:{}", args.base_port + n - 1))
        .collect();
    eprintln!(
        "oxbow dev: {} node(s) of cluster {cluster_id}; bootstrap servers {}; Ctrl-C stops them all",
        args.brokers,
        bootstrap.join(",")
    );
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    if let Some(files) = &files {
        let voters = (1..=args.brokers)
            .map(|n| {
                (
                    i32::from(n),
                    format!("127.0.0.1:{}", args.controller_base_port + n - 1),
                )
            })
            .collect();
        tokio::select! {
            created = secure::create_admin(files, &voters, &cluster_id) => created?,
            _ = interrupt.recv() => return Ok(true),
        }
        let (kcat, java) = secure::client_configs(&dir, files, &bootstrap.join(","))?;
        eprintln!(
            "oxbow dev: secured: SASL_SSL with SCRAM-SHA-512 as user {} (password in {}), CA {}; ACLs on. Try:\n  kcat -F {} -L\n  kafka-topics.sh --bootstrap-server {} --command-config {} --list",
            secure::ADMIN,
            dir.join("admin.password").display(),
            files.ca.display(),
            kcat.display(),
            bootstrap.join(","),
            java.display()
        );
    }
    // A node that exits (or is killed, to try a failover) is reported; the others keep
    // running until Ctrl-C.
    let mut exited = Vec::new();
    // A node killed by a signal (kill -9 to try a failover) may be started again by hand:
    // `dev` then waits for Ctrl-C to stop it, even when none of its own children runs. When
    // every node exited on its own (a start-up failure), there is nothing to wait for.
    let mut killed = false;
    loop {
        let running: Vec<&mut (u16, Child)> = children
            .iter_mut()
            .filter(|(node, _)| !exited.contains(node))
            .collect();
        if running.is_empty() {
            if !killed {
                break;
            }
            eprintln!("oxbow dev: no node it started runs; Ctrl-C stops any started again by hand");
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            break;
        }
        tokio::select! {
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
            (node, status, by_signal) = first_exit(running) => {
                eprintln!("oxbow dev: node {node} exited ({status})");
                exited.push(node);
                killed |= by_signal;
            }
        }
    }
    let mut clean = true;
    for (node, child) in &mut children {
        if exited.contains(node) {
            continue;
        }
        if let Some(pid) = child.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        match child.wait().await {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("oxbow dev: node {node} stopped with {status}");
                clean = false;
            }
            Err(error) => {
                eprintln!("oxbow dev: node {node}: {error}");
                clean = false;
            }
        }
    }
    // A node killed and started again by hand (the commands above) is not our child; its
    // data directory's lock names it, and Ctrl-C stops it too.
    for node in 1..=args.brokers {
        if !stop_adopted(node, &args.dir.join(format!("node-{node}"))).await {
            clean = false;
        }
    }
    while let Some(copied) = output.join_next().await {
        if let Err(error) = copied {
            eprintln!("oxbow dev: copying a node's output failed: {error}");
        }
    }
    Ok(clean)
}

/// `word` as a POSIX shell reads it back: bare when it holds only safe characters, else in
/// single quotes.
fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_./:=,@%+-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// Stops the process holding `dir`'s lock, if any: SIGTERM (a controlled shutdown), then
/// SIGKILL after 30 s. False when it could not be stopped.
async fn stop_adopted(node: u16, dir: &std::path::Path) -> bool {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let Some(pid) = oxbow_broker::log_dir_lock_holder(dir) else {
        return true;
    };
    let Ok(raw) = i32::try_from(pid) else {
        return true;
    };
    eprintln!("oxbow dev: node {node} runs as pid {pid}, started by hand; stopping it");
    let target = Pid::from_raw(raw);
    if kill(target, Signal::SIGTERM).is_err() {
        return true;
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while oxbow_broker::log_dir_lock_holder(dir) == Some(pid) {
        if tokio::time::Instant::now() >= deadline {
            eprintln!(
                "oxbow dev: node {node} (pid {pid}) still runs 30 s after SIGTERM; killing it"
            );
            let _ = kill(target, Signal::SIGKILL);
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    true
}

/// Copies a node's output to this process's stderr line by line, each line prefixed with
/// `[node N]`, until the node closes it.
async fn prefix_lines(node: u16, stream: impl tokio::io::AsyncRead + Unpin) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut lines = tokio::io::BufReader::new(stream).lines();
    let mut stderr = tokio::io::stderr();
    while let Ok(Some(line)) = lines.next_line().await {
        let text = format!("[node {node}] {line}\n");
        if stderr.write_all(text.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The first node to exit: its id, its exit status, and whether a signal ended it.
async fn first_exit(children: Vec<&mut (u16, Child)>) -> (u16, String, bool) {
    let waits = children.into_iter().map(|(node, child)| {
        let node = *node;
        Box::pin(async move {
            let status = child.wait().await;
            (
                node,
                status
                    .as_ref()
                    .map_or_else(|e| e.to_string(), |s| s.to_string()),
                status.is_ok_and(|s| s.code().is_none()),
            )
        })
    });
    futures_select_all(waits).await
}

/// The first of several futures to finish.
async fn futures_select_all<F, T>(futures: impl IntoIterator<Item = std::pin::Pin<Box<F>>>) -> T
where
    F: std::future::Future<Output = T>,
{
    let mut futures: Vec<_> = futures.into_iter().collect();
    std::future::poll_fn(move |cx| {
        for future in &mut futures {
            if let std::task::Poll::Ready(value) = future.as_mut().poll(cx) {
                return std::task::Poll::Ready(value);
            }
        }
        std::task::Poll::Pending
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn printed_words_survive_a_shell() {
        assert_eq!(shell_quote("node.id=1"), "node.id=1");
        assert_eq!(
            shell_quote("super.users=User:admin;User:CN=x"),
            "'super.users=User:admin;User:CN=x'"
        );
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
