//! `file.delete.delay.ms`: deleted segments leave the log at once, their files later.

use crate::storage::LogConfig;
use crate::storage::test_support::*;

fn files_with_suffix(t: &TestLog, suffix: &str) -> usize {
    std::fs::read_dir(t.log.dir())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(suffix)
        })
        .count()
}

fn log_with_old_segment(delay_ms: i64) -> TestLog {
    let t = test_log(LogConfig {
        retention_ms: 1_000,
        file_delete_delay_ms: delay_ms,
        ..small_config()
    });
    t.log.append(&batch(2, 10, START_MS), 0).unwrap();
    t.log.roll().unwrap();
    t.log.append(&batch(2, 10, START_MS + 5_000), 0).unwrap();
    t.clock.advance(2_000);
    t
}

#[test]
fn a_deleted_segment_keeps_its_files_for_the_delay() {
    let t = log_with_old_segment(10_000);
    let open = t.log.read(0, 1 << 20).unwrap();
    assert_eq!(t.log.apply_retention().unwrap().deleted_segments, 1);
    assert_eq!(t.log.log_start_offset(), 2);
    assert_eq!(files_with_suffix(&t, ".deleted"), 3);
    assert_eq!(files_with_suffix(&t, ".log"), 1);
    // A read that began before the deletion still gets its bytes.
    assert!(!open.read_to_vec().unwrap().is_empty());
    t.clock.advance(9_999);
    t.log.apply_retention().unwrap();
    assert_eq!(files_with_suffix(&t, ".deleted"), 3);
    t.clock.advance(1);
    t.log.apply_retention().unwrap();
    assert_eq!(files_with_suffix(&t, ".deleted"), 0);
}

#[test]
fn no_delay_deletes_at_once_and_leftovers_go_on_load() {
    let t = log_with_old_segment(0);
    t.log.apply_retention().unwrap();
    assert_eq!(files_with_suffix(&t, ".deleted"), 0);
    assert_eq!(files_with_suffix(&t, ".log"), 1);

    let t = log_with_old_segment(60_000);
    t.log.apply_retention().unwrap();
    assert_eq!(files_with_suffix(&t, ".deleted"), 3);
    let (t, _) = t.reopen(false);
    assert_eq!(files_with_suffix(&t, ".deleted"), 0);
    assert_eq!(t.log.log_start_offset(), 2);
}
