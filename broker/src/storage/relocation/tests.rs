//! The switch of a move between log directories after maintenance changed the log under
//! the bulk copy: each change is made between the two steps, so the interleaving is the
//! one under test, not whichever the scheduler picked.

use std::sync::Arc;

use super::*;
use crate::model::TopicPartition;
use crate::storage::log_read::ReadLimit;
use crate::storage::test_support::{START_MS, batch, small_config, test_log};

fn whole(log: &Log) -> Vec<u8> {
    log.read_with_limit(log.log_start_offset(), u64::MAX / 2, ReadLimit::LogEnd)
        .unwrap()
        .read_to_vec()
        .unwrap()
}

/// Appends 300 one-record batches to `log` and `reference`, copies `log`'s segments to a
/// second log directory, applies `change` to both, switches, and checks that the moved
/// log holds what the reference does, reopened from its new directory too.
fn move_around(change: impl Fn(&Log)) {
    let moving = test_log(small_config());
    let reference = test_log(small_config());
    for n in 0..300 {
        let bytes = batch(1, 100, START_MS + n);
        moving.log.append(&bytes, 0).unwrap();
        reference.log.append(&bytes, 0).unwrap();
    }
    assert!(moving.log.segment_count() > 5);
    let target_dir = tempfile::tempdir().unwrap();
    let relocation = Relocation::new(Arc::new(LogDirHealth::new(target_dir.path().to_path_buf())));
    let staging = target_dir.path().join("t-0.x-future");
    std::fs::create_dir_all(&staging).unwrap();
    let copied = moving.log.copy_segments(&relocation, &staging).unwrap();
    change(&moving.log);
    change(&reference.log);
    let destination = target_dir.path().join("t-0");
    moving
        .log
        .switch(&relocation, &staging, &destination, &copied)
        .unwrap();
    assert_eq!(moving.log.dir(), destination);
    assert_eq!(
        moving.log.log_start_offset(),
        reference.log.log_start_offset()
    );
    assert_eq!(moving.log.log_end_offset(), reference.log.log_end_offset());
    assert!(
        whole(&moving.log) == whole(&reference.log),
        "moved log differs"
    );
    let config = small_config();
    let (reopened, report) = Log::open(
        &destination,
        TopicPartition::new("t", 0),
        config,
        moving.clock.clone(),
        Arc::new(LogDirHealth::new(target_dir.path().to_path_buf())),
        false,
    )
    .unwrap();
    assert_eq!(report.truncated_bytes, 0, "the copy is whole: {report:?}");
    assert!(
        whole(&reopened) == whole(&reference.log),
        "reopened copy differs"
    );
}

#[test]
fn appends_after_the_bulk_copy_are_carried_over() {
    move_around(|log| {
        for n in 300..400 {
            log.append(&batch(1, 100, START_MS + n), 0).unwrap();
        }
    });
}

#[test]
fn segments_retention_deleted_after_the_bulk_copy_stay_deleted() {
    move_around(|log| {
        log.advance_log_start_offset(150).unwrap();
    });
}

#[test]
fn a_truncation_after_the_bulk_copy_is_carried_over() {
    move_around(|log| {
        log.truncate_to(120).unwrap();
        for n in 0..50 {
            log.append(&batch(1, 100, START_MS + 1_000 + n), 0).unwrap();
        }
    });
}

/// A truncation cuts the tail segment's file while the bulk copy reads it (seen in CI: the
/// move stopped with "segment shorter than its size" and the replica stayed where it was).
/// The bulk copy takes what is there; the switch copies the reopened segment again whole.
#[test]
fn a_segment_cut_under_the_bulk_copy_is_copied_as_far_as_it_goes() {
    let t = test_log(small_config());
    for n in 0..300 {
        t.log.append(&batch(1, 100, START_MS + n), 0).unwrap();
    }
    let tail = t.log.segments.read().values().next_back().cloned().unwrap();
    let size = tail.size();
    t.log.truncate_to(tail.base_offset() + 1).unwrap();
    assert!(
        tail.file().metadata().unwrap().len() < size,
        "the file was cut"
    );
    let target_dir = tempfile::tempdir().unwrap();
    let relocation = Relocation::new(Arc::new(LogDirHealth::new(target_dir.path().to_path_buf())));
    let staging = target_dir.path().join("t-0.x-future");
    std::fs::create_dir_all(&staging).unwrap();
    let reached =
        copy_log_bytes(&tail, &staging, 0, size, &relocation, UpTo::AsFarAsItGoes).unwrap();
    assert!(
        reached < size,
        "copied {reached} of a file cut below {size}"
    );
    let copied_file = staging.join(tail.log_path().file_name().unwrap());
    assert_eq!(std::fs::metadata(&copied_file).unwrap().len(), reached);
    assert!(
        copy_log_bytes(&tail, &staging, 0, size, &relocation, UpTo::Exactly).is_err(),
        "the switch, which holds maintenance, must not accept a short file"
    );
}
