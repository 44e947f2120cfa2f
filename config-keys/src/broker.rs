//! The broker's keys, in the order `oxbow --help` and docs/configuration.md list them.

use crate::{BrokerKey, CLEANUP_POLICIES, COMPRESSION_TYPES, Kind, TIMESTAMP_TYPES};

/// Every broker configuration key.
pub const BROKER_KEYS: &[BrokerKey] = &[
    BrokerKey::new("node.id", "0", Kind::Int, "this broker's id")
        .range(0, i32::MAX as i64),
    BrokerKey::new("listeners", "PLAINTEXT://127.0.0.1:9092", Kind::List, "listeners, `NAME://host:port,...`, Kafka's model: every listener not in `controller.listener.names` serves clients; a host name is resolved, an empty host (`PLAINTEXT://:9092`) binds every interface"),
    BrokerKey::new("advertised.listeners", "", Kind::List, "`NAME://host:port` per listener: a client that came in on `NAME` gets these addresses in Metadata, FindCoordinator and DescribeCluster")
        .shown("(each listener's own)"),
    BrokerKey::new("config.providers", "", Kind::List, "Kafka's config providers (KIP-297/887): with `config.providers=env` and `config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider` any value may say `${env:NAME}`; `FileConfigProvider` (`${file:/path.properties:key}`) and `DirectoryConfigProvider` (`${dir:/mounted/secret:key}`) too. As in Kafka, a variable whose provider or key is missing stays as written")
        .shown("(none)"),
    BrokerKey::new("log.dirs", "./oxbow-data", Kind::List, "comma-separated data directories; each is locked (`.lock`) while a broker runs, so a second broker on one exits naming it"),
    BrokerKey::new("num.partitions", "1", Kind::Int, "partitions of auto-created topics")
        .range(1, 100_000),
    BrokerKey::new("default.replication.factor", "1", Kind::Short, "replication factor of auto-created topics")
        .range(1, i16::MAX as i64),
    BrokerKey::new("auto.create.topics.enable", "true", Kind::Boolean, "create unknown topics on Metadata requests"),
    BrokerKey::new("message.max.bytes", "1048588", Kind::Int, "largest record batch"),
    BrokerKey::new("socket.request.max.bytes", "104857600", Kind::Int, "largest request frame; bigger frames close the connection")
        .range(1024, i32::MAX as i64),
    BrokerKey::new("socket.send.buffer.bytes", "262144", Kind::Int, "`SO_SNDBUF` of client connections, `-1` for the kernel's autotuning (a bounded buffer made 1 KiB consume ~1.4× faster on loopback; Kafka's default is `102400`); the kernel caps it at `net.core.wmem_max` (212992 on a stock kernel)")
        .range(-1, i32::MAX as i64),
    BrokerKey::new("socket.receive.buffer.bytes", "-1", Kind::Int, "`SO_RCVBUF` of client connections, `-1` for the kernel's autotuning")
        .range(-1, i32::MAX as i64),
    BrokerKey::new("connections.max.idle.ms", "600000", Kind::Long, "idle connections are closed after this")
        .range(1, i64::MAX),
    BrokerKey::new("connection.failed.authentication.delay.ms", "100", Kind::Int, "a client that fails SASL authentication gets its answer, and its connection closed, this much later: a brake on password guessing (Kafka's default)")
        .range(0, i32::MAX as i64),
    BrokerKey::new("max.connections", "10000", Kind::Int, "connections beyond this are refused")
        .range(1, 1_000_000),
    BrokerKey::new("max.incremental.fetch.session.cache.slots", "1000", Kind::Int, "incremental fetch sessions (KIP-227) kept; the least recently used is evicted")
        .range(0, 1_000_000),
    BrokerKey::new("queued.max.request.bytes", "104857600", Kind::Long, "request bytes read ahead per connection (back-pressure)")
        .range(1024, i64::MAX),
    BrokerKey::new("metrics.listener", "127.0.0.1:9644", Kind::String, "`/metrics`, `/healthz`, `/readyz`; empty disables"),
    BrokerKey::new("metrics.partition.labels", "false", Kind::Boolean, "per-partition labels on storage and group lag metrics"),
    BrokerKey::new("fetch.sendfile.enable", "true", Kind::Boolean, "zero-copy fetch with `sendfile(2)`"),
    BrokerKey::new("log.segment.bytes", "1073741824", Kind::Int, "segment size"),
    BrokerKey::new("log.roll.ms", "604800000", Kind::Long, "segment age; `log.roll.hours` (168) when unset"),
    BrokerKey::new("log.retention.ms", "604800000", Kind::Long, "time retention, `-1` forever; when unset, `log.retention.minutes`, then `log.retention.hours` (168), as in Kafka"),
    BrokerKey::new("log.retention.minutes", "", Kind::Int, "log.retention.ms in minutes, when that is not set; wins over log.retention.hours")
        .shown("(none)"),
    BrokerKey::new("log.retention.hours", "168", Kind::Int, "log.retention.ms in hours, when neither it nor log.retention.minutes is set"),
    BrokerKey::new("log.roll.hours", "168", Kind::Int, "log.roll.ms in hours, when that is not set"),
    BrokerKey::new("log.roll.jitter.hours", "0", Kind::Int, "log.roll.jitter.ms in hours, when that is not set"),
    BrokerKey::new("delete.topic.enable", "true", Kind::Boolean, "`false` answers DeleteTopics with `TOPIC_DELETION_DISABLED`"),
    BrokerKey::new("log.retention.bytes", "-1", Kind::Long, "size retention per partition"),
    BrokerKey::new("log.index.interval.bytes", "4096", Kind::Int, "bytes between index entries"),
    BrokerKey::new("log.index.size.max.bytes", "10485760", Kind::Int, "preallocated index size"),
    BrokerKey::new("log.cleanup.policy", "delete", Kind::List, "how a log drops old data: by retention, by key (keeping the latest value of each), both, or neither (empty: every record kept, as Kafka 4.2+)")
        .choices(CLEANUP_POLICIES),
    BrokerKey::new("log.cleaner.delete.retention.ms", "86400000", Kind::Long, "tombstone retention"),
    BrokerKey::new("log.segment.delete.delay.ms", "60000", Kind::Long, "a deleted segment's files stay this long, renamed `.deleted`"),
    BrokerKey::new("log.cleaner.min.cleanable.ratio", "0.5", Kind::Double, "share of a compacted log's cleanable bytes that must be dirty before it is cleaned"),
    BrokerKey::new("log.cleaner.min.compaction.lag.ms", "0", Kind::Long, "records stay uncompacted at least this long"),
    BrokerKey::new("log.cleaner.max.compaction.lag.ms", "9223372036854775807", Kind::Long, "records are compacted at most this long after they are written"),
    BrokerKey::new("log.preallocate", "false", Kind::Boolean, "reserve `segment.bytes` of disk when a segment is created"),
    BrokerKey::new("log.roll.jitter.ms", "0", Kind::Long, "segments roll up to this much before `segment.ms`"),
    BrokerKey::new("log.local.retention.ms", "-2", Kind::Long, "tiered storage only (not enabled here): local retention time; -2 follows retention.ms (local.retention.ms)"),
    BrokerKey::new("log.local.retention.bytes", "-2", Kind::Long, "tiered storage only (not enabled here): local retention size; -2 follows retention.bytes (local.retention.bytes)"),
    BrokerKey::new("log.flush.interval.messages", "9223372036854775807", Kind::Long, "fsync every N messages")
        .shown("never"),
    BrokerKey::new("log.flush.interval.ms", "9223372036854775807", Kind::Long, "fsync every N ms")
        .shown("never"),
    BrokerKey::new("log.message.timestamp.type", "CreateTime", Kind::String, "which timestamp a batch keeps: the producer's (`CreateTime`) or the broker's at append (`LogAppendTime`)")
        .choices(TIMESTAMP_TYPES),
    BrokerKey::new("log.message.timestamp.before.max.ms", "9223372036854775807", Kind::Long, "CreateTime records older than this are refused with INVALID_TIMESTAMP, per record"),
    BrokerKey::new("log.message.timestamp.after.max.ms", "3600000", Kind::Long, "CreateTime records further ahead than this are refused"),
    BrokerKey::new("compression.type", "producer", Kind::String, "codec batches are stored with: `producer` keeps the producer's; only batches of another codec are re-encoded")
        .choices(COMPRESSION_TYPES),
    BrokerKey::new("compression.gzip.level", "-1", Kind::Int, "gzip level of re-encoded batches, 1-9 or -1 (zlib's default)"),
    BrokerKey::new("compression.lz4.level", "9", Kind::Int, "lz4 level of re-encoded batches, 1-17"),
    BrokerKey::new("compression.zstd.level", "3", Kind::Int, "zstd level of re-encoded batches, -131072 to 22"),
    BrokerKey::new("min.insync.replicas", "1", Kind::Int, "replicas needed for `acks=all`"),
    BrokerKey::new("unclean.leader.election.enable", "false", Kind::Boolean, "let a replica outside the ISR lead when none in sync is left (loses data)"),
    BrokerKey::new("log.retention.check.interval.ms", "300000", Kind::Long, "how often retention and timed flushes run")
        .range(1, i64::MAX),
    BrokerKey::new("log.cleaner.backoff.ms", "15000", Kind::Long, "how often the log cleaner compacts logs that are due")
        .range(0, i64::MAX),
    BrokerKey::new("offsets.topic.num.partitions", "50", Kind::Int, "partitions of `__consumer_offsets`")
        .range(1, 10_000),
    BrokerKey::new("offsets.retention.minutes", "10080", Kind::Int, "offsets of a group empty this long are deleted")
        .range(1, i32::MAX as i64),
    BrokerKey::new("offsets.retention.check.interval.ms", "600000", Kind::Long, "how often expired offsets are looked for")
        .range(1, i64::MAX),
    BrokerKey::new("offset.metadata.max.bytes", "4096", Kind::Int, "largest metadata string of a committed offset")
        .range(0, i32::MAX as i64),
    BrokerKey::new("group.min.session.timeout.ms", "6000", Kind::Int, "smallest session timeout a classic member may ask for")
        .range(1, i32::MAX as i64),
    BrokerKey::new("group.max.session.timeout.ms", "1800000", Kind::Int, "largest session timeout a classic member may ask for")
        .range(1, i32::MAX as i64),
    BrokerKey::new("group.initial.rebalance.delay.ms", "3000", Kind::Int, "first rebalance of an empty classic group waits this long for more members")
        .range(0, i32::MAX as i64),
    BrokerKey::new("group.consumer.session.timeout.ms", "45000", Kind::Int, "session timeout of KIP-848 (`group.protocol=consumer`) members")
        .range(1, i32::MAX as i64),
    BrokerKey::new("group.consumer.heartbeat.interval.ms", "5000", Kind::Int, "heartbeat interval given to KIP-848 members")
        .range(1, i32::MAX as i64),
    BrokerKey::new("offsets.topic.replication.factor", "3", Kind::Int, "replicas of `__consumer_offsets` (created on the first FindCoordinator; capped to the live brokers with a warning)")
        .range(1, i16::MAX as i64),
    BrokerKey::new("transaction.state.log.num.partitions", "50", Kind::Int, "partitions of `__transaction_state`, where transaction coordinators keep their state (created on the first FindCoordinator for a transactional id)")
        .range(1, i32::MAX as i64),
    BrokerKey::new("transaction.state.log.replication.factor", "3", Kind::Int, "replicas of `__transaction_state` (capped to the live brokers with a warning)")
        .range(1, i16::MAX as i64),
    BrokerKey::new("transaction.state.log.min.isr", "2", Kind::Int, "`min.insync.replicas` of `__transaction_state` (capped to its replication factor)")
        .range(1, i32::MAX as i64),
    BrokerKey::new("transaction.max.timeout.ms", "900000", Kind::Int, "largest `transaction.timeout.ms` a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it)")
        .range(1, i32::MAX as i64),
    BrokerKey::new("transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000", Kind::Int, "how often the coordinator looks for transactions past their timeout and aborts them")
        .range(1, i32::MAX as i64),
    BrokerKey::new("transaction.partition.verification.enable", "true", Kind::Boolean, "a partition leader asks the transaction coordinator whether a partition is in the producer's ongoing transaction before its first transactional write there (KIP-890 part 1; INVALID_TXN_STATE when it is not)"),
    BrokerKey::new("transaction.version", "2", Kind::Int, "the level the `transaction.version` feature of a new cluster starts at (read by its first active controller; Kafka's `kafka-storage.sh format --feature transaction.version=N`): 2 (KIP-890 part 2) bumps the producer epoch at every transaction end and lets producers add partitions with their writes; 1 and 0 keep clients on the older protocol. After that the finalized level changes only with `kafka-features.sh upgrade | downgrade` (docs/upgrading.md)")
        .range(0, 2),
    BrokerKey::new("transactional.id.expiration.ms", "604800000", Kind::Int, "a transactional id with no transaction for this long is forgotten")
        .range(1, i32::MAX as i64),
    BrokerKey::new("replica.lag.time.max.ms", "30000", Kind::Long, "a follower not caught up for this long leaves the ISR")
        .range(1, i32::MAX as i64),
    BrokerKey::new("replica.fetch.max.bytes", "1048576", Kind::Int, "bytes a follower asks for per partition per fetch")
        .range(1, i32::MAX as i64),
    BrokerKey::new("replica.fetch.response.max.bytes", "10485760", Kind::Int, "bytes a follower asks for per fetch")
        .range(1, i32::MAX as i64),
    BrokerKey::new("replica.fetch.wait.max.ms", "500", Kind::Int, "how long a follower's fetch waits at the leader")
        .range(0, i32::MAX as i64),
    BrokerKey::new("replica.fetch.backoff.ms", "100", Kind::Int, "a follower's pause after a failed fetch")
        .range(0, 3_600_000),
    BrokerKey::new("replica.high.watermark.checkpoint.interval.ms", "5000", Kind::Int, "how often high watermarks are checkpointed")
        .range(100, 3_600_000),
    BrokerKey::new("process.roles", "broker,controller", Kind::List, "`broker`, `controller` or both"),
    BrokerKey::new("controller.quorum.voters", "", Kind::List, "the voters, `id@host:port,…` (use an odd count). Alone: a static quorum (Kafka's `kraft.version` 0), whose voters cannot change. With `controller.quorum.bootstrap.servers`: the voters that form a new dynamic quorum; after that the voters live in the metadata log. Host names are resolved on every connect")
        .shown("(this node alone)"),
    BrokerKey::new("controller.quorum.bootstrap.servers", "", Kind::List, "controllers `host:port,…` where a node finds a dynamic quorum (KIP-853); voters are then added and removed at run time with `kafka-metadata-quorum.sh add-controller` / `remove-controller`. A controller not among the initial voters follows the quorum as an observer until it is added; every node learns the current voters from the quorum, so the list is only for finding it at start-up")
        .shown("(none)"),
    BrokerKey::new("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", Kind::String, "`NAME:PROTOCOL,...`; `PLAINTEXT`, `SSL` (TLS, see `ssl.*`), `SASL_PLAINTEXT` and `SASL_SSL` (SCRAM, see `sasl.enabled.mechanisms`) are served on client listeners; followers fetch over TLS when the inter-broker listener is `SSL`; a controller listener mapped to `SSL` runs the quorum's RPCs (votes, the metadata log, brokers' registrations) over mutual TLS with the `ssl.*` stores, a client certificate always required; a `SASL_*` inter-broker listener has followers authenticate (`sasl.mechanism.inter.broker.protocol`), over TLS with `SASL_SSL`; a `SASL_*` controller listener is refused at start-up (the quorum is not the Kafka protocol; use `SSL`), never served as something weaker")
        .shown("Kafka's"),
    BrokerKey::new("inter.broker.listener.name", "", Kind::String, "the listener other brokers use to reach this one")
        .shown("(the first client listener)"),
    BrokerKey::new("controller.listener.names", "CONTROLLER", Kind::List, "which entry of `listeners` serves the quorum, e.g. `listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093`"),
    BrokerKey::new("sasl.enabled.mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", Kind::List, "what `SASL_PLAINTEXT`/`SASL_SSL` listeners offer: `SCRAM-SHA-256`, `SCRAM-SHA-512` (credentials set with `kafka-configs.sh --alter --add-config 'SCRAM-SHA-512=[password=...]' --entity-type users`, kept in the metadata log as salted keys, never the password), `PLAIN` (the password checked against the user's SCRAM credential; use it over TLS) and `OAUTHBEARER` (signed JWTs checked against `sasl.oauthbearer.jwks.endpoint.url`; without it Kafka's default validator: unsecured `alg:none` tokens, the `sub` claim is the principal, for development and tests). Kafka's default is `GSSAPI`, which is refused at start-up (not served)"),
    BrokerKey::new("sasl.mechanism.inter.broker.protocol", "GSSAPI", Kind::String, "with a `SASL_PLAINTEXT`/`SASL_SSL` inter-broker listener: how followers authenticate to leaders, `SCRAM-SHA-256`, `SCRAM-SHA-512` or `PLAIN` (offered on that listener), as the `username`/`password` of `listener.name.<listener>.<mechanism>.sasl.jaas.config`. A broker creates its SCRAM credential through the quorum when the user has none (Kafka formats it in with `kafka-storage.sh --add-scram`); the user needs CLUSTER_ACTION on the cluster or a place in `super.users` under an authorizer. Kafka's default `GSSAPI` is refused with a SASL inter-broker listener"),
    BrokerKey::new("connections.max.reauth.ms", "0", Kind::Long, "KIP-368: a SASL session lasts this long (an OAUTHBEARER one no longer than its token); clients re-authenticate on the open connection as the same principal with the same mechanism, or the connection is closed at its next request. 0: sessions never expire")
        .range(0, i64::MAX),
    BrokerKey::new("sasl.oauthbearer.jwks.endpoint.url", "", Kind::String, "OAUTHBEARER tokens must be signed JWTs (RS256/384/512, PS256/384/512, ES256, ES384, EdDSA) verified against this JSON Web Key Set, as with Kafka's `OAuthBearerValidatorCallbackHandler`: a `file:` URL or a path (mount the identity provider's keys), re-read when the file changes; `exp` is required, `iat`/`nbf` must not lie ahead. An HTTP(S) endpoint is refused at start-up (keys are not fetched over the network). Empty: Kafka's unsecured validator")
        .shown("(unsecured tokens)"),
    BrokerKey::new("sasl.oauthbearer.expected.audience", "", Kind::List, "with a JWKS: a token's `aud` must name one of these")
        .shown("(not checked)"),
    BrokerKey::new("sasl.oauthbearer.expected.issuer", "", Kind::String, "with a JWKS: a token's `iss` must be this")
        .shown("(not checked)"),
    BrokerKey::new("sasl.oauthbearer.sub.claim.name", "sub", Kind::String, "with a JWKS: the claim that names the principal (`User:<value>`)"),
    BrokerKey::new("sasl.oauthbearer.clock.skew.seconds", "30", Kind::Int, "with a JWKS: how far the broker's clock may differ from the token issuer's when `exp`, `iat` and `nbf` are checked")
        .range(0, 3600),
    BrokerKey::new("authorizer.class.name", "", Kind::String, "`org.apache.kafka.metadata.authorizer.StandardAuthorizer` checks every request against the ACLs (`kafka-acls.sh`; kept in the metadata log) with Kafka's rules: deny wins, READ/WRITE/DELETE/ALTER imply DESCRIBE, topics a principal may not describe are left out of Metadata. Empty: no checks, and CreateAcls answers SECURITY_DISABLED. Any other class is refused at start-up")
        .shown("(none)"),
    BrokerKey::new("super.users", "", Kind::List, "principals every check allows, `User:admin;User:CN=broker-0` (semicolons, as in Kafka); brokers replicating over an authorizing listener need to be among them (or hold CLUSTER_ACTION on the cluster)")
        .shown("(none)"),
    BrokerKey::new("allow.everyone.if.no.acl.found", "false", Kind::Boolean, "with an authorizer: a resource no ACL covers is open to everyone (true) or to super users only (false)"),
    BrokerKey::new("ssl.keystore.type", "PEM", Kind::String, "the key store's format: `PEM` (Kafka's KIP-651 PEM stores); JKS and PKCS12 are refused at start-up with the `openssl` command that converts them")
        .choices(&["PEM"]),
    BrokerKey::new("ssl.keystore.location", "", Kind::String, "a PEM file with this broker's private key (unencrypted PKCS#8, PKCS#1 or SEC1) and its certificate chain, for `SSL` listeners; re-read every 5 s: when it changes, new connections get the new certificate and open ones keep theirs (a Kubernetes Secret rotated in place needs no restart)")
        .shown("(none)"),
    BrokerKey::new("ssl.keystore.certificate.chain", "", Kind::Password, "the certificate chain as a PEM string, with `ssl.keystore.key`, instead of `ssl.keystore.location`")
        .shown("(none)"),
    BrokerKey::new("ssl.keystore.key", "", Kind::Password, "the private key as a PEM string, with `ssl.keystore.certificate.chain`")
        .shown("(none)"),
    BrokerKey::new("ssl.key.password", "", Kind::Password, "the password of an encrypted private key: not supported yet, a broker given one refuses to start (give an unencrypted key in a file only the broker reads)")
        .shown("(none)"),
    BrokerKey::new("ssl.truststore.type", "PEM", Kind::String, "the trust store's format: `PEM`")
        .choices(&["PEM"]),
    BrokerKey::new("ssl.truststore.location", "", Kind::String, "a PEM file of the CA certificates client certificates must chain to (`ssl.client.auth`); re-read every 5 s like the key store")
        .shown("(none)"),
    BrokerKey::new("ssl.truststore.certificates", "", Kind::Password, "the trust store's CA certificates as a PEM string, instead of `ssl.truststore.location`")
        .shown("(none)"),
    BrokerKey::new("ssl.client.auth", "none", Kind::String, "`required`: no TLS handshake completes without a client certificate the trust store vouches for (mTLS); `requested`: a certificate is checked when given, a client without one is `User:ANONYMOUS`; `none`. Applies to `SSL` listeners; `SASL_SSL` listeners ask for no certificate (SASL authenticates the client, as Kafka's KIP-684 has it); the controller listener always requires one")
        .choices(&["required", "requested", "none"]),
    BrokerKey::new("ssl.principal.mapping.rules", "DEFAULT", Kind::String, "how a client certificate's subject (RFC 2253, `CN=app,OU=eng,O=Example`) becomes the principal `User:<name>`: Kafka's comma-separated `RULE:pattern/replacement/[LU]` entries, the first whose pattern matches the whole subject applies; `DEFAULT` is the subject itself; a subject no rule matches is refused"),
    BrokerKey::new("ssl.enabled.protocols", "TLSv1.2,TLSv1.3", Kind::List, "the TLS versions `SSL` listeners accept"),
    BrokerKey::new("ssl.endpoint.identification.algorithm", "https", Kind::String, "`https`: a broker connecting to another's `SSL` inter-broker listener checks that the certificate names the address it dialled; empty: the chain is checked, the name is not"),
    BrokerKey::new("broker.heartbeat.interval.ms", "500", Kind::Int, "broker heartbeats to the active controller")
        .range(10, 3_600_000),
    BrokerKey::new("broker.session.timeout.ms", "3000", Kind::Int, "a broker silent this long is fenced (shorter than Kafka's 9000, for faster failover); a broker whose heartbeat connection closes is fenced at once, and a newly elected controller gives brokers three heartbeat intervals to find it; when the active controller's connection closes and its port refuses connections (its process is gone), the other voters elect a new one at once instead of waiting out the Raft timeouts")
        .range(100, 3_600_000),
    BrokerKey::new("auto.leader.rebalance.enable", "true", Kind::Boolean, "the active controller moves leadership back to preferred replicas (the first assigned)"),
    BrokerKey::new("leader.imbalance.check.interval.seconds", "300", Kind::Long, "how often leader balance is checked (Kafka's default)")
        .range(1, i32::MAX as i64),
    BrokerKey::new("leader.imbalance.per.broker.percentage", "10", Kind::Int, "share of a broker's preferred partitions it may not lead before leadership moves back")
        .range(0, 100),
    BrokerKey::new("metadata.log.snapshot.interval.entries", "5000", Kind::Long, "metadata log entries between snapshots of the image; the log is purged behind them")
        .range(10, u32::MAX as i64),
    BrokerKey::new("broker.rack", "", Kind::String, "rack/zone, for rack-aware placement; reported in Metadata")
        .shown("(none)"),
    BrokerKey::new("replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector", Kind::Class, "follower fetching (KIP-392): a consumer that sets `client.rack` reads from an in-sync replica in its rack when the leader is elsewhere; `org.apache.kafka.common.replica.LeaderSelector` (or empty) keeps every consumer on the leader. Followers serve consumers up to their high watermark"),
    BrokerKey::new("cluster.id", "", Kind::String, "recorded by the first active controller; a node configured with another one is refused")
        .shown("generated"),
    BrokerKey::new("leader.replication.throttled.rate", "", Kind::Long, "bytes/s a leader serves to throttled replicas (reassignments); set per broker or as a cluster default with `IncrementalAlterConfigs` (`kafka-configs.sh`, `kafka-reassign-partitions.sh --throttle`); topics name the replicas with `leader.replication.throttled.replicas` (`*` or `partition:broker,...`)")
        .shown("unlimited")
        .dynamic_only(),
    BrokerKey::new("follower.replication.throttled.rate", "", Kind::Long, "bytes/s a follower fetches for throttled replicas (reassignments); set like `leader.replication.throttled.rate`; topics name the replicas with `follower.replication.throttled.replicas`")
        .shown("unlimited")
        .dynamic_only(),
    BrokerKey::new("cordoned.log.dirs", "", Kind::List, "KIP-1066: `*` or the broker's log directory cordons the broker (no new partition is placed on it; what it holds stays); per broker (`kafka-configs.sh --entity-type brokers --entity-name N --alter --add-config cordoned.log.dirs=*`), sent to that broker; ends when the broker is unregistered. The operator cordons the brokers a scale-in removes")
        .shown("empty")
        .dynamic_only(),
    // Kafka's stock server.properties sets these; a Kafka config must start Oxbow unchanged.
    BrokerKey::new("num.network.threads", "3", Kind::Int, "accepted for Kafka's `server.properties`; no effect: connections are served by the async runtime's workers, one per core")
        .range(1, i32::MAX as i64),
    BrokerKey::new("num.io.threads", "8", Kind::Int, "accepted for Kafka's `server.properties`; no effect: requests run on the async runtime's workers, one per core")
        .range(1, i32::MAX as i64),
    BrokerKey::new("num.recovery.threads.per.data.dir", "2", Kind::Int, "accepted for Kafka's `server.properties`; no effect: each data directory's logs are recovered by one task")
        .range(1, i32::MAX as i64),
    BrokerKey::new("share.coordinator.state.topic.replication.factor", "3", Kind::Short, "accepted for Kafka's `server.properties`; no effect until share groups are served")
        .range(1, i16::MAX as i64),
    BrokerKey::new("share.coordinator.state.topic.min.isr", "2", Kind::Short, "accepted for Kafka's `server.properties`; no effect until share groups are served")
        .range(1, i16::MAX as i64),
];
