//! A cluster of real `oxbow` processes on loopback: voters (combined broker and
//! controller nodes) and broker-only observers, each with its own data directory, client
//! port, controller port and metrics port. Nodes start without waiting on each other (a
//! node serves clients only once the quorum has registered and unfenced it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{
    ApiKey, BrokerId, CreateTopicsRequest, CreateTopicsResponse, MetadataRequest, MetadataResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::client::RawClient;
use crate::process::{free_port, http_get, oxbow_binary};

/// One node's addresses and process.
#[derive(Debug)]
pub struct Node {
    pub id: i32,
    pub port: u16,
    pub controller_port: Option<u16>,
    pub metrics_port: u16,
    pub data: PathBuf,
    pub log: PathBuf,
    pub child: Option<Child>,
    pub extra: Vec<String>,
}

/// A whole cluster; dropping it kills every node.
#[derive(Debug)]
pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub nodes: BTreeMap<i32, Node>,
    pub voters: String,
}

impl Cluster {
    /// `voters` combined nodes (ids 1..) and `observers` broker-only nodes after them.
    pub fn start(voters: i32, observers: i32, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut nodes = BTreeMap::new();
        for id in 1..=voters + observers {
            let data = dir.path().join(format!("node-{id}"));
            nodes.insert(
                id,
                Node {
                    id,
                    port: free_port(),
                    controller_port: (id <= voters).then(free_port),
                    metrics_port: free_port(),
                    log: dir.path().join(format!("node-{id}.log")),
                    data,
                    child: None,
                    extra: extra.iter().map(|s| s.to_string()).collect(),
                },
            );
        }
        let voters = nodes
            .values()
            .filter_map(|n| n.controller_port.map(|p| format!("{}@127.0.0.1:{p}", n.id)))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Self { dir, nodes, voters };
        let ids: Vec<i32> = cluster.nodes.keys().copied().collect();
        for id in ids {
            cluster.launch(id);
        }
        cluster
    }

    /// Adds a broker-only node under harness id `id` (its `node.id` too, unless `extra`
    /// overrides it) and starts it.
    pub fn add_observer(&mut self, id: i32, extra: &[&str]) {
        self.nodes.insert(
            id,
            Node {
                id,
                port: free_port(),
                controller_port: None,
                metrics_port: free_port(),
                log: self.dir.path().join(format!("node-{id}.log")),
                data: self.dir.path().join(format!("node-{id}")),
                child: None,
                extra: extra.iter().map(|s| s.to_string()).collect(),
            },
        );
        self.launch(id);
    }

    /// Waits for node `id`'s process to exit; its exit status.
    pub fn wait_exit(&mut self, id: i32, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            let child = self.nodes.get_mut(&id).unwrap().child.as_mut().unwrap();
            if let Some(status) = child.try_wait().unwrap() {
                self.nodes.get_mut(&id).unwrap().child = None;
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "node {id} did not exit: {}",
                tail(&self.logs(id), 30)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The `--override` flags of node `id`.
    pub fn overrides(&self, id: i32) -> Vec<String> {
        let node = &self.nodes[&id];
        let mut listeners = format!("PLAINTEXT://127.0.0.1:{}", node.port);
        if let Some(controller) = node.controller_port {
            listeners.push_str(&format!(",CONTROLLER://127.0.0.1:{controller}"));
        }
        let mut overrides = vec![
            format!("node.id={id}"),
            format!(
                "process.roles={}",
                if node.controller_port.is_some() {
                    "broker,controller"
                } else {
                    "broker"
                }
            ),
            format!("listeners={listeners}"),
            format!("controller.quorum.voters={}", self.voters),
            format!("log.dirs={}", node.data.display()),
            format!("metrics.listener=127.0.0.1:{}", node.metrics_port),
        ];
        overrides.extend(node.extra.iter().cloned());
        overrides
    }

    /// Starts (or restarts) node `id` with its data directory as it is.
    pub fn launch(&mut self, id: i32) {
        let overrides = self.overrides(id);
        let node = self.nodes.get_mut(&id).unwrap();
        let mut command = Command::new(oxbow_binary());
        for item in &overrides {
            command.arg("--override").arg(item);
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .unwrap();
        node.child = Some(
            command
                // The broker's own default filter: what an operator reads.
                .env_remove("RUST_LOG")
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
    }

    pub fn signal(&self, id: i32, signal: &str) {
        let pid = self.nodes[&id].child.as_ref().unwrap().id();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// SIGKILL node `id` and reap it.
    pub fn kill(&mut self, id: i32) {
        self.signal(id, "KILL");
        let node = self.nodes.get_mut(&id).unwrap();
        if let Some(mut child) = node.child.take() {
            child.wait().unwrap();
        }
    }

    pub fn logs(&self, id: i32) -> String {
        std::fs::read_to_string(&self.nodes[&id].log).unwrap_or_default()
    }

    /// GET `path` on node `id`'s metrics listener: (status, body).
    pub fn http(&self, id: i32, path: &str) -> Option<(u16, String)> {
        http_get(self.nodes[&id].metrics_port, path)
    }

    /// Node `id`'s `/metadata` view.
    pub fn metadata_view(&self, id: i32) -> Option<serde_json::Value> {
        let (status, body) = self.http(id, "/metadata")?;
        (status == 200).then(|| serde_json::from_str(&body).ok())?
    }

    pub fn is_ready(&self, id: i32) -> bool {
        self.http(id, "/readyz")
            .is_some_and(|(status, _)| status == 200)
    }

    /// Waits until `condition` holds, failing with `what` and the nodes' logs after
    /// `timeout`.
    pub fn wait_for(&self, what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
        let deadline = Instant::now() + timeout;
        while !condition() {
            if Instant::now() > deadline {
                let logs: String = self
                    .nodes
                    .keys()
                    .map(|id| {
                        let all = self.logs(*id);
                        let panics: Vec<&str> = all
                            .lines()
                            .filter(|l| l.contains("panicked"))
                            .take(3)
                            .collect();
                        format!(
                            "--- node {id} ---\n{}\n{}\n",
                            panics.join("\n"),
                            tail(&all, 15)
                        )
                    })
                    .collect();
                panic!("timed out waiting for {what}\n{logs}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_ready(&self, ids: &[i32]) {
        self.wait_for("nodes to be ready", Duration::from_secs(60), || {
            ids.iter().all(|id| self.is_ready(*id))
        });
    }

    /// Waits until every node in `ids` has applied the same image; returns its digest.
    pub fn wait_same_image(&self, ids: &[i32]) -> String {
        let mut digest = String::new();
        self.wait_for(
            "every node to see the same image",
            Duration::from_secs(30),
            || {
                let views: Vec<Option<serde_json::Value>> =
                    ids.iter().map(|id| self.metadata_view(*id)).collect();
                let digests: Vec<Option<String>> = views
                    .iter()
                    .map(|v| {
                        v.as_ref()
                            .and_then(|v| v["image_digest"].as_str().map(String::from))
                    })
                    .collect();
                let same = digests.iter().all(|d| d.is_some() && *d == digests[0]);
                if same {
                    digest = digests[0].clone().unwrap_or_default();
                }
                same
            },
        );
        digest
    }

    /// The active controller according to node `id`.
    pub fn controller_of(&self, id: i32) -> Option<i32> {
        self.metadata_view(id)?["controller_id"]
            .as_i64()
            .map(|c| c as i32)
    }

    pub fn client(&self, id: i32) -> RawClient {
        RawClient::connect(self.nodes[&id].port)
    }

    /// CreateTopics through node `id`: the topic's error code.
    pub fn create_topic(&self, id: i32, name: &str, partitions: i32, rf: i16) -> i16 {
        let request = CreateTopicsRequest::default()
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(TopicName(StrBytes::from_string(name.to_string())))
                    .with_num_partitions(partitions)
                    .with_replication_factor(rf),
            ])
            .with_timeout_ms(30_000);
        let response: CreateTopicsResponse =
            self.client(id).request(ApiKey::CreateTopics, 7, &request);
        response.topics[0].error_code
    }

    /// CreateTopics through node `via` with one partition per manual replica assignment
    /// (the first replica is the preferred leader); fails unless the broker accepts it.
    pub fn create_assigned(&self, via: i32, topic: &str, assignments: &[&[i32]]) {
        let request = CreateTopicsRequest::default()
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
                    .with_assignments(
                        assignments
                            .iter()
                            .enumerate()
                            .map(|(p, replicas)| {
                                CreatableReplicaAssignment::default()
                                    .with_partition_index(p as i32)
                                    .with_broker_ids(
                                        replicas.iter().map(|b| BrokerId(*b)).collect(),
                                    )
                            })
                            .collect(),
                    ),
            ])
            .with_timeout_ms(30_000);
        let response: CreateTopicsResponse =
            self.client(via).request(ApiKey::CreateTopics, 7, &request);
        assert_eq!(response.topics[0].error_code, 0, "{response:?}");
    }

    /// Metadata of every topic from node `id`.
    pub fn metadata(&self, id: i32) -> MetadataResponse {
        self.client(id).request(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
    }

    /// `topic` in the Metadata answer of node `id` (fails when the node does not know it).
    pub fn topic_metadata(&self, id: i32, topic: &str) -> MetadataResponseTopic {
        self.find_topic(id, topic)
            .unwrap_or_else(|| panic!("{topic} is not in node {id}'s metadata"))
    }

    /// `topic` in the Metadata answer of node `id`, if the node knows it yet (for waits: a
    /// topic created through one node reaches the others a moment later).
    pub fn find_topic(&self, id: i32, topic: &str) -> Option<MetadataResponseTopic> {
        self.metadata(id)
            .topics
            .into_iter()
            .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some(topic))
    }

    /// (leader, leader epoch, ISR sorted) of one partition of `topic` as node `id` sees it.
    pub fn partition_state(&self, id: i32, topic: &str, partition: i32) -> (i32, i32, Vec<i32>) {
        let topic_metadata = self.topic_metadata(id, topic);
        let p = topic_metadata
            .partitions
            .iter()
            .find(|p| p.partition_index == partition)
            .unwrap_or_else(|| panic!("{topic}-{partition} is not in node {id}'s metadata"));
        let mut isr: Vec<i32> = p.isr_nodes.iter().map(|b| b.0).collect();
        isr.sort();
        (p.leader_id.0, p.leader_epoch, isr)
    }

    /// Produces `records` to `topic`-`partition` through its leader as node `via` sees it.
    /// A leader named in metadata may not have taken the leadership yet
    /// (NOT_LEADER_OR_FOLLOWER: nothing written), so that answer is retried; any other
    /// error fails the test.
    pub fn produce_to_leader(&self, via: i32, topic: &str, partition: i32, records: bytes::Bytes) {
        const NOT_LEADER_OR_FOLLOWER: i16 = 6;
        let mut last = None;
        self.wait_for(
            &format!("{topic}-{partition}'s leader to take a produce"),
            Duration::from_secs(30),
            || {
                let leader = self.partition_state(via, topic, partition).0;
                let response = self
                    .client(leader)
                    .produce(topic, partition, records.clone());
                let code = response.responses[0].partition_responses[0].error_code;
                assert!(
                    code == 0 || code == NOT_LEADER_OR_FOLLOWER,
                    "produce to {topic}-{partition} via {leader}: error {code}"
                );
                last = Some(code);
                code == 0
            },
        );
        assert_eq!(last, Some(0));
    }

    /// The leader of each partition of `topic`, in partition order, as node `id` sees it.
    pub fn leaders(&self, id: i32, topic: &str) -> Vec<i32> {
        let mut partitions = self.topic_metadata(id, topic).partitions;
        partitions.sort_by_key(|p| p.partition_index);
        partitions.iter().map(|p| p.leader_id.0).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in self.nodes.values_mut() {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
