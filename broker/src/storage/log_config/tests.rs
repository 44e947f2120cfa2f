use super::*;

#[test]
fn cleanup_policy_may_be_empty_and_a_new_one_may_not_repeat_itself() {
    let none = LogConfig::default()
        .with_new_topic_configs([("cleanup.policy", "")])
        .unwrap();
    assert_eq!(
        none.cleanup_policy,
        CleanupPolicy {
            delete: false,
            compact: false
        }
    );
    assert_eq!(none.to_topic_configs()["cleanup.policy"], "");
    // Kafka 4.2+ refuses a repeated value in a new config, and reads a stored one.
    let repeated = [("cleanup.policy", "delete, delete")];
    let error = LogConfig::default()
        .with_new_topic_configs(repeated)
        .unwrap_err();
    assert!(
        error.to_string().contains("values must not be duplicated"),
        "{error}"
    );
    assert_eq!(
        LogConfig::default()
            .with_topic_configs(repeated)
            .unwrap()
            .cleanup_policy,
        CleanupPolicy::DELETE
    );
    for bad in ["delete,", ",compact", "delete,,compact", "none"] {
        assert!(
            LogConfig::default()
                .with_topic_configs([("cleanup.policy", bad)])
                .is_err(),
            "{bad:?} accepted"
        );
    }
}

#[test]
fn topic_configs_override_defaults_and_reject_bad_values() {
    let config = LogConfig::default()
        .with_topic_configs([
            ("retention.ms", "1000"),
            ("cleanup.policy", "compact,delete"),
            ("compression.type", "zstd"),
            ("compression.zstd.level", "-5"),
            ("compression.gzip.level", "-1"),
            ("message.timestamp.after.max.ms", "0"),
        ])
        .unwrap();
    assert_eq!(config.retention_ms, 1000);
    assert_eq!(config.compression_type, CompressionType::Zstd);
    assert_eq!(config.compression_zstd_level, -5);
    assert_eq!(config.message_timestamp_after_max_ms, 0);
    assert_eq!(
        config.cleanup_policy,
        CleanupPolicy {
            delete: true,
            compact: true
        }
    );
    assert!(matches!(
        LogConfig::default().with_topic_configs([("segment.bytes", "-5")]),
        Err(LogConfigError::InvalidValue { .. })
    ));
    assert!(matches!(
        LogConfig::default().with_topic_configs([("no.such.key", "1")]),
        Err(LogConfigError::UnknownKey { .. })
    ));
    assert!(
        LogConfig::default()
            .with_topic_configs([("cleanup.policy", "shred")])
            .is_err()
    );
    for (key, absurd) in [
        ("segment.bytes", "99999999999"),
        ("max.message.bytes", "2147483648"),
        ("retention.ms", "99999999999999999999"),
        ("retention.bytes", "-2"),
        ("min.insync.replicas", "0"),
        ("compression.type", "ZSTD"),
        ("compression.type", "none"),
        ("compression.gzip.level", "0"),
        ("compression.gzip.level", "10"),
        ("compression.lz4.level", "18"),
        ("compression.zstd.level", "23"),
        ("compression.zstd.level", "-131073"),
        ("message.timestamp.after.max.ms", "-1"),
        ("message.timestamp.before.max.ms", "-1"),
    ] {
        assert!(
            matches!(
                LogConfig::default().with_topic_configs([(key, absurd)]),
                Err(LogConfigError::InvalidValue { .. })
            ),
            "{key}={absurd}"
        );
    }
    let round_trip = LogConfig::default()
        .with_topic_configs(
            config
                .to_topic_configs()
                .iter()
                .map(|(k, v)| (*k, v.as_str()))
                .collect::<Vec<_>>(),
        )
        .unwrap();
    assert_eq!(round_trip, config);
}

#[test]
fn cleaner_segment_and_tiered_storage_configs_parse_as_kafka_does() {
    let config = LogConfig::default()
        .with_topic_configs([
            ("min.cleanable.dirty.ratio", "0.25"),
            ("min.compaction.lag.ms", "1000"),
            ("max.compaction.lag.ms", "5000"),
            ("file.delete.delay.ms", "0"),
            ("preallocate", "TRUE"),
            ("segment.jitter.ms", "300"),
            ("local.retention.ms", "-2"),
            ("local.retention.bytes", "4096"),
            ("remote.log.copy.disable", "true"),
            ("remote.storage.enable", "false"),
        ])
        .unwrap();
    assert_eq!(config.min_cleanable_dirty_ratio, DirtyRatio(0.25));
    assert_eq!(
        (config.min_compaction_lag_ms, config.max_compaction_lag_ms),
        (1000, 5000)
    );
    assert_eq!(config.file_delete_delay_ms, 0);
    assert!(config.preallocate && config.remote_log_copy_disable);
    assert_eq!(config.segment_jitter_ms, 300);
    assert_eq!(config.local_retention_bytes, 4096);
    // Java's spelling of a whole DOUBLE, as DescribeConfigs shows it.
    let whole = LogConfig::default()
        .with_topic_configs([("min.cleanable.dirty.ratio", "1")])
        .unwrap();
    assert_eq!(whole.to_topic_configs()["min.cleanable.dirty.ratio"], "1.0");
    assert_eq!(
        LogConfig::default().to_topic_configs()["min.cleanable.dirty.ratio"],
        "0.5"
    );
    for (key, bad, reason) in [
        (
            "min.cleanable.dirty.ratio",
            "1.5",
            "Value must be no more than 1",
        ),
        (
            "min.cleanable.dirty.ratio",
            "-0.1",
            "Value must be at least 0",
        ),
        (
            "min.cleanable.dirty.ratio",
            "abc",
            "Not a number of type DOUBLE",
        ),
        (
            "min.cleanable.dirty.ratio",
            "NaN",
            "Not a number of type DOUBLE",
        ),
        ("max.compaction.lag.ms", "0", "Value must be at least 1"),
        ("min.compaction.lag.ms", "-1", "Value must be at least 0"),
        ("file.delete.delay.ms", "-1", "Value must be at least 0"),
        ("segment.jitter.ms", "-1", "Value must be at least 0"),
        ("local.retention.bytes", "-3", "Value must be at least -2"),
        (
            "preallocate",
            "yes",
            "Expected value to be either true or false",
        ),
    ] {
        assert_eq!(
            LogConfig::default().with_topic_configs([(key, bad)]),
            Err(LogConfigError::InvalidValue {
                key: key.into(),
                value: bad.into(),
                reason: reason.into()
            })
        );
    }
    assert_eq!(
        LogConfig::default().with_topic_configs([("remote.storage.enable", "true")]),
        Err(LogConfigError::TieredStorageDisabled)
    );
    assert!(matches!(
        LogConfig::default().with_topic_configs([("message.downconversion.enable", "true")]),
        Err(LogConfigError::UnknownKey { .. })
    ));
}
