//! The log manager across several log directories, with real directories and files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kafka_protocol::records::Compression;
use oxbow_broker::storage::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_broker::storage::{LogConfig, LogManager, LogManagerError, SystemClock, TopicPartition};

fn batch() -> Vec<u8> {
    let record = SimpleRecord {
        value: Some(b"hello".to_vec().into()),
        timestamp: 1,
        ..Default::default()
    };
    build_batch(&[record], Compression::None, ProducerFields::default())
        .unwrap()
        .to_vec()
}

fn open(dirs: &[std::path::PathBuf]) -> (LogManager, oxbow_broker::storage::StartupReport) {
    LogManager::open(dirs, &|_| LogConfig::default(), Arc::new(SystemClock)).unwrap()
}

#[test]
fn partitions_spread_over_dirs_and_reload_after_restart() {
    let root = tempfile::tempdir().unwrap();
    let dirs = vec![root.path().join("a"), root.path().join("b")];
    let (manager, _) = open(&dirs);
    for partition in 0..6 {
        let log = manager
            .create(
                TopicPartition::new("orders", partition),
                LogConfig::default(),
            )
            .unwrap();
        log.append(&mut batch(), 0).unwrap();
    }
    let again = manager.create(TopicPartition::new("orders", 0), LogConfig::default());
    assert!(
        matches!(&again, Err(LogManagerError::AlreadyExists(tp)) if *tp == TopicPartition::new("orders", 0)),
        "creating an existing partition: {:?}",
        again.map(|log| log.dir().to_path_buf())
    );
    for dir in &dirs {
        let count = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count();
        assert_eq!(
            count,
            3,
            "{} should hold half the partitions",
            dir.display()
        );
    }
    manager.shutdown().unwrap();
    drop(manager);

    let (manager, report) = open(&dirs);
    assert_eq!(report.loaded.len(), 6);
    assert!(report.unclean_dirs.is_empty(), "shutdown was clean");
    assert!(
        report
            .loaded
            .iter()
            .all(|(_, load)| load.recovered_segments == 0)
    );
    let log = manager.get(&TopicPartition::new("orders", 4)).unwrap();
    assert_eq!(log.log_end_offset(), 1);
    drop(manager);

    // No shutdown this time: the next start recovers the active segments.
    let (_, report) = open(&dirs);
    assert_eq!(report.unclean_dirs.len(), 2);
    assert_eq!(report.loaded.len(), 6);
}

#[test]
fn a_broken_partition_does_not_stop_the_others_and_a_bad_dir_goes_offline() {
    let root = tempfile::tempdir().unwrap();
    let good = root.path().join("good");
    let (manager, _) = open(std::slice::from_ref(&good));
    for partition in 0..3 {
        manager
            .create(TopicPartition::new("t", partition), LogConfig::default())
            .unwrap()
            .append(&mut batch(), 0)
            .unwrap();
    }
    manager.shutdown().unwrap();
    drop(manager);
    std::fs::write(good.join("t-1/partition.checkpoint"), "garbage").unwrap();
    // A "log dir" that is a plain file cannot be used.
    let bad = root.path().join("bad");
    std::fs::write(&bad, "not a directory").unwrap();

    let (manager, report) = open(&[good.clone(), bad.clone()]);
    assert_eq!(report.loaded.len(), 2);
    assert_eq!(report.failed.len(), 1);
    assert!(report.failed[0].0.ends_with("t-1"));
    assert_eq!(report.offline_dirs.len(), 1);
    assert!(manager.get(&TopicPartition::new("t", 1)).is_none());
    assert_eq!(
        manager
            .get(&TopicPartition::new("t", 2))
            .unwrap()
            .log_end_offset(),
        1
    );
    // New partitions only go to the online directory.
    let log = manager
        .create(TopicPartition::new("new", 0), LogConfig::default())
        .unwrap();
    assert!(log.dir().starts_with(&good));

    let only_bad = LogManager::open(&[bad], &|_| LogConfig::default(), Arc::new(SystemClock));
    assert!(
        matches!(only_bad, Err(LogManagerError::AllDirsOffline)),
        "opening with only an unusable directory: {:?}",
        only_bad.map(|_| "opened")
    );
}
