//! The metadata quorum's Raft messages in bytes: openraft's requests and answers in an
//! explicit schema of ours (the log file's encodings of votes, log ids, entries and
//! memberships), so that a change of openraft's Rust types never changes what travels
//! between voters.
//!
//! ```text
//!   vote             = term: u64, node: u64, committed: bool
//!   append entries   = vote, prev log id?, [entry bytes], leader commit?, tagged fields
//!   append answer    = kind: u8 (0 success | 1 partial, log id? | 2 conflict | 3 higher vote, vote), tagged
//!   vote request     = vote, last log id?, tagged fields
//!   vote answer      = vote, granted: bool, last log id?, tagged fields
//!   install snapshot = vote, last log id?, membership log id?, membership, snapshot id,
//!                      offset: u64, data: bytes, done: bool, tagged fields
//!   snapshot answer  = vote, tagged fields
//!   result<T>        = 0, T | 1, raft error
//!   raft error       = kind: u8 (0 panicked | 1 stopped | 2 storage, message | 3 snapshot
//!                      mismatch, expected id, offset, got id, offset), tagged fields
//! ```
//!
//! Every message here is at version 0; a later version adds tagged fields or, for a change
//! an older voter cannot skip, a new version that is sent only to voters that list it.

use openraft::error::{Fatal, InstallSnapshotError, RaftError, SnapshotMismatch};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{SnapshotMeta, SnapshotSegmentId, StorageError, StorageIOError, StoredMembership};

use super::super::quorum::MetadataRaft;
use super::super::quorum::log_format::{
    decode_entry, encode_entry, membership, optional_log_id, read_membership, read_optional_log_id,
    read_vote, write_vote,
};
use crate::metadata::wire::{Reader, WireError, WireResult, Writer};

/// Smallest encoded entry: a log id (24 bytes), its kind and an empty tagged section.
const MIN_ENTRY_BYTES: usize = 26;

fn end(w: &mut Writer) {
    w.tagged(&[]);
}

fn read_end(r: &mut Reader<'_>) -> WireResult<()> {
    r.tagged(|_, _| Ok(false))
}

pub fn append_entries(w: &mut Writer, rpc: &AppendEntriesRequest<MetadataRaft>) {
    write_vote(w, &rpc.vote);
    optional_log_id(w, rpc.prev_log_id.as_ref());
    w.array(&rpc.entries, |w, entry| w.bytes(&encode_entry(entry)));
    optional_log_id(w, rpc.leader_commit.as_ref());
    end(w);
}

pub fn read_append_entries(r: &mut Reader<'_>) -> WireResult<AppendEntriesRequest<MetadataRaft>> {
    let vote = read_vote(r)?;
    let prev_log_id = read_optional_log_id(r)?;
    let entries = r.array("entries", MIN_ENTRY_BYTES, |r| {
        decode_entry(&r.bytes("entry")?)
    })?;
    let leader_commit = read_optional_log_id(r)?;
    read_end(r)?;
    Ok(AppendEntriesRequest {
        vote,
        prev_log_id,
        entries,
        leader_commit,
    })
}

pub fn append_answer(w: &mut Writer, answer: &AppendEntriesResponse<u64>) {
    match answer {
        AppendEntriesResponse::Success => w.u8(0),
        AppendEntriesResponse::PartialSuccess(matching) => {
            w.u8(1);
            optional_log_id(w, matching.as_ref());
        }
        AppendEntriesResponse::Conflict => w.u8(2),
        AppendEntriesResponse::HigherVote(vote) => {
            w.u8(3);
            write_vote(w, vote);
        }
    }
    end(w);
}

pub fn read_append_answer(r: &mut Reader<'_>) -> WireResult<AppendEntriesResponse<u64>> {
    let answer = match r.u8("append answer")? {
        0 => AppendEntriesResponse::Success,
        1 => AppendEntriesResponse::PartialSuccess(read_optional_log_id(r)?),
        2 => AppendEntriesResponse::Conflict,
        3 => AppendEntriesResponse::HigherVote(read_vote(r)?),
        other => return Err(unknown("append answer", other)),
    };
    read_end(r)?;
    Ok(answer)
}

pub fn vote_request(w: &mut Writer, rpc: &VoteRequest<u64>) {
    write_vote(w, &rpc.vote);
    optional_log_id(w, rpc.last_log_id.as_ref());
    end(w);
}

pub fn read_vote_request(r: &mut Reader<'_>) -> WireResult<VoteRequest<u64>> {
    let vote = read_vote(r)?;
    let last_log_id = read_optional_log_id(r)?;
    read_end(r)?;
    Ok(VoteRequest { vote, last_log_id })
}

pub fn vote_answer(w: &mut Writer, answer: &VoteResponse<u64>) {
    write_vote(w, &answer.vote);
    w.bool(answer.vote_granted);
    optional_log_id(w, answer.last_log_id.as_ref());
    end(w);
}

pub fn read_vote_answer(r: &mut Reader<'_>) -> WireResult<VoteResponse<u64>> {
    let vote = read_vote(r)?;
    let vote_granted = r.bool("vote granted")?;
    let last_log_id = read_optional_log_id(r)?;
    read_end(r)?;
    Ok(VoteResponse {
        vote,
        vote_granted,
        last_log_id,
    })
}

pub fn install_snapshot(w: &mut Writer, rpc: &InstallSnapshotRequest<MetadataRaft>) {
    write_vote(w, &rpc.vote);
    optional_log_id(w, rpc.meta.last_log_id.as_ref());
    optional_log_id(w, rpc.meta.last_membership.log_id().as_ref());
    membership(w, rpc.meta.last_membership.membership());
    w.string(&rpc.meta.snapshot_id);
    w.u64(rpc.offset);
    w.bytes(&rpc.data);
    w.bool(rpc.done);
    end(w);
}

pub fn read_install_snapshot(
    r: &mut Reader<'_>,
) -> WireResult<InstallSnapshotRequest<MetadataRaft>> {
    let vote = read_vote(r)?;
    let last_log_id = read_optional_log_id(r)?;
    let membership_log_id = read_optional_log_id(r)?;
    let membership = read_membership(r)?;
    let snapshot_id = r.string("snapshot id")?;
    let offset = r.u64("offset")?;
    let data = r.bytes("snapshot data")?;
    let done = r.bool("done")?;
    read_end(r)?;
    Ok(InstallSnapshotRequest {
        vote,
        meta: SnapshotMeta {
            last_log_id,
            last_membership: StoredMembership::new(membership_log_id, membership),
            snapshot_id,
        },
        offset,
        data,
        done,
    })
}

pub fn snapshot_answer(w: &mut Writer, answer: &InstallSnapshotResponse<u64>) {
    write_vote(w, &answer.vote);
    end(w);
}

pub fn read_snapshot_answer(r: &mut Reader<'_>) -> WireResult<InstallSnapshotResponse<u64>> {
    let vote = read_vote(r)?;
    read_end(r)?;
    Ok(InstallSnapshotResponse { vote })
}

/// A voter's answer or its Raft's error.
pub fn result<T, E: ApiError>(
    w: &mut Writer,
    result: &Result<T, RaftError<u64, E>>,
    answer: impl FnOnce(&mut Writer, &T),
) {
    match result {
        Ok(value) => {
            w.u8(0);
            answer(w, value);
        }
        Err(error) => {
            w.u8(1);
            raft_error(w, error);
        }
    }
}

pub fn read_result<T, E: ApiError>(
    r: &mut Reader<'_>,
    answer: impl FnOnce(&mut Reader<'_>) -> WireResult<T>,
) -> WireResult<Result<T, RaftError<u64, E>>> {
    match r.u8("result")? {
        0 => answer(r).map(Ok),
        1 => read_raft_error(r).map(Err),
        other => Err(unknown("result", other)),
    }
}

/// The API errors a Raft call may answer: none for votes and appends, a snapshot mismatch
/// for a snapshot chunk.
pub trait ApiError: Sized {
    fn mismatch(&self) -> Option<&SnapshotMismatch>;
    fn from_mismatch(mismatch: SnapshotMismatch) -> Option<Self>;
}

impl ApiError for openraft::error::Infallible {
    fn mismatch(&self) -> Option<&SnapshotMismatch> {
        None
    }
    fn from_mismatch(_: SnapshotMismatch) -> Option<Self> {
        None
    }
}

impl ApiError for InstallSnapshotError {
    fn mismatch(&self) -> Option<&SnapshotMismatch> {
        match self {
            InstallSnapshotError::SnapshotMismatch(mismatch) => Some(mismatch),
        }
    }
    fn from_mismatch(mismatch: SnapshotMismatch) -> Option<Self> {
        Some(InstallSnapshotError::SnapshotMismatch(mismatch))
    }
}

fn raft_error<E: ApiError>(w: &mut Writer, error: &RaftError<u64, E>) {
    match error {
        RaftError::Fatal(Fatal::Panicked) => w.u8(0),
        RaftError::Fatal(Fatal::Stopped) => w.u8(1),
        // The remote's storage failure travels as its message: the caller only reports it.
        RaftError::Fatal(Fatal::StorageError(error)) => {
            w.u8(2);
            w.string(&error.to_string());
        }
        RaftError::APIError(api) => match api.mismatch() {
            Some(mismatch) => {
                w.u8(3);
                segment(w, &mismatch.expect);
                segment(w, &mismatch.got);
            }
            None => w.u8(1),
        },
    }
    end(w);
}

fn read_raft_error<E: ApiError>(r: &mut Reader<'_>) -> WireResult<RaftError<u64, E>> {
    let error = match r.u8("raft error")? {
        0 => RaftError::Fatal(Fatal::Panicked),
        1 => RaftError::Fatal(Fatal::Stopped),
        2 => {
            let message = r.string("storage error")?;
            let source = StorageIOError::read(&std::io::Error::other(message));
            RaftError::Fatal(Fatal::StorageError(StorageError::IO { source }))
        }
        3 => {
            let mismatch = SnapshotMismatch {
                expect: read_segment(r)?,
                got: read_segment(r)?,
            };
            let api = E::from_mismatch(mismatch).ok_or_else(|| {
                WireError::Invalid("a snapshot mismatch answering another call".into())
            })?;
            RaftError::APIError(api)
        }
        other => return Err(unknown("raft error", other)),
    };
    read_end(r)?;
    Ok(error)
}

fn segment(w: &mut Writer, segment: &SnapshotSegmentId) {
    w.string(&segment.id);
    w.u64(segment.offset);
}

fn read_segment(r: &mut Reader<'_>) -> WireResult<SnapshotSegmentId> {
    Ok(SnapshotSegmentId {
        id: r.string("snapshot id")?,
        offset: r.u64("offset")?,
    })
}

fn unknown(what: &str, code: u8) -> WireError {
    WireError::Invalid(format!("unknown {what} kind {code}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::controller::quorum::{LogId, VoterNode};
    use crate::metadata::records::{MetadataBatch, MetadataRecord};
    use openraft::{CommittedLeaderId, Entry, EntryPayload, Membership};
    use std::collections::{BTreeMap, BTreeSet};

    fn id(term: u64, index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    pub(crate) fn sample_membership() -> Membership<u64, VoterNode> {
        let nodes: BTreeMap<u64, VoterNode> =
            [(1, VoterNode::new("a:9093")), (2, VoterNode::new("b:9093"))].into();
        Membership::new(vec![BTreeSet::from([1, 2])], nodes)
    }

    pub(crate) fn sample_append() -> AppendEntriesRequest<MetadataRaft> {
        let batch = MetadataBatch {
            records: vec![MetadataRecord::ClusterIdentified {
                cluster_id: "c1".into(),
            }],
        };
        AppendEntriesRequest {
            vote: openraft::Vote::new_committed(3, 1),
            prev_log_id: Some(id(2, 9)),
            entries: vec![
                Entry {
                    log_id: id(3, 10),
                    payload: EntryPayload::Blank,
                },
                Entry {
                    log_id: id(3, 11),
                    payload: EntryPayload::Normal(batch),
                },
                Entry {
                    log_id: id(3, 12),
                    payload: EntryPayload::Membership(sample_membership()),
                },
            ],
            leader_commit: Some(id(3, 10)),
        }
    }

    pub(crate) fn sample_snapshot() -> InstallSnapshotRequest<MetadataRaft> {
        InstallSnapshotRequest {
            vote: openraft::Vote::new_committed(3, 1),
            meta: SnapshotMeta {
                last_log_id: Some(id(3, 12)),
                last_membership: StoredMembership::new(Some(id(3, 12)), sample_membership()),
                snapshot_id: "3-12-1".into(),
            },
            offset: 4096,
            data: vec![1, 2, 3, 0, 255],
            done: true,
        }
    }

    /// openraft's messages have no `PartialEq`: their debug forms are compared.
    fn round_trip<T: std::fmt::Debug>(
        value: &T,
        write: impl Fn(&mut Writer, &T),
        read: impl Fn(&mut Reader<'_>) -> WireResult<T>,
    ) {
        let mut w = Writer::new();
        write(&mut w, value);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(format!("{:?}", read(&mut r).unwrap()), format!("{value:?}"));
        assert!(r.is_empty());
        // Every shorter prefix is refused, never misread.
        for cut in 0..bytes.len() {
            assert!(
                read(&mut Reader::new(&bytes[..cut])).is_err(),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn every_raft_message_round_trips() {
        round_trip(&sample_append(), append_entries, read_append_entries);
        round_trip(&sample_snapshot(), install_snapshot, read_install_snapshot);
        round_trip(
            &VoteRequest {
                vote: openraft::Vote::new(4, 2),
                last_log_id: None,
            },
            vote_request,
            read_vote_request,
        );
        round_trip(
            &VoteResponse {
                vote: openraft::Vote::new(4, 2),
                vote_granted: true,
                last_log_id: Some(id(3, 12)),
            },
            vote_answer,
            read_vote_answer,
        );
        round_trip(
            &InstallSnapshotResponse {
                vote: openraft::Vote::new_committed(3, 1),
            },
            snapshot_answer,
            read_snapshot_answer,
        );
        for answer in [
            AppendEntriesResponse::Success,
            AppendEntriesResponse::PartialSuccess(Some(id(3, 11))),
            AppendEntriesResponse::PartialSuccess(None),
            AppendEntriesResponse::Conflict,
            AppendEntriesResponse::HigherVote(openraft::Vote::new(5, 3)),
        ] {
            round_trip(&answer, append_answer, read_append_answer);
        }
    }

    #[test]
    fn raft_errors_cross_the_wire() {
        let write = |w: &mut Writer, r: &Result<(), RaftError<u64, InstallSnapshotError>>| {
            result(w, r, |_, _| {})
        };
        let read = |r: &mut Reader<'_>| read_result::<(), InstallSnapshotError>(r, |_| Ok(()));
        for error in [
            RaftError::Fatal(Fatal::Panicked),
            RaftError::Fatal(Fatal::Stopped),
            RaftError::APIError(InstallSnapshotError::SnapshotMismatch(SnapshotMismatch {
                expect: SnapshotSegmentId {
                    id: "a".into(),
                    offset: 0,
                },
                got: SnapshotSegmentId {
                    id: "a".into(),
                    offset: 10,
                },
            })),
        ] {
            round_trip(&Err(error), write, read);
        }
        let mut w = Writer::new();
        let source = StorageIOError::read(&std::io::Error::other("disk full"));
        write(
            &mut w,
            &Err(RaftError::Fatal(Fatal::StorageError(StorageError::IO {
                source,
            }))),
        );
        let bytes = w.into_bytes();
        let read_back = read(&mut Reader::new(&bytes)).unwrap().unwrap_err();
        assert!(read_back.to_string().contains("disk full"), "{read_back}");
    }
}
