//! The log manager across several log directories, with real directories and files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use kafka_protocol::records::Compression;
use oxbow_broker::batch_builder::{ProducerFields, SimpleRecord, build_batch};
use oxbow_broker::{LogConfig, LogManager, LogManagerError, SystemClock, TopicPartition};

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

fn open(dirs: &[std::path::PathBuf]) -> (LogManager, oxbow_broker::StartupReport) {
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
        log.append(&batch(), 0).unwrap();
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
            .append(&batch(), 0)
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

fn numbered_batch(n: u32) -> Vec<u8> {
    let record = SimpleRecord {
        value: Some(
            format!("record-{n:08}-{}", "x".repeat(200))
                .into_bytes()
                .into(),
        ),
        timestamp: 1_700_000_000_000 + i64::from(n),
        ..Default::default()
    };
    build_batch(&[record], Compression::None, ProducerFields::default())
        .unwrap()
        .to_vec()
}

fn whole_log(log: &oxbow_broker::Log) -> Vec<u8> {
    log.read_with_limit(
        log.log_start_offset(),
        u64::MAX / 2,
        oxbow_broker::ReadLimit::LogEnd,
    )
    .unwrap()
    .read_to_vec()
    .unwrap()
}

/// AlterReplicaLogDirs' storage side: a replica moves to another log directory while a
/// writer appends to it, loses and duplicates nothing (byte for byte the same as a log
/// that never moved), keeps taking appends there, leaves nothing in the old directory,
/// and loads from the new one after a restart without recovery.
#[test]
fn a_replica_moves_between_log_dirs_while_it_takes_appends() {
    let root = tempfile::tempdir().unwrap();
    let dirs = vec![root.path().join("a"), root.path().join("b")];
    let small = || LogConfig {
        segment_bytes: 16 * 1024,
        ..LogConfig::default()
    };
    let (manager, _) = LogManager::open(&dirs, &|_| small(), Arc::new(SystemClock)).unwrap();
    let manager = Arc::new(manager);
    let tp = TopicPartition::new("moving", 0);
    let log = manager.create(tp.clone(), small()).unwrap();
    let reference_root = tempfile::tempdir().unwrap();
    let (reference, _) = LogManager::open(
        &[reference_root.path().to_path_buf()],
        &|_| small(),
        Arc::new(SystemClock),
    )
    .unwrap();
    let unmoved = reference.create(tp.clone(), small()).unwrap();
    let from = log.dir().parent().unwrap().to_path_buf();
    let to = dirs.iter().find(|d| **d != from).unwrap().clone();
    for n in 0..2_000 {
        log.append(&numbered_batch(n), 0).unwrap();
        unmoved.append(&numbered_batch(n), 0).unwrap();
    }
    assert!(log.segment_count() > 10, "several segments to copy");

    let writer = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for n in 2_000..6_000 {
                log.append(&numbered_batch(n), 0).unwrap();
            }
        })
    };
    manager.move_replica(&tp, &to).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while manager.placement(&tp).unwrap().moving.is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the move did not finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    writer.join().unwrap();
    for n in 2_000..6_000 {
        unmoved.append(&numbered_batch(n), 0).unwrap();
    }
    assert_eq!(
        log.dir(),
        to.join("moving-0"),
        "the replica lives in the new dir"
    );
    for n in 6_000..6_100 {
        log.append(&numbered_batch(n), 0).unwrap();
        unmoved.append(&numbered_batch(n), 0).unwrap();
    }
    assert_eq!(log.log_end_offset(), 6_100);
    assert!(
        whole_log(&log) == whole_log(&unmoved),
        "the moved log holds exactly the batches of the log that never moved"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::fs::read_dir(&from)
        .unwrap()
        .any(|e| e.unwrap().path().is_dir())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the old copy stays in {}",
            from.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let expected = whole_log(&unmoved);
    drop(log);
    manager.shutdown().unwrap();
    drop(manager);

    let (manager, report) = open(&dirs);
    assert_eq!(report.loaded.len(), 1);
    assert_eq!(
        report.loaded[0].1.recovered_segments, 0,
        "a clean move needs no recovery"
    );
    let log = manager.get(&tp).unwrap();
    assert_eq!(log.dir(), to.join("moving-0"));
    assert_eq!(log.log_end_offset(), 6_100);
    assert!(
        whole_log(&log) == expected,
        "the same bytes after a restart"
    );
}

/// AlterReplicaLogDirs' refusals, and a directory asked for before the replica exists.
#[test]
fn moves_to_unknown_dirs_are_refused_and_a_dir_asked_before_creation_is_used() {
    let root = tempfile::tempdir().unwrap();
    let dirs = vec![root.path().join("a"), root.path().join("b")];
    let (manager, _) = open(&dirs);
    let manager = Arc::new(manager);
    let tp = TopicPartition::new("later", 0);
    let elsewhere = root.path().join("not-a-log-dir");
    assert!(matches!(
        manager.move_replica(&tp, &elsewhere),
        Err(LogManagerError::UnknownLogDir(p)) if p == elsewhere
    ));
    for wanted in [&dirs[1], &dirs[0]] {
        let tp = TopicPartition::new("later", if wanted == &dirs[1] { 0 } else { 1 });
        assert!(matches!(
            manager.move_replica(&tp, wanted),
            Err(LogManagerError::NotHosted(t)) if t == tp
        ));
        let log = manager.create(tp, LogConfig::default()).unwrap();
        assert_eq!(log.dir().parent().unwrap(), wanted.as_path());
    }
    // Naming the directory a replica is in already is a no-op.
    let log = manager.get(&tp).unwrap();
    manager.move_replica(&tp, &dirs[1]).unwrap();
    assert!(manager.placement(&tp).unwrap().moving.is_none());
    assert_eq!(log.dir().parent().unwrap(), dirs[1].as_path());
}

/// Retention (a new log start), truncation and appends racing a move between log
/// directories: whatever the interleaving, the moved log ends as the same ops leave a log
/// that never moved. Repeated, since the interleaving differs from run to run.
#[test]
fn maintenance_during_a_move_between_log_dirs_is_not_lost() {
    for round in 0..5 {
        let root = tempfile::tempdir().unwrap();
        let dirs = vec![root.path().join("a"), root.path().join("b")];
        let small = || LogConfig {
            segment_bytes: 8 * 1024,
            ..LogConfig::default()
        };
        let (manager, _) = LogManager::open(&dirs, &|_| small(), Arc::new(SystemClock)).unwrap();
        let manager = Arc::new(manager);
        let (reference, _) = LogManager::open(
            &[root.path().join("reference")],
            &|_| small(),
            Arc::new(SystemClock),
        )
        .unwrap();
        let tp = TopicPartition::new("racing", 0);
        let log = manager.create(tp.clone(), small()).unwrap();
        let unmoved = reference.create(tp.clone(), small()).unwrap();
        let both = |op: &dyn Fn(&oxbow_broker::Log)| {
            op(&log);
            op(&unmoved);
        };
        for n in 0..2_000 {
            both(&|l| {
                l.append(&numbered_batch(n), 0).unwrap();
            });
        }
        let to = dirs
            .iter()
            .find(|d| Some(d.as_path()) != log.dir().parent())
            .unwrap()
            .clone();
        manager.move_replica(&tp, &to).unwrap();
        both(&|l| {
            l.advance_log_start_offset(500 + round * 10).unwrap();
        });
        both(&|l| {
            l.truncate_to(1_800).unwrap();
        });
        for n in 1_800..2_500 {
            both(&|l| {
                l.append(&numbered_batch(n), 0).unwrap();
            });
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while manager.placement(&tp).unwrap().moving.is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: the move did not finish"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(log.dir(), to.join("racing-0"), "round {round}");
        assert_eq!(
            log.log_start_offset(),
            unmoved.log_start_offset(),
            "round {round}"
        );
        assert_eq!(log.log_end_offset(), 2_500, "round {round}");
        assert!(
            whole_log(&log) == whole_log(&unmoved),
            "round {round}: the moved log differs from the one that never moved"
        );
        drop(log);
        manager.shutdown().unwrap();
        drop(manager);
        let (manager, report) = open(&dirs);
        assert_eq!(
            report.loaded.len(),
            1,
            "round {round}: one copy after a restart"
        );
        let log = manager.get(&tp).unwrap();
        assert!(
            whole_log(&log) == whole_log(&unmoved),
            "round {round}: the same bytes after a restart"
        );
    }
}
