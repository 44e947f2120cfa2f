//! Client quotas as Kafka defines them: byte rates for producers and consumers and a share
//! of request-handling time, set per user, per client id, or per both, each with defaults
//! (AlterClientQuotas, kept in the metadata log), and enforced per connection: a client
//! over its quota is answered with `throttle_time_ms` and its connection is not read
//! from for that long (KIP-219).
//!
//! ```text
//!   quota of (user U, client C), first entity holding the key wins:
//!     users/U/clients/C · users/U/clients/<default> · users/U
//!     users/<default>/clients/C · users/<default>/clients/<default> · users/<default>
//!     clients/C · clients/<default>
//! ```
//! Clients sharing the matched entity share its budget (all of alice's clients under
//! `users/alice`; each user on its own under `users/<default>`).

mod rate;

use std::collections::HashMap;
use std::sync::Mutex;

pub use crate::model::quota::{
    CLIENT_ID, Match, QuotaEntity, QuotaKey, QuotaTable, QuotaValue, USER, filter_matches, resolve,
};
pub use rate::Rate;

/// Kafka's sensor windows (`quota.window.size.seconds`, `quota.window.num`): a bucket holds
/// one window's worth, and no throttle is longer than all of them.
const WINDOW_MS: u64 = 1000;
const WINDOWS: usize = 11;
/// Sensors idle this long are dropped (Kafka expires quota sensors after an hour).
const SENSOR_IDLE_MS: u64 = 3_600_000;

/// The broker's quota sensors: one windowed rate per quota key and matched entity.
#[derive(Debug, Default)]
pub struct ClientQuotas {
    sensors: Mutex<HashMap<(QuotaKey, String, String), Rate>>,
}

impl ClientQuotas {
    /// Records `value` against the connection's quota on `key`; the throttle in ms it
    /// earns (0: within quota, or no quota set).
    pub fn record(
        &self,
        table: &QuotaTable,
        key: QuotaKey,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: u64,
    ) -> u64 {
        let Some((bound, (user_tag, client_tag))) = resolve(table, key, user, client_id) else {
            return 0;
        };
        let Ok(mut sensors) = self.sensors.lock() else {
            return 0;
        };
        if sensors.len() > 10_000 {
            sensors.retain(|_, rate| now_ms.saturating_sub(rate.last_record_ms) < SENSOR_IDLE_MS);
        }
        let rate = sensors
            .entry((key, user_tag, client_tag))
            .or_insert_with(|| Rate::new(WINDOW_MS, WINDOWS));
        rate.record(now_ms, value, bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::quota::EntityName;

    fn entity(user: Option<Option<&str>>, client: Option<Option<&str>>) -> QuotaEntity {
        QuotaEntity {
            user: user.map(EntityName::from_wire),
            client_id: client.map(EntityName::from_wire),
        }
    }

    fn table(entries: &[(QuotaEntity, f64)]) -> QuotaTable {
        entries
            .iter()
            .map(|(e, v)| {
                (
                    e.clone(),
                    [(QuotaKey::ProducerByteRate, QuotaValue(*v))]
                        .into_iter()
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn the_most_specific_entity_wins_in_kafkas_order() {
        let t = table(&[
            (entity(None, Some(None)), 1.0),
            (entity(None, Some(Some("app"))), 2.0),
            (entity(Some(None), None), 3.0),
            (entity(Some(Some("alice")), None), 4.0),
            (entity(Some(Some("alice")), Some(Some("app"))), 5.0),
        ]);
        let key = QuotaKey::ProducerByteRate;
        let quota = |user, client| resolve(&t, key, user, client);
        assert_eq!(
            quota("alice", "app"),
            Some((5.0, ("alice".into(), "app".into())))
        );
        assert_eq!(
            quota("alice", "other"),
            Some((4.0, ("alice".into(), String::new())))
        );
        assert_eq!(
            quota("bob", "app"),
            Some((3.0, ("bob".into(), String::new()))),
            "users/<default> before clients/app, each user on its own budget"
        );
        let clients_only = table(&[
            (entity(None, Some(None)), 1.0),
            (entity(None, Some(Some("app"))), 2.0),
        ]);
        assert_eq!(
            resolve(&clients_only, key, "bob", "app"),
            Some((2.0, (String::new(), "app".into())))
        );
        assert_eq!(
            resolve(&clients_only, key, "bob", "x"),
            Some((1.0, (String::new(), "x".into())))
        );
        assert_eq!(resolve(&QuotaTable::new(), key, "bob", "x"), None);
    }

    #[test]
    fn bad_entities_keys_and_values_are_refused() {
        assert!(QuotaEntity::from_components([(USER, Some("alice"))]).is_ok());
        assert!(QuotaEntity::from_components([(USER, None), (CLIENT_ID, Some("c"))]).is_ok());
        assert!(QuotaEntity::from_components([(USER, None), (USER, None)]).is_err());
        assert!(QuotaEntity::from_components([("ip", None)]).is_err());
        assert!(QuotaEntity::from_components([("group", None)]).is_err());
        assert!(QuotaEntity::from_components([(USER, Some(""))]).is_err());
        assert!(QuotaEntity::from_components([]).is_err());
        assert!(QuotaKey::checked("producer_byte_rate", 1024.0).is_ok());
        assert!(QuotaKey::checked("producer_byte_rate", -1.0).is_err());
        assert!(QuotaKey::checked("producer_byte_rate", 0.5).is_err());
        assert!(QuotaKey::checked("request_percentage", 12.5).is_ok());
        assert!(QuotaKey::checked("acks", 1.0).is_err());
    }

    #[test]
    fn filters_select_exact_default_and_any_names() {
        let alice_app = entity(Some(Some("alice")), Some(Some("app")));
        let default_user = entity(Some(None), None);
        let any_user = [(USER.to_string(), Match::Any)];
        assert!(filter_matches(&any_user, false, &alice_app));
        assert!(!filter_matches(&any_user, true, &alice_app), "strict");
        assert!(filter_matches(&any_user, true, &default_user));
        let default_only = [(USER.to_string(), Match::Default)];
        assert!(filter_matches(&default_only, false, &default_user));
        assert!(!filter_matches(&default_only, false, &alice_app));
        let alice = [(USER.to_string(), Match::Exact("alice".into()))];
        assert!(filter_matches(&alice, false, &alice_app));
    }

    #[test]
    fn a_client_over_its_quota_is_throttled_and_others_are_not() {
        let t = table(&[(entity(None, Some(Some("fast"))), 1000.0)]);
        let quotas = ClientQuotas::default();
        let key = QuotaKey::ProducerByteRate;
        assert_eq!(quotas.record(&t, key, "u", "fast", 1000.0, 0), 0);
        assert!(quotas.record(&t, key, "u", "fast", 10_000.0, 0) > 0);
        assert_eq!(quotas.record(&t, key, "u", "slow", 1e9, 0), 0, "no quota");
    }
}
