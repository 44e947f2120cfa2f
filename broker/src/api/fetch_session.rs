//! Incremental fetch sessions (KIP-227): a client that keeps a session sends only the
//! partitions whose fetch position or limits changed, and the broker answers only the
//! partitions with something new (records, a moved high watermark or log start offset, an
//! error). A consumer of many partitions then sends and receives a few bytes per idle
//! partition instead of its whole assignment on every fetch.
//!
//! ```text
//!   session_id  epoch
//!   0           -1      sessionless full fetch (librdkafka, followers that opt out)
//!   0 or S       0      full fetch: S (if given) closes; a new session is created
//!   S           -1      closes S; a sessionless full fetch
//!   S            n      incremental: n must be S's next epoch; partitions added/changed,
//!                       forgotten ones removed; the answer lists what changed
//! ```
//!
//! At most `max.incremental.fetch.session.cache.slots` sessions are kept; a new one evicts
//! the least recently used. A client whose session is gone is answered
//! FETCH_SESSION_ID_NOT_FOUND and starts over with a full fetch, as against Kafka.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};

use kafka_protocol::ResponseError;
use kafka_protocol::messages::FetchRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::protocol::StrBytes;
use parking_lot::Mutex;
use uuid::Uuid;

/// The epoch of a full fetch that opens a session.
const INITIAL_EPOCH: i32 = 0;
/// The epoch of a full fetch that keeps (or closes) no session.
const FINAL_EPOCH: i32 = -1;

/// A partition of a session: by topic id (Fetch v13+) or by name (older versions).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionKey {
    topic_id: Uuid,
    /// A view into the request for lookups (no allocation per partition per fetch); the
    /// keys a session keeps own their bytes (`detached`).
    topic: TopicName,
    partition: i32,
}

impl SessionKey {
    pub fn of(topic: &FetchTopic, partition: i32) -> Self {
        Self {
            topic_id: topic.topic_id,
            topic: topic.topic.clone(),
            partition,
        }
    }

    /// The same key holding a copy of the name: a name decoded from a request shares that
    /// request's buffer, which a session kept for minutes would otherwise keep alive whole.
    fn detached(&self) -> Self {
        Self {
            topic_id: self.topic_id,
            topic: detached_name(&self.topic),
            partition: self.partition,
        }
    }
}

fn detached_name(name: &TopicName) -> TopicName {
    TopicName(StrBytes::from_string(name.0.to_string()))
}

/// What a session remembers of one partition: the client's last fetch parameters and the
/// offsets it was last told.
#[derive(Debug, Clone)]
struct CachedPartition {
    topic: TopicName,
    topic_id: Uuid,
    fetch: FetchPartition,
    high_watermark: i64,
    log_start_offset: i64,
    last_stable_offset: i64,
}

#[derive(Debug)]
struct Session {
    /// The epoch the next incremental request must carry.
    next_epoch: i32,
    partitions: BTreeMap<SessionKey, CachedPartition>,
    /// Fetch order: partitions that returned records move to the back, so a response that
    /// fills `max_bytes` early does not starve the same partitions every time.
    order: VecDeque<SessionKey>,
    last_used: u64,
}

/// How one Fetch request is served.
#[derive(Debug)]
pub enum FetchPlan {
    /// A full fetch of the request's partitions; `session_id` is the new session's (0: none).
    Full { session_id: i32 },
    /// Every partition of the session; only what changed is answered.
    Incremental {
        session_id: i32,
        topics: Vec<FetchTopic>,
    },
    /// The session is gone or the epoch is wrong: a top-level error, no partitions.
    Refused(i16),
}

/// What a fetch found for one partition, to decide whether an incremental answer names it.
#[derive(Debug, Clone, Copy)]
pub struct Outcome {
    pub has_records: bool,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub last_stable_offset: i64,
    /// An error, a diverging epoch or a preferred read replica: always answered.
    pub must_answer: bool,
}

/// The broker's fetch sessions.
#[derive(Debug)]
pub struct FetchSessions {
    slots: usize,
    inner: Mutex<Inner>,
    /// How many sessions `inner` holds, set where they come and go: Fetch reports it
    /// (a gauge) without taking the lock again.
    count: AtomicUsize,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<i32, Session>,
    clock: u64,
}

impl FetchSessions {
    pub fn new(slots: usize) -> Self {
        Self {
            slots,
            inner: Mutex::new(Inner::default()),
            count: AtomicUsize::new(0),
        }
    }

    /// Sessions kept now.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Opens, continues or closes the request's session and says which partitions to read.
    /// Fetch versions below 7 have no sessions.
    pub fn plan(&self, request: &FetchRequest, version: i16) -> FetchPlan {
        let (id, epoch) = (request.session_id, request.session_epoch);
        // Sessionless (librdkafka, Oxbow's own followers): no lock on that hot path.
        if version < 7 || (id == 0 && epoch == FINAL_EPOCH) {
            return FetchPlan::Full { session_id: 0 };
        }
        let mut inner = self.inner.lock();
        inner.clock += 1;
        let now = inner.clock;
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if id != 0 {
                inner.sessions.remove(&id);
            }
            let session_id = if epoch == INITIAL_EPOCH {
                inner.create(self.slots, &request.topics, now)
            } else {
                0
            };
            self.count.store(inner.sessions.len(), Ordering::Relaxed);
            return FetchPlan::Full { session_id };
        }
        let Some(session) = inner.sessions.get_mut(&id) else {
            return FetchPlan::Refused(ResponseError::FetchSessionIdNotFound.code());
        };
        if epoch != session.next_epoch {
            return FetchPlan::Refused(ResponseError::InvalidFetchSessionEpoch.code());
        }
        session.next_epoch = next_epoch(epoch);
        session.last_used = now;
        let mut forgot = false;
        for forgotten in &request.forgotten_topics_data {
            for &partition in &forgotten.partitions {
                let key = SessionKey {
                    topic_id: forgotten.topic_id,
                    topic: forgotten.topic.clone(),
                    partition,
                };
                forgot |= session.partitions.remove(&key).is_some();
            }
        }
        if forgot {
            let partitions = &session.partitions;
            session.order.retain(|k| partitions.contains_key(k));
        }
        for topic in &request.topics {
            for fetch in &topic.partitions {
                session.upsert(topic, fetch);
            }
        }
        FetchPlan::Incremental {
            session_id: id,
            topics: session.topics(),
        }
    }

    /// Records what a full fetch told the client, so the next incremental one answers
    /// only changes.
    pub fn record_full(&self, session_id: i32, outcomes: &[(SessionKey, Outcome)]) {
        if session_id == 0 {
            return;
        }
        let mut inner = self.inner.lock();
        if let Some(session) = inner.sessions.get_mut(&session_id) {
            for (key, outcome) in outcomes {
                session.update(key, outcome);
            }
            session.rotate(outcomes);
        }
    }

    /// Which partitions an incremental answer names (in `outcomes` order), recording what
    /// it tells the client.
    pub fn select_changed(&self, session_id: i32, outcomes: &[(SessionKey, Outcome)]) -> Vec<bool> {
        let mut inner = self.inner.lock();
        let Some(session) = inner.sessions.get_mut(&session_id) else {
            // Evicted while the fetch waited: answering everything is always correct.
            return vec![true; outcomes.len()];
        };
        let answer = outcomes
            .iter()
            .map(|(key, outcome)| session.update(key, outcome))
            .collect();
        session.rotate(outcomes);
        answer
    }
}

impl Inner {
    /// A new session holding `topics`, or 0 when no slot can be had.
    fn create(&mut self, slots: usize, topics: &[FetchTopic], now: u64) -> i32 {
        if slots == 0 {
            return 0;
        }
        if self.sessions.len() >= slots
            && let Some(oldest) = self
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| *id)
        {
            self.sessions.remove(&oldest);
        }
        let id = loop {
            let candidate = rand::random::<i32>() & i32::MAX;
            if candidate != 0 && !self.sessions.contains_key(&candidate) {
                break candidate;
            }
        };
        let mut session = Session {
            next_epoch: next_epoch(INITIAL_EPOCH),
            partitions: BTreeMap::new(),
            order: VecDeque::new(),
            last_used: now,
        };
        for topic in topics {
            for fetch in &topic.partitions {
                session.upsert(topic, fetch);
            }
        }
        self.sessions.insert(id, session);
        id
    }
}

impl Session {
    fn upsert(&mut self, topic: &FetchTopic, fetch: &FetchPartition) {
        let key = SessionKey::of(topic, fetch.partition);
        match self.partitions.get_mut(&key) {
            Some(cached) => cached.fetch = fetch.clone(),
            None => {
                let key = key.detached();
                let topic_name = key.topic.clone();
                self.order.push_back(key.clone());
                self.partitions.insert(
                    key,
                    CachedPartition {
                        topic: topic_name,
                        topic_id: topic.topic_id,
                        fetch: fetch.clone(),
                        high_watermark: -1,
                        log_start_offset: -1,
                        last_stable_offset: -1,
                    },
                );
            }
        }
    }

    /// Every partition of the session, in fetch order, one FetchTopic per run of the same
    /// topic.
    fn topics(&self) -> Vec<FetchTopic> {
        let mut topics: Vec<FetchTopic> = Vec::new();
        for key in &self.order {
            let Some(cached) = self.partitions.get(key) else {
                continue;
            };
            match topics.last_mut() {
                Some(last) if last.topic_id == cached.topic_id && last.topic == cached.topic => {
                    last.partitions.push(cached.fetch.clone());
                }
                _ => topics.push(
                    FetchTopic::default()
                        .with_topic(cached.topic.clone())
                        .with_topic_id(cached.topic_id)
                        .with_partitions(vec![cached.fetch.clone()]),
                ),
            }
        }
        topics
    }

    /// Whether the client must hear about this partition; remembers what it is told.
    fn update(&mut self, key: &SessionKey, outcome: &Outcome) -> bool {
        let Some(cached) = self.partitions.get_mut(key) else {
            return true;
        };
        let changed = cached.high_watermark != outcome.high_watermark
            || cached.log_start_offset != outcome.log_start_offset
            || cached.last_stable_offset != outcome.last_stable_offset;
        cached.high_watermark = outcome.high_watermark;
        cached.log_start_offset = outcome.log_start_offset;
        cached.last_stable_offset = outcome.last_stable_offset;
        outcome.has_records || outcome.must_answer || changed
    }

    /// Moves the partitions that returned records behind the others (one pass).
    fn rotate(&mut self, outcomes: &[(SessionKey, Outcome)]) {
        let served: std::collections::HashSet<&SessionKey> = outcomes
            .iter()
            .filter(|(_, o)| o.has_records)
            .map(|(k, _)| k)
            .collect();
        if served.is_empty() {
            return;
        }
        let (behind, ahead): (VecDeque<SessionKey>, VecDeque<SessionKey>) =
            self.order.drain(..).partition(|k| served.contains(k));
        self.order = ahead;
        self.order.extend(behind);
    }
}

/// Epochs run 1..=i32::MAX and wrap to 1 (0 and -1 are the full-fetch markers).
fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX { 1 } else { epoch + 1 }
}

#[cfg(test)]
mod tests;
