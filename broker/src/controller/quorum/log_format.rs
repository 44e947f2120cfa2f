//! How Raft entries and snapshots of the metadata quorum are laid out in bytes: an explicit,
//! versioned schema over [`crate::metadata::wire`], in place of openraft's serde types as
//! JSON (whose shape follows the crate's Rust types, not a format of ours).
//!
//! ```text
//!   metadata-log  = header, frame*
//!   header        = magic "OXMETA\0\0", format: u16
//!   frame         = length: u32, crc32c(entry): u32, entry
//!   entry         = term: u64, leader node: u64, index: u64, kind: u8,
//!                   (kind 1: a metadata batch | kind 2: membership), tagged fields
//!   membership    = configs: [[node id: u64]], nodes: [(node id: u64, addr, tagged {0: directory id})]
//! ```
//!
//! A reader refuses a format newer than its own by name, so an older release started on a
//! newer directory stops with a message instead of misreading it.

use std::collections::{BTreeMap, BTreeSet};

use openraft::{CommittedLeaderId, Entry, EntryPayload, Membership};

use super::{LogId, MetadataRaft, VoterNode};
use crate::metadata::record_format::{decode_batch, encode_batch};
use crate::metadata::wire::{Reader, WireError, WireResult, Writer, field};

/// The first bytes of the log file.
pub const LOG_MAGIC: &[u8; 8] = b"OXMETA\0\0";
/// The first bytes of a snapshot.
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"OXSNAP\0\0";
/// The first bytes of the vote file.
pub const VOTE_MAGIC: &[u8; 8] = b"OXVOTE\0\0";
/// The first bytes of the log-state file (purge point, committed id).
pub const LOG_STATE_MAGIC: &[u8; 8] = b"OXLSTATE";
/// The layout this release writes (and the newest it reads).
pub const FORMAT_VERSION: u16 = 1;
/// Bytes before the first frame.
pub const HEADER_LEN: usize = 10;

/// The file header for `magic`.
pub fn header(magic: &[u8; 8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.bytes_raw(magic);
    w.u16(FORMAT_VERSION);
    w.into_bytes()
}

/// Checks a header: `Ok(())` for this release's format, or why the file cannot be read.
pub fn check_header(bytes: &[u8], magic: &[u8; 8], what: &str) -> Result<(), String> {
    let mut r = Reader::new(bytes);
    let found = r
        .take(8, "magic")
        .map_err(|_| format!("{what} is shorter than its header"))?;
    if found != magic {
        return Err(format!("{what} does not start with Oxbow's header"));
    }
    let version = r
        .u16("format")
        .map_err(|_| format!("{what} is shorter than its header"))?;
    if version > FORMAT_VERSION {
        return Err(format!(
            "{what} has format {version}, written by a newer Oxbow release (this one reads up to format {FORMAT_VERSION}); run that release or newer"
        ));
    }
    Ok(())
}

pub fn log_id(w: &mut Writer, id: &LogId) {
    w.u64(id.leader_id.term);
    w.u64(id.leader_id.node_id);
    w.u64(id.index);
}

pub fn read_log_id(r: &mut Reader<'_>) -> WireResult<LogId> {
    let term = r.u64("term")?;
    let node = r.u64("leader node")?;
    let index = r.u64("index")?;
    Ok(LogId::new(CommittedLeaderId::new(term, node), index))
}

pub fn optional_log_id(w: &mut Writer, id: Option<&LogId>) {
    match id {
        Some(id) => {
            w.bool(true);
            log_id(w, id);
        }
        None => w.bool(false),
    }
}

pub fn read_optional_log_id(r: &mut Reader<'_>) -> WireResult<Option<LogId>> {
    r.bool("log id present")?
        .then(|| read_log_id(r))
        .transpose()
}

/// The vote file: header, term, node, committed, tagged fields.
pub fn encode_vote(vote: &openraft::Vote<u64>) -> Vec<u8> {
    let mut w = Writer::new();
    w.bytes_raw(&header(VOTE_MAGIC));
    write_vote(&mut w, vote);
    w.tagged(&[]);
    w.into_bytes()
}

/// A vote's fields: term, node, committed.
pub fn write_vote(w: &mut Writer, vote: &openraft::Vote<u64>) {
    w.u64(vote.leader_id.term);
    w.u64(vote.leader_id.node_id);
    w.bool(vote.committed);
}

pub fn read_vote(r: &mut Reader<'_>) -> WireResult<openraft::Vote<u64>> {
    let term = r.u64("term")?;
    let node = r.u64("node")?;
    let committed = r.bool("committed")?;
    Ok(if committed {
        openraft::Vote::new_committed(term, node)
    } else {
        openraft::Vote::new(term, node)
    })
}

pub fn decode_vote(bytes: &[u8]) -> Result<openraft::Vote<u64>, String> {
    check_header(bytes, VOTE_MAGIC, "the vote file")?;
    let mut r = Reader::new(bytes.get(HEADER_LEN..).unwrap_or_default());
    let read = |r: &mut Reader<'_>| -> WireResult<openraft::Vote<u64>> {
        let vote = read_vote(r)?;
        r.tagged(|_, _| Ok(false))?;
        Ok(vote)
    };
    read(&mut r).map_err(|e| e.to_string())
}

/// The log-state file: header, the purge point and the committed id (each optional).
pub fn encode_log_state(last_purged: Option<&LogId>, committed: Option<&LogId>) -> Vec<u8> {
    let mut w = Writer::new();
    w.bytes_raw(&header(LOG_STATE_MAGIC));
    optional_log_id(&mut w, last_purged);
    optional_log_id(&mut w, committed);
    w.tagged(&[]);
    w.into_bytes()
}

/// (purge point, committed id).
pub fn decode_log_state(bytes: &[u8]) -> Result<(Option<LogId>, Option<LogId>), String> {
    check_header(bytes, LOG_STATE_MAGIC, "the log-state file")?;
    let mut r = Reader::new(bytes.get(HEADER_LEN..).unwrap_or_default());
    let read = |r: &mut Reader<'_>| -> WireResult<(Option<LogId>, Option<LogId>)> {
        let purged = read_optional_log_id(r)?;
        let committed = read_optional_log_id(r)?;
        r.tagged(|_, _| Ok(false))?;
        Ok((purged, committed))
    };
    read(&mut r).map_err(|e| e.to_string())
}

pub fn membership(w: &mut Writer, m: &Membership<u64, VoterNode>) {
    let configs: Vec<Vec<u64>> = m
        .get_joint_config()
        .iter()
        .map(|c| c.iter().copied().collect())
        .collect();
    w.array(&configs, |w, config| w.array(config, |w, id| w.u64(*id)));
    let nodes: Vec<(&u64, &VoterNode)> = m.nodes().collect();
    w.array(&nodes, |w, (id, node)| {
        w.u64(**id);
        w.string(&node.addr);
        let tags = match node.directory_id {
            Some(dir) => vec![(0, field(|w| w.uuid(&dir)))],
            None => Vec::new(),
        };
        w.tagged(&tags);
    });
}

pub fn read_membership(r: &mut Reader<'_>) -> WireResult<Membership<u64, VoterNode>> {
    let configs: Vec<BTreeSet<u64>> = r.array("configs", 1, |r| {
        Ok(r.array("voters", 8, |r| r.u64("voter"))?
            .into_iter()
            .collect())
    })?;
    let nodes: BTreeMap<u64, VoterNode> = r
        .array("nodes", 10, |r| {
            let id = r.u64("node")?;
            let mut node = VoterNode::new(r.string("address")?);
            r.tagged(|tag, f| match tag {
                0 => {
                    node.directory_id = Some(f.uuid("directory id")?);
                    Ok(true)
                }
                _ => Ok(false),
            })?;
            Ok((id, node))
        })?
        .into_iter()
        .collect();
    let voters: BTreeSet<u64> = configs.iter().flatten().copied().collect();
    if let Some(missing) = voters.iter().find(|v| !nodes.contains_key(v)) {
        return Err(WireError::Invalid(format!(
            "voter {missing} has no address in the membership"
        )));
    }
    Ok(Membership::new(configs, nodes))
}

/// One entry's bytes (without its frame).
pub fn encode_entry(entry: &Entry<MetadataRaft>) -> Vec<u8> {
    let mut w = Writer::new();
    log_id(&mut w, &entry.log_id);
    match &entry.payload {
        EntryPayload::Blank => w.u8(0),
        EntryPayload::Normal(batch) => {
            w.u8(1);
            encode_batch(&mut w, batch);
        }
        EntryPayload::Membership(m) => {
            w.u8(2);
            membership(&mut w, m);
        }
    }
    w.tagged(&[]);
    w.into_bytes()
}

pub fn decode_entry(bytes: &[u8]) -> WireResult<Entry<MetadataRaft>> {
    let mut r = Reader::new(bytes);
    let log_id = read_log_id(&mut r)?;
    let payload = match r.u8("entry kind")? {
        0 => EntryPayload::Blank,
        1 => EntryPayload::Normal(decode_batch(&mut r)?),
        2 => EntryPayload::Membership(read_membership(&mut r)?),
        other => {
            return Err(WireError::Invalid(format!(
                "entry kind {other} is not one this release reads"
            )));
        }
    };
    r.tagged(|_, _| Ok(false))?;
    Ok(Entry { log_id, payload })
}

/// An entry in its frame: length, CRC, bytes.
pub fn frame(entry: &Entry<MetadataRaft>) -> Vec<u8> {
    let body = encode_entry(entry);
    let mut w = Writer::new();
    w.u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
    w.u32(crc32c::crc32c(&body));
    w.bytes_raw(&body);
    w.into_bytes()
}

/// What reading the frames of a log file found.
#[derive(Debug)]
pub struct Frames {
    pub entries: Vec<Entry<MetadataRaft>>,
    /// Bytes of intact frames (from the start of the frames).
    pub good_length: usize,
    /// The frames ended in a torn one (a crash during an append): dropped.
    pub torn: bool,
}

/// Why frames cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A damaged frame with intact data after it.
    #[error("corrupt entry at byte {0} with data after it")]
    Corrupt(usize),
    /// An intact frame this release cannot decode (a newer release's).
    #[error("entry at byte {offset}: {reason}")]
    Unreadable { offset: usize, reason: String },
}

/// Reads every frame of `bytes` (the file after its header).
pub fn read_frames(bytes: &[u8]) -> Result<Frames, FrameError> {
    let mut entries = Vec::new();
    let mut offset = 0usize;
    while offset < bytes.len() {
        let rest = &bytes[offset..];
        let torn = Frames {
            entries: Vec::new(),
            good_length: offset,
            torn: true,
        };
        if rest.len() < 8 {
            return Ok(Frames { entries, ..torn });
        }
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]);
        let Some(body) = rest.get(8..8 + len) else {
            // Runs past the end: the append that wrote it never finished.
            return Ok(Frames { entries, ..torn });
        };
        if crc32c::crc32c(body) != crc {
            if 8 + len == rest.len() {
                return Ok(Frames { entries, ..torn });
            }
            return Err(FrameError::Corrupt(offset));
        }
        let entry = decode_entry(body).map_err(|e| FrameError::Unreadable {
            offset,
            reason: e.to_string(),
        })?;
        entries.push(entry);
        offset += 8 + len;
    }
    Ok(Frames {
        entries,
        good_length: offset,
        torn: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::records::MetadataBatch;

    fn entries() -> Vec<Entry<MetadataRaft>> {
        let id = |i| LogId::new(CommittedLeaderId::new(3, 1), i);
        let mut dir_node = VoterNode::new("c2:9093");
        dir_node.directory_id = Some(uuid::Uuid::from_u128(7));
        vec![
            Entry {
                log_id: id(1),
                payload: EntryPayload::Blank,
            },
            Entry {
                log_id: id(2),
                payload: EntryPayload::Normal(MetadataBatch {
                    records: crate::metadata::record_format::tests::one_of_each(),
                }),
            },
            Entry {
                log_id: id(3),
                payload: EntryPayload::Membership(Membership::new(
                    vec![BTreeSet::from([1, 2])],
                    BTreeMap::from([
                        (1, VoterNode::new("c1:9093")),
                        (2, dir_node),
                        (4, VoterNode::new("learner:9093")),
                    ]),
                )),
            },
        ]
    }

    #[test]
    fn entries_round_trip_through_frames() {
        let bytes: Vec<u8> = entries().iter().flat_map(frame).collect();
        let read = read_frames(&bytes).unwrap();
        assert!(!read.torn);
        assert_eq!(read.good_length, bytes.len());
        assert_eq!(read.entries, entries());
    }

    #[test]
    fn torn_tails_are_dropped_and_damage_in_the_middle_is_refused() {
        let frames: Vec<Vec<u8>> = entries().iter().map(frame).collect();
        let whole = frames.concat();
        let cut = &whole[..whole.len() - 3];
        let read = read_frames(cut).unwrap();
        assert!(read.torn);
        assert_eq!(read.entries.len(), 2);
        assert_eq!(read.good_length, frames[0].len() + frames[1].len());

        let mut damaged = whole.clone();
        damaged[frames[0].len() + 12] ^= 0xff;
        assert!(matches!(
            read_frames(&damaged),
            Err(FrameError::Corrupt(offset)) if offset == frames[0].len()
        ));
        let mut last = whole.clone();
        let end = last.len() - 1;
        last[end] ^= 0xff;
        assert!(read_frames(&last).unwrap().torn);
    }

    #[test]
    fn committed_entry_fixtures_still_decode() {
        use crate::metadata::record_format::tests::{fixture, fixtures_dir};
        let dir = fixtures_dir("metadata-log");
        for entry in entries() {
            let kind = match entry.payload {
                EntryPayload::Blank => "blank",
                EntryPayload::Normal(_) => "records",
                EntryPayload::Membership(_) => "membership",
            };
            let bytes = frame(&entry);
            let path = dir.join(format!("entry-{kind}-format{FORMAT_VERSION}.bin"));
            let committed = fixture(&path, &bytes);
            assert_eq!(committed, bytes, "{kind} entries are framed as before");
        }
        for file in std::fs::read_dir(&dir).unwrap() {
            let path = file.unwrap().path();
            let read = read_frames(&std::fs::read(&path).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(read.entries.len(), 1, "{}", path.display());
            assert!(!read.torn);
        }
    }

    proptest::proptest! {
        /// Bytes from a disk or a peer never panic the reader: every mutation of real
        /// frames and snapshots is read or refused.
        #[test]
        fn damaged_frames_are_refused_not_panicked_on(
            flips in proptest::collection::vec((0usize..4096, proptest::num::u8::ANY), 1..8),
            cut in 0usize..4096,
        ) {
            let mut bytes: Vec<u8> = entries().iter().flat_map(frame).collect();
            for (at, value) in flips {
                let len = bytes.len();
                bytes[at % len] ^= value;
            }
            bytes.truncate(cut.max(1).min(bytes.len()));
            let _ = read_frames(&bytes);
            for start in [0, 8, 16] {
                if let Some(body) = bytes.get(start..) {
                    let _ = decode_entry(body);
                    let _ = crate::metadata::record_format::decode_batch(&mut Reader::new(body));
                }
            }
        }
    }

    #[test]
    fn votes_and_log_states_round_trip() {
        for vote in [
            openraft::Vote::new(4, 2),
            openraft::Vote::new_committed(5, 3),
        ] {
            assert_eq!(decode_vote(&encode_vote(&vote)), Ok(vote));
        }
        let id = LogId::new(CommittedLeaderId::new(3, 1), 40);
        for (purged, committed) in [(None, None), (Some(id), None), (Some(id), Some(id))] {
            assert_eq!(
                decode_log_state(&encode_log_state(purged.as_ref(), committed.as_ref())),
                Ok((purged, committed))
            );
        }
        assert!(decode_vote(&encode_log_state(None, None)).is_err());
    }

    #[test]
    fn a_newer_format_is_refused_by_name() {
        assert!(check_header(&header(LOG_MAGIC), LOG_MAGIC, "the log").is_ok());
        let mut newer = header(LOG_MAGIC);
        newer[9] = 9;
        let error = check_header(&newer, LOG_MAGIC, "the log").unwrap_err();
        assert!(
            error.contains("format 9, written by a newer Oxbow release"),
            "{error}"
        );
        assert!(check_header(b"{\"json\"", LOG_MAGIC, "the log").is_err());
    }
}
