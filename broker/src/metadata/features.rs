//! Feature levels (KIP-584): what the cluster as a whole has switched on, finalized in the
//! metadata log so every node reads the same levels in the same order, and what this
//! binary can run.
//!
//! `metadata.version` uses Kafka's numbering (3.3-IV3 = 7 … 4.0-IV3 = 25), so Kafka's tools
//! print its names and `kafka-features upgrade --release-version 4.0` asks for the levels
//! Kafka 4.0 finalizes. Oxbow serves the 4.0 feature set and not eligible leader replicas
//! (Kafka turns them on from 4.1-IV0), so its newest `metadata.version` is 4.0-IV3. What a
//! level gates in Oxbow:
//! - `metadata.version` ≥ 3.5-IV2: SCRAM credentials in the log (as in Kafka);
//! - `kraft.version` 1: dynamic voters (AddRaftVoter / RemoveRaftVoter, KIP-853);
//! - `transaction.version` 2: KIP-890's second part (EndTxn v5, implicit partitions);
//! - `group.version` 1: the KIP-848 consumer group protocol (ConsumerGroupHeartbeat).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub const METADATA_VERSION: &str = "metadata.version";
pub const KRAFT_VERSION: &str = "kraft.version";
pub const TRANSACTION_VERSION: &str = "transaction.version";
pub const GROUP_VERSION: &str = "group.version";

/// Kafka's `metadata.version` levels this binary knows, with their names.
const METADATA_VERSIONS: &[(i16, &str)] = &[
    (7, "3.3-IV3"),
    (8, "3.4-IV0"),
    (9, "3.5-IV0"),
    (10, "3.5-IV1"),
    (11, "3.5-IV2"),
    (12, "3.6-IV0"),
    (13, "3.6-IV1"),
    (14, "3.6-IV2"),
    (15, "3.7-IV0"),
    (16, "3.7-IV1"),
    (17, "3.7-IV2"),
    (18, "3.7-IV3"),
    (19, "3.7-IV4"),
    (20, "3.8-IV0"),
    (21, "3.9-IV0"),
    (22, "4.0-IV0"),
    (23, "4.0-IV1"),
    (24, "4.0-IV2"),
    (25, "4.0-IV3"),
];

/// The lowest `metadata.version` a cluster may run at (Kafka 4's minimum too).
pub const MINIMUM_METADATA_VERSION: i16 = 7;
/// From 3.5-IV2 the log carries SCRAM credentials.
pub const SCRAM_METADATA_VERSION: i16 = 11;

/// The newest `metadata.version` this binary runs, normally 4.0-IV3. Upgrade tests stand
/// in for an older release with `OXBOW_MAX_METADATA_VERSION` (a level, read once at
/// start): the node then supports, bootstraps and registers with no more than that, as a
/// release that knew no more would. It can only lower what the node claims.
pub fn latest_metadata_version() -> i16 {
    const LATEST: i16 = 25;
    static CAPPED: std::sync::LazyLock<i16> = std::sync::LazyLock::new(|| {
        match std::env::var("OXBOW_MAX_METADATA_VERSION") {
            Ok(cap) => match cap.trim().parse::<i16>() {
                Ok(cap) => {
                    let capped = cap.clamp(MINIMUM_METADATA_VERSION, LATEST);
                    tracing::warn!(
                        metadata_version = %metadata_version_name(capped),
                        "OXBOW_MAX_METADATA_VERSION: this node runs no newer metadata.version"
                    );
                    capped
                }
                Err(_) => {
                    tracing::error!(value = %cap, "OXBOW_MAX_METADATA_VERSION is not a level; ignored");
                    LATEST
                }
            },
            Err(_) => LATEST,
        }
    });
    *CAPPED
}

/// `metadata.version` levels whose downgrade would drop metadata: below 3.5-IV2 the SCRAM
/// records cannot be kept.
fn metadata_changed_at(level: i16) -> bool {
    level == SCRAM_METADATA_VERSION
}

/// The name Kafka gives a `metadata.version` level.
pub fn metadata_version_name(level: i16) -> String {
    METADATA_VERSIONS
        .iter()
        .find(|(l, _)| *l == level)
        .map_or_else(|| format!("level {level}"), |(_, name)| (*name).to_string())
}

/// One feature this binary knows: the levels it runs, and the level a cluster formatted at
/// `metadata.version` `mv` starts with (Kafka's `Feature.defaultLevel`).
#[derive(Debug, Clone, Copy)]
pub struct FeatureSpec {
    pub name: &'static str,
    pub min: i16,
    pub max: i16,
    default_at: fn(i16) -> i16,
    /// Whether a lower level may be finalized again (kraft.version may not, as in Kafka).
    downgradable: bool,
}

impl FeatureSpec {
    pub fn default_level(&self, metadata_version: i16) -> i16 {
        (self.default_at)(metadata_version).clamp(self.min, self.max)
    }
}

/// Every feature this binary knows, `metadata.version` first.
pub fn known() -> [FeatureSpec; 4] {
    let latest = latest_metadata_version();
    [
        FeatureSpec {
            name: METADATA_VERSION,
            min: MINIMUM_METADATA_VERSION,
            max: latest,
            default_at: |mv| mv,
            downgradable: true,
        },
        FeatureSpec {
            name: KRAFT_VERSION,
            min: 0,
            max: 1,
            default_at: |mv| i16::from(mv >= 21),
            downgradable: false,
        },
        FeatureSpec {
            name: TRANSACTION_VERSION,
            min: 0,
            max: 2,
            default_at: |mv| if mv >= 24 { 2 } else { 0 },
            downgradable: true,
        },
        FeatureSpec {
            name: GROUP_VERSION,
            min: 0,
            max: 1,
            default_at: |mv| i16::from(mv >= 22),
            downgradable: true,
        },
    ]
}

fn spec(name: &str) -> Option<FeatureSpec> {
    known().into_iter().find(|f| f.name == name)
}

/// The levels this binary runs, by feature: what it registers with and ApiVersions lists.
pub fn supported() -> SupportedFeatures {
    known()
        .into_iter()
        .map(|f| (f.name.to_string(), (f.min, f.max)))
        .collect()
}

/// Supported ranges (inclusive) by feature name.
pub type SupportedFeatures = BTreeMap<String, (i16, i16)>;

/// The levels a new cluster starts at: the newest `metadata.version` and every other
/// feature's default there, with `transaction_version` as the node's configuration asks
/// (Kafka's `kafka-storage format --feature transaction.version=N`).
pub fn bootstrap_levels(transaction_version: i16) -> BTreeMap<String, i16> {
    known()
        .iter()
        .map(|f| (f.name.to_string(), bootstrap_level(f, transaction_version)))
        .collect()
}

/// One feature's level in [`bootstrap_levels`].
fn bootstrap_level(feature: &FeatureSpec, transaction_version: i16) -> i16 {
    if feature.name == TRANSACTION_VERSION {
        transaction_version.clamp(feature.min, feature.max)
    } else {
        feature.default_level(latest_metadata_version())
    }
}

/// The finalized levels, as the metadata log says, and the log index of the last change
/// (ApiVersions' finalized features epoch: clients keep the answer of the highest one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalizedFeatures {
    pub levels: BTreeMap<String, i16>,
    #[serde(default)]
    pub epoch: i64,
}

impl FinalizedFeatures {
    /// A feature's finalized level; 0 when never finalized.
    pub fn level(&self, name: &str) -> i16 {
        self.levels.get(name).copied().unwrap_or(0)
    }

    pub fn metadata_version(&self) -> i16 {
        self.level(METADATA_VERSION)
    }

    /// Whether the levels were ever written (a cluster formatted before feature levels
    /// existed has none until its first active controller of this release writes them).
    pub fn is_set(&self) -> bool {
        self.levels.contains_key(METADATA_VERSION)
    }

    /// These levels, or — until the log has any (the moments between a release before
    /// feature levels and its first active controller of this one) — the levels a cluster
    /// formatted by this node would start at.
    pub fn or_bootstrap(&self, transaction_version: i16) -> FinalizedFeatures {
        if self.is_set() {
            self.clone()
        } else {
            // Epoch 0, below any log index: valid for clients (they drop the finalized
            // levels of epoch -1), superseded by the log's first finalized levels.
            FinalizedFeatures {
                levels: bootstrap_levels(transaction_version),
                epoch: 0,
            }
        }
    }

    /// One feature's level as [`Self::or_bootstrap`] would give it, without copying the
    /// levels (read on every transactional produce and group heartbeat).
    pub fn level_or_bootstrap(&self, name: &str, transaction_version: i16) -> i16 {
        if self.is_set() {
            return self.level(name);
        }
        spec(name).map_or(0, |f| bootstrap_level(&f, transaction_version))
    }

    /// Why this binary cannot run at these levels, if it cannot: one line naming the level.
    pub fn unsupported_here(&self) -> Option<String> {
        unsupported_by(&self.levels, &supported(), "this node")
    }
}

/// The first finalized level `supported` does not cover, as a sentence.
pub fn unsupported_by(
    levels: &BTreeMap<String, i16>,
    supported: &SupportedFeatures,
    who: &str,
) -> Option<String> {
    levels.iter().find_map(|(name, &level)| {
        let (min, max) = supported.get(name).copied().unwrap_or((0, 0));
        (level != 0 && !(min..=max).contains(&level)).then(|| {
            let shown = |l: i16| {
                if name == METADATA_VERSION {
                    metadata_version_name(l)
                } else {
                    l.to_string()
                }
            };
            if min == 0 && max == 0 {
                format!(
                    "{who} does not support {name}, finalized at {}",
                    shown(level)
                )
            } else {
                format!(
                    "{who} supports {name} {} to {}, but the cluster finalized {}",
                    shown(min),
                    shown(max),
                    shown(level)
                )
            }
        })
    })
}

/// How UpdateFeatures asks for a level (Kafka's `FeatureUpdate.UpgradeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum UpgradeType {
    Upgrade,
    SafeDowngrade,
    UnsafeDowngrade,
}

impl UpgradeType {
    /// UpdateFeatures' `upgrade_type` (v1+): 1 upgrade, 2 safe, 3 unsafe downgrade.
    pub fn from_code(code: i8) -> Option<Self> {
        match code {
            1 => Some(Self::Upgrade),
            2 => Some(Self::SafeDowngrade),
            3 => Some(Self::UnsafeDowngrade),
            _ => None,
        }
    }
}

/// One feature of an UpdateFeatures request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeatureUpdate {
    pub name: String,
    pub level: i16,
    pub upgrade_type: UpgradeType,
}

/// Checks `updates` against the finalized levels, this node's support and every
/// registered broker's (`brokers`: node id and supported ranges; `None` for a broker of
/// a release before feature levels, which can read no new level). Returns the levels to
/// finalize, or Kafka's INVALID_UPDATE_VERSION message. Kafka applies all or none.
pub fn validate_updates(
    finalized: &FinalizedFeatures,
    updates: &[FeatureUpdate],
    brokers: &[(i32, Option<&SupportedFeatures>)],
) -> Result<BTreeMap<String, i16>, String> {
    let mut changes = BTreeMap::new();
    for update in updates {
        let FeatureUpdate {
            name,
            level,
            upgrade_type,
        } = update;
        let invalid =
            |why: &str| format!("Invalid update version {level} for feature {name}. {why}");
        let Some(spec) = spec(name) else {
            return Err(invalid(
                "The controller does not support the given feature.",
            ));
        };
        let current = finalized.level(name);
        if *level < 0 {
            return Err(invalid("A feature version cannot be less than 0."));
        }
        if *level != 0 && !(spec.min..=spec.max).contains(level) {
            return Err(invalid(&format!(
                "This controller only supports versions {}-{}",
                spec.min, spec.max
            )));
        }
        if *level == 0 && name == METADATA_VERSION {
            return Err(invalid("metadata.version cannot be disabled."));
        }
        for (node_id, support) in brokers {
            let range = support.and_then(|s| s.get(name.as_str()).copied());
            let fits = match range {
                Some((min, max)) => (*level == 0 && min == 0) || (min..=max).contains(level),
                None => *level == current,
            };
            if !fits {
                return Err(invalid(&match range {
                    Some((min, max)) => {
                        format!("Broker {node_id} only supports versions {min}-{max}")
                    }
                    None => format!(
                        "Broker {node_id} runs a release without feature levels; upgrade it first"
                    ),
                }));
            }
        }
        if level < &current {
            if *upgrade_type == UpgradeType::Upgrade {
                return Err(invalid(
                    "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.",
                ));
            }
            if !spec.downgradable {
                return Err(invalid("Can't downgrade the version of this feature."));
            }
            if name == METADATA_VERSION && ((*level + 1)..=current).any(metadata_changed_at) {
                return Err(invalid(if *upgrade_type == UpgradeType::UnsafeDowngrade {
                    "Unsafe metadata downgrade is not supported in this version."
                } else {
                    "Refusing to perform the requested downgrade because it might delete metadata information."
                }));
            }
        } else if level > &current && *upgrade_type != UpgradeType::Upgrade {
            return Err(invalid("Can't downgrade to a newer version."));
        }
        if level != &current {
            changes.insert(name.clone(), *level);
        }
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finalized() -> FinalizedFeatures {
        FinalizedFeatures {
            levels: bootstrap_levels(2),
            epoch: 1,
        }
    }

    fn update(name: &str, level: i16, upgrade_type: UpgradeType) -> FeatureUpdate {
        FeatureUpdate {
            name: name.into(),
            level,
            upgrade_type,
        }
    }

    #[test]
    fn a_new_cluster_starts_at_the_newest_levels() {
        let levels = bootstrap_levels(2);
        assert_eq!(levels[METADATA_VERSION], latest_metadata_version());
        assert_eq!(levels[KRAFT_VERSION], 1);
        assert_eq!(levels[TRANSACTION_VERSION], 2);
        assert_eq!(levels[GROUP_VERSION], 1);
        assert_eq!(bootstrap_levels(1)[TRANSACTION_VERSION], 1);
        assert_eq!(metadata_version_name(25), "4.0-IV3");
        assert_eq!(finalized().unsupported_here(), None);
        let unset = FinalizedFeatures::default();
        for (name, level) in bootstrap_levels(1) {
            assert_eq!(unset.level_or_bootstrap(&name, 1), level, "{name}");
            assert_eq!(unset.or_bootstrap(1).level(&name), level, "{name}");
        }
        assert_eq!(finalized().level_or_bootstrap(TRANSACTION_VERSION, 0), 2);
    }

    #[test]
    fn safe_downgrades_and_upgrades_of_plain_features_are_finalized() {
        let support = supported();
        let brokers = [(1, Some(&support)), (2, Some(&support))];
        let down = validate_updates(
            &finalized(),
            &[update(TRANSACTION_VERSION, 1, UpgradeType::SafeDowngrade)],
            &brokers,
        );
        assert_eq!(down, Ok(BTreeMap::from([(TRANSACTION_VERSION.into(), 1)])));
        let mut at_one = finalized();
        at_one.levels.insert(TRANSACTION_VERSION.into(), 1);
        let up = validate_updates(
            &at_one,
            &[update(TRANSACTION_VERSION, 2, UpgradeType::Upgrade)],
            &brokers,
        );
        assert_eq!(up, Ok(BTreeMap::from([(TRANSACTION_VERSION.into(), 2)])));
        // Asking for what is finalized changes nothing.
        let same = validate_updates(
            &finalized(),
            &[update(GROUP_VERSION, 1, UpgradeType::Upgrade)],
            &brokers,
        );
        assert_eq!(same, Ok(BTreeMap::new()));
    }

    #[test]
    fn refusals_name_the_reason() {
        let support = supported();
        let ok = [(1, Some(&support))];
        let refused = |updates: &[FeatureUpdate], brokers: &[(i32, Option<&SupportedFeatures>)]| {
            validate_updates(&finalized(), updates, brokers).unwrap_err()
        };
        assert!(
            refused(&[update("no.such.feature", 1, UpgradeType::Upgrade)], &ok)
                .contains("does not support the given feature")
        );
        assert!(
            refused(&[update(TRANSACTION_VERSION, 3, UpgradeType::Upgrade)], &ok)
                .contains("only supports versions 0-2")
        );
        assert!(
            refused(&[update(TRANSACTION_VERSION, 1, UpgradeType::Upgrade)], &ok)
                .contains("without setting the upgrade type")
        );
        assert!(
            refused(&[update(KRAFT_VERSION, 0, UpgradeType::SafeDowngrade)], &ok)
                .contains("Can't downgrade the version of this feature.")
        );
        assert!(
            refused(
                &[update(METADATA_VERSION, 10, UpgradeType::SafeDowngrade)],
                &ok
            )
            .contains("might delete metadata information")
        );
        assert!(
            refused(
                &[update(METADATA_VERSION, 10, UpgradeType::UnsafeDowngrade)],
                &ok
            )
            .contains("Unsafe metadata downgrade is not supported")
        );
        // Between 4.0-IV3 and 3.6-IV0 no Oxbow record changed: a safe downgrade.
        assert_eq!(
            validate_updates(
                &finalized(),
                &[update(METADATA_VERSION, 12, UpgradeType::SafeDowngrade)],
                &ok
            ),
            Ok(BTreeMap::from([(METADATA_VERSION.into(), 12)]))
        );
        // A broker that supports less, or one from before feature levels, holds it back.
        let old = SupportedFeatures::from([(TRANSACTION_VERSION.into(), (0, 1))]);
        let mut at_one = finalized();
        at_one.levels.insert(TRANSACTION_VERSION.into(), 1);
        let error = validate_updates(
            &at_one,
            &[update(TRANSACTION_VERSION, 2, UpgradeType::Upgrade)],
            &[(1, Some(&support)), (3, Some(&old))],
        )
        .unwrap_err();
        assert!(
            error.contains("Broker 3 only supports versions 0-1"),
            "{error}"
        );
        let error = validate_updates(
            &at_one,
            &[update(TRANSACTION_VERSION, 2, UpgradeType::Upgrade)],
            &[(4, None)],
        )
        .unwrap_err();
        assert!(error.contains("Broker 4 runs a release without feature levels"));
    }

    #[test]
    fn a_node_names_the_level_it_cannot_run() {
        let mut levels = finalized();
        levels.levels.insert(METADATA_VERSION.into(), 40);
        let line = levels.unsupported_here().unwrap();
        assert!(
            line.contains("metadata.version 3.3-IV3 to 4.0-IV3"),
            "{line}"
        );
        assert!(line.contains("level 40"), "{line}");
        levels.levels.insert(METADATA_VERSION.into(), 25);
        levels.levels.insert("share.version".into(), 1);
        assert!(
            levels
                .unsupported_here()
                .unwrap()
                .contains("does not support share.version")
        );
    }
}
