//! Kubernetes Events (`events.k8s.io/v1`) about the operator's objects, repeats counted.
//!
//! kube-runtime's `Recorder` counts a repeat of the same type, reason and action on the same
//! object as the first Event's series, whatever its note says, so a second "Finalized
//! metadata.version 25" showed as the first "Finalized metadata.version 21" ×2, and a roll's
//! three restarts as the first broker's ×3. Here a repeat is counted only when its note is
//! the same too (as client-go's correlator does); a new note is a new Event.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// How long a repeat is counted into the Event before it (Kubernetes' and client-go's
/// choice); after that it is a new Event.
const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// What makes two Events the same one, repeated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    warning: bool,
    reason: String,
    action: String,
    note: String,
    /// The object's uid, or its kind, namespace and name when it has none.
    regarding: String,
}

/// The last Event published for a key.
#[derive(Debug, Clone)]
struct Published {
    name: String,
    count: i32,
    at: SystemTime,
}

/// What to do with the next occurrence.
#[derive(Debug, PartialEq, Eq)]
enum Publish {
    Create,
    /// Count it into the Event `name`, now seen `count` times.
    Repeat {
        name: String,
        count: i32,
    },
}

#[derive(Debug, Default)]
struct Series {
    published: HashMap<Key, Published>,
}

impl Series {
    fn next(&mut self, key: &Key, now: SystemTime) -> Publish {
        self.published.retain(|_, p| {
            now.duration_since(p.at)
                .map_or(true, |age| age < SERIES_WINDOW)
        });
        match self.published.get(key) {
            Some(p) => Publish::Repeat {
                name: p.name.clone(),
                count: p.count + 1,
            },
            None => Publish::Create,
        }
    }

    fn record(&mut self, key: Key, name: String, count: i32, now: SystemTime) {
        self.published.insert(
            key,
            Published {
                name,
                count,
                at: now,
            },
        );
    }
}

pub struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    series: Mutex<Series>,
}

impl EventRecorder {
    pub fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        Self {
            client,
            controller: controller.to_string(),
            instance: instance.unwrap_or_else(|| controller.to_string()),
            series: Mutex::new(Series::default()),
        }
    }

    /// Creates the Event, or counts a repeat of the same one into it.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) -> Result<(), kube::Error> {
        let key = Key {
            warning,
            reason: reason.to_string(),
            action: action.to_string(),
            note: note.clone(),
            regarding: regarding.uid.clone().unwrap_or_else(|| {
                format!(
                    "{}/{}/{}",
                    regarding.kind.as_deref().unwrap_or_default(),
                    regarding.namespace.as_deref().unwrap_or_default(),
                    regarding.name.as_deref().unwrap_or_default()
                )
            }),
        };
        let now = SystemTime::now();
        let next = self.lock().next(&key, now);
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let events: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let micro = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let (name, count) = match next {
            Publish::Repeat { name, count } => {
                let series = serde_json::json!({
                    "series": EventSeries { count, last_observed_time: micro }
                });
                events
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&series))
                    .await?;
                (name, count)
            }
            Publish::Create => {
                let nanos = now
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let event = Event {
                    metadata: ObjectMeta {
                        name: Some(format!(
                            "{}.{nanos:x}",
                            regarding.name.as_deref().unwrap_or(&self.controller)
                        )),
                        namespace: Some(namespace.to_string()),
                        ..ObjectMeta::default()
                    },
                    action: Some(action.to_string()),
                    reason: Some(reason.to_string()),
                    note: Some(note),
                    event_time: Some(micro),
                    regarding: Some(regarding.clone()),
                    reporting_controller: Some(self.controller.clone()),
                    reporting_instance: Some(self.instance.clone()),
                    type_: Some(if warning { "Warning" } else { "Normal" }.to_string()),
                    ..Event::default()
                };
                let created = events.create(&PostParams::default(), &event).await?;
                (created.metadata.name.unwrap_or_default(), 1)
            }
        };
        self.lock().record(key, name, count, now);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Series> {
        self.series
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(note: &str) -> Key {
        Key {
            warning: false,
            reason: "RollingBroker".into(),
            action: "Roll".into(),
            note: note.into(),
            regarding: "uid-1".into(),
        }
    }

    #[test]
    fn a_repeat_with_the_same_note_is_counted_another_note_is_a_new_event() {
        let mut series = Series::default();
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(series.next(&key("Restarted events-2"), t0), Publish::Create);
        series.record(key("Restarted events-2"), "events.1".into(), 1, t0);
        assert_eq!(
            series.next(&key("Restarted events-2"), t0 + Duration::from_secs(5)),
            Publish::Repeat {
                name: "events.1".into(),
                count: 2
            }
        );
        series.record(
            key("Restarted events-2"),
            "events.1".into(),
            2,
            t0 + Duration::from_secs(5),
        );
        assert_eq!(
            series.next(&key("Restarted events-1"), t0 + Duration::from_secs(10)),
            Publish::Create
        );
        // After the window the same note starts a new Event.
        assert_eq!(
            series.next(&key("Restarted events-2"), t0 + SERIES_WINDOW * 2),
            Publish::Create
        );
    }
}
