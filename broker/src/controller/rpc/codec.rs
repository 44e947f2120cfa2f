//! The controller RPC's frames: each request names its message and version, each answer
//! repeats them, and every body is an explicit schema ([`raft_format`], [`command_format`]).
//!
//! ```text
//!   frame          = length: u32, format: u8 (2), header, body
//!   request header = api key: u16, version: u16, from node: i32, cluster id: string?, tagged
//!   answer header  = api key: u16, version: u16, outcome: u8, tagged
//!   outcome        = 0 answered, body | 1 not the controller, leader: i32 (-1: unknown)
//!                  | 2 refused, reason | 3 unsupported message or version, reason
//!   versions body  = [(api key: u16, min: u16, max: u16)], tagged
//! ```
//!
//! Format 1 was the release before's JSON: a node of that release is told apart and turned
//! away with a line saying so (that upgrade is offline).

use super::super::feed::MetadataUpdate;
use super::command_format as commands;
use super::raft_format as raft;
use super::versions::{ApiKey, Versions};
use super::{RpcBody, RpcReply, RpcRequest};
use crate::metadata::wire::{Reader, WireError, WireResult, Writer};

/// The frame format of this release.
pub const FORMAT: u8 = 2;
/// The release before's JSON frames.
pub const JSON_FORMAT: u8 = 1;

/// The message a request body is.
pub fn key_of(body: &RpcBody) -> ApiKey {
    match body {
        RpcBody::Versions(_) => ApiKey::Versions,
        RpcBody::AppendEntries(_) => ApiKey::AppendEntries,
        RpcBody::Vote(_) => ApiKey::Vote,
        RpcBody::InstallSnapshot(_) => ApiKey::InstallSnapshot,
        RpcBody::Command(_) => ApiKey::Command,
        RpcBody::FetchMetadata { .. } => ApiKey::FetchMetadata,
        RpcBody::DescribeQuorum => ApiKey::DescribeQuorum,
        RpcBody::Voters(_) => ApiKey::Voters,
    }
}

/// A request's frame body (after the length), at `version` of its message.
pub fn encode_request(request: &RpcRequest, version: u16) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(FORMAT);
    w.u16(key_of(&request.body).code());
    w.u16(version);
    w.i32(request.from_node);
    w.nullable_string(request.cluster_id.as_deref());
    w.tagged(&[]);
    match &request.body {
        RpcBody::Versions(versions) => write_versions(&mut w, versions),
        RpcBody::AppendEntries(rpc) => raft::append_entries(&mut w, rpc),
        RpcBody::Vote(rpc) => raft::vote_request(&mut w, rpc),
        RpcBody::InstallSnapshot(rpc) => raft::install_snapshot(&mut w, rpc),
        RpcBody::Command(command) => commands::encode_command(&mut w, command, version),
        RpcBody::FetchMetadata {
            from_index,
            max_wait_ms,
        } => commands::encode_fetch_metadata(&mut w, *from_index, *max_wait_ms, version),
        RpcBody::DescribeQuorum => w.tagged(&[]),
        RpcBody::Voters(request) => commands::encode_voter_request(&mut w, request, version),
    }
    w.into_bytes()
}

/// A request as read: who sent it, which message at which version, and its body (or why
/// the body cannot be read, answered to the sender).
#[derive(Debug)]
pub struct Incoming {
    pub key: u16,
    pub version: u16,
    pub request: Result<RpcRequest, Refusal>,
}

/// Why a well-framed request is not served.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A message or version this node does not speak (a newer peer's mistake).
    Unsupported(String),
    /// A body that does not decode.
    Malformed(String),
}

/// Reads a request frame's body. `Err` only when not even the header reads: the stream is
/// not one of ours, and the connection closes.
pub fn decode_request(frame: &[u8], ours: &Versions) -> Result<Incoming, String> {
    let mut r = Reader::new(frame);
    check_format(&mut r)?;
    let header = |r: &mut Reader<'_>| -> WireResult<(u16, u16, i32, Option<String>)> {
        let key = r.u16("api key")?;
        let version = r.u16("version")?;
        let from_node = r.i32("from node")?;
        let cluster_id = r.nullable_string("cluster id")?;
        r.tagged(|_, _| Ok(false))?;
        Ok((key, version, from_node, cluster_id))
    };
    let (key, version, from_node, cluster_id) =
        header(&mut r).map_err(|e| format!("unreadable request header: {e}"))?;
    let request = match ApiKey::from_code(key) {
        Some(api) if ours.supports(api, version) => decode_body(&mut r, api, version)
            .map(|body| RpcRequest {
                cluster_id,
                from_node,
                body,
            })
            .map_err(|e| Refusal::Malformed(format!("{} v{version}: {e}", api.name()))),
        Some(api) => Err(Refusal::Unsupported(format!(
            "{} v{version} is not spoken here (this node speaks {})",
            api.name(),
            ours.range(api)
                .map_or("none".into(), |(min, max)| format!("{min}-{max}"))
        ))),
        None => Err(Refusal::Unsupported(format!(
            "message {key} is not one this node knows (a newer release's)"
        ))),
    };
    Ok(Incoming {
        key,
        version,
        request,
    })
}

fn decode_body(r: &mut Reader<'_>, key: ApiKey, version: u16) -> WireResult<RpcBody> {
    let body = match key {
        ApiKey::Versions => RpcBody::Versions(read_versions(r)?),
        ApiKey::AppendEntries => RpcBody::AppendEntries(raft::read_append_entries(r)?),
        ApiKey::Vote => RpcBody::Vote(raft::read_vote_request(r)?),
        ApiKey::InstallSnapshot => RpcBody::InstallSnapshot(raft::read_install_snapshot(r)?),
        ApiKey::Command => RpcBody::Command(commands::decode_command(r, version)?),
        ApiKey::FetchMetadata => {
            let (from_index, max_wait_ms) = commands::decode_fetch_metadata(r, version)?;
            RpcBody::FetchMetadata {
                from_index,
                max_wait_ms,
            }
        }
        ApiKey::DescribeQuorum => {
            r.tagged(|_, _| Ok(false))?;
            RpcBody::DescribeQuorum
        }
        ApiKey::Voters => RpcBody::Voters(commands::decode_voter_request(r, version)?),
    };
    finished(r)?;
    Ok(body)
}

/// An answer's frame body, for a request of message `key` at `version`.
pub fn encode_reply(key: u16, version: u16, reply: &RpcReply) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(FORMAT);
    w.u16(key);
    w.u16(version);
    match reply {
        RpcReply::NotController { leader } => {
            w.u8(1);
            w.i32(leader.unwrap_or(-1));
        }
        RpcReply::Refused { reason } => {
            w.u8(2);
            w.string(reason);
        }
        RpcReply::Unsupported { reason } => {
            w.u8(3);
            w.string(reason);
        }
        _ => w.u8(0),
    }
    w.tagged(&[]);
    match reply {
        RpcReply::Versions(versions) => write_versions(&mut w, versions),
        RpcReply::AppendEntries(result) => raft::result(&mut w, result, raft::append_answer),
        RpcReply::Vote(result) => raft::result(&mut w, result, raft::vote_answer),
        RpcReply::InstallSnapshot(result) => raft::result(&mut w, result, raft::snapshot_answer),
        RpcReply::Command(result) => commands::encode_command_result(&mut w, result, version),
        RpcReply::Metadata {
            update,
            controller_id,
            voters,
        } => commands::encode_metadata_reply(&mut w, update, *controller_id, voters, version),
        RpcReply::Quorum(status) => commands::encode_quorum_status(&mut w, status, version),
        RpcReply::VoterChange(result) => commands::encode_voter_result(&mut w, result, version),
        RpcReply::NotController { .. }
        | RpcReply::Refused { .. }
        | RpcReply::Unsupported { .. } => {}
    }
    w.into_bytes()
}

/// Reads the answer to a request of `key` at `version`.
pub fn decode_reply(frame: &[u8], key: ApiKey, version: u16) -> Result<RpcReply, String> {
    let mut r = Reader::new(frame);
    check_format(&mut r)?;
    let read = |r: &mut Reader<'_>| -> WireResult<RpcReply> {
        let (their_key, their_version) = (r.u16("api key")?, r.u16("version")?);
        if (their_key, their_version) != (key.code(), version) {
            return Err(WireError::Invalid(format!(
                "an answer to message {their_key} v{their_version}, not to {} v{version}",
                key.name()
            )));
        }
        let outcome = r.u8("outcome")?;
        let early = match outcome {
            0 => None,
            1 => Some(RpcReply::NotController {
                leader: Some(r.i32("leader")?).filter(|id| *id >= 0),
            }),
            2 => Some(RpcReply::Refused {
                reason: r.string("reason")?,
            }),
            3 => Some(RpcReply::Unsupported {
                reason: r.string("reason")?,
            }),
            other => return Err(WireError::Invalid(format!("unknown outcome {other}"))),
        };
        r.tagged(|_, _| Ok(false))?;
        if let Some(reply) = early {
            finished(r)?;
            return Ok(reply);
        }
        let reply = match key {
            ApiKey::Versions => RpcReply::Versions(read_versions(r)?),
            ApiKey::AppendEntries => {
                RpcReply::AppendEntries(raft::read_result(r, raft::read_append_answer)?)
            }
            ApiKey::Vote => RpcReply::Vote(raft::read_result(r, raft::read_vote_answer)?),
            ApiKey::InstallSnapshot => {
                RpcReply::InstallSnapshot(raft::read_result(r, raft::read_snapshot_answer)?)
            }
            ApiKey::Command => RpcReply::Command(commands::decode_command_result(r, version)?),
            ApiKey::FetchMetadata => {
                let (update, controller_id, voters): (MetadataUpdate, _, _) =
                    commands::decode_metadata_reply(r, version)?;
                RpcReply::Metadata {
                    update,
                    controller_id,
                    voters,
                }
            }
            ApiKey::DescribeQuorum => RpcReply::Quorum(commands::decode_quorum_status(r, version)?),
            ApiKey::Voters => RpcReply::VoterChange(commands::decode_voter_result(r, version)?),
        };
        finished(r)?;
        Ok(reply)
    };
    read(&mut r).map_err(|e| e.to_string())
}

fn check_format(r: &mut Reader<'_>) -> Result<(), String> {
    match r.u8("format").map_err(|e| e.to_string())? {
        FORMAT => Ok(()),
        JSON_FORMAT => Err(
            "the peer speaks the JSON protocol of an Oxbow release before 0.2, which cannot join this cluster: upgrade from that release offline (docs/upgrading.md)"
                .into(),
        ),
        other => Err(format!(
            "frame format {other} is not one this release reads (it reads {FORMAT})"
        )),
    }
}

fn finished(r: &Reader<'_>) -> WireResult<()> {
    if r.is_empty() {
        Ok(())
    } else {
        Err(WireError::Invalid(format!(
            "{} bytes after the message",
            r.remaining()
        )))
    }
}

fn write_versions(w: &mut Writer, versions: &Versions) {
    let entries: Vec<(&u16, &(u16, u16))> = versions.0.iter().collect();
    w.array(&entries, |w, (key, (min, max))| {
        w.u16(**key);
        w.u16(*min);
        w.u16(*max);
    });
    w.tagged(&[]);
}

fn read_versions(r: &mut Reader<'_>) -> WireResult<Versions> {
    let entries = r.array("versions", 6, |r| {
        Ok((r.u16("api key")?, (r.u16("min")?, r.u16("max")?)))
    })?;
    r.tagged(|_, _| Ok(false))?;
    Ok(Versions(entries.into_iter().collect()))
}

#[cfg(test)]
mod tests {
    use super::super::super::decisions::{CommandOutcome, ControllerCommand};
    use super::super::raft_format::tests::{sample_append, sample_snapshot};
    use super::super::{CommandReply, VoterChangeError, VoterRequest};
    use super::*;
    use crate::metadata::record_format::tests::{fixture, fixtures_dir};
    use openraft::raft::{AppendEntriesResponse, VoteRequest, VoteResponse};

    fn request(body: RpcBody) -> RpcRequest {
        RpcRequest {
            cluster_id: Some("cluster-a".into()),
            from_node: 2,
            body,
        }
    }

    /// Not this release's table, which grows: a fixture's bytes never change.
    fn fixed_versions() -> Versions {
        Versions([(0, (0, 0)), (4, (0, 2)), (7, (1, 3))].into())
    }

    /// One request of each message this module frames itself (the command payloads have
    /// their own fixtures in `command_format`).
    fn requests() -> Vec<(&'static str, RpcRequest)> {
        vec![
            ("versions", request(RpcBody::Versions(fixed_versions()))),
            (
                "append-entries",
                request(RpcBody::AppendEntries(sample_append())),
            ),
            (
                "vote",
                request(RpcBody::Vote(VoteRequest {
                    vote: openraft::Vote::new(4, 2),
                    last_log_id: None,
                })),
            ),
            (
                "install-snapshot",
                request(RpcBody::InstallSnapshot(sample_snapshot())),
            ),
            ("describe-quorum", request(RpcBody::DescribeQuorum)),
            (
                "command",
                request(RpcBody::Command(ControllerCommand::BrokerHeartbeat {
                    node_id: 2,
                    incarnation: uuid::Uuid::from_u128(7),
                    applied_index: 41,
                })),
            ),
            (
                "fetch-metadata",
                request(RpcBody::FetchMetadata {
                    from_index: 40,
                    max_wait_ms: 500,
                }),
            ),
            (
                "voters",
                request(RpcBody::Voters(VoterRequest::Remove {
                    node_id: 3,
                    directory_id: None,
                })),
            ),
        ]
    }

    fn replies() -> Vec<(&'static str, ApiKey, RpcReply)> {
        vec![
            (
                "versions",
                ApiKey::Versions,
                RpcReply::Versions(fixed_versions()),
            ),
            (
                "append-entries",
                ApiKey::AppendEntries,
                RpcReply::AppendEntries(Ok(AppendEntriesResponse::Conflict)),
            ),
            (
                "vote",
                ApiKey::Vote,
                RpcReply::Vote(Ok(VoteResponse {
                    vote: openraft::Vote::new(4, 2),
                    vote_granted: false,
                    last_log_id: None,
                })),
            ),
            (
                "command",
                ApiKey::Command,
                RpcReply::Command(Ok(CommandReply {
                    outcome: CommandOutcome::Heartbeat { fenced: false },
                    index: 42,
                })),
            ),
            (
                "metadata",
                ApiKey::FetchMetadata,
                RpcReply::Metadata {
                    update: MetadataUpdate::Batches {
                        batches: Vec::new(),
                        applied_index: 42,
                    },
                    controller_id: Some(1),
                    voters: [(1, "a:9093".to_string())].into(),
                },
            ),
            (
                "voter-change",
                ApiKey::Voters,
                RpcReply::VoterChange(Err(VoterChangeError::NotFound("voter 3".into()))),
            ),
            (
                "not-controller",
                ApiKey::Command,
                RpcReply::NotController { leader: Some(3) },
            ),
            (
                "refused",
                ApiKey::Vote,
                RpcReply::Refused {
                    reason: "this is cluster a, not b".into(),
                },
            ),
            (
                "unsupported",
                ApiKey::Voters,
                RpcReply::Unsupported {
                    reason: "Voters v3 is not spoken here".into(),
                },
            ),
        ]
    }

    #[test]
    fn every_frame_round_trips_and_matches_its_committed_fixture() {
        let dir = fixtures_dir("controller-rpc-frames");
        let ours = Versions::this_release();
        for (name, sent) in requests() {
            let bytes = encode_request(&sent, 0);
            let committed = fixture(&dir.join(format!("frame-{name}-request-v0.bin")), &bytes);
            assert_eq!(committed, bytes, "{name} request is framed as before");
            let read = decode_request(&committed, &ours).unwrap();
            let got = read.request.unwrap();
            assert_eq!(
                (got.from_node, got.cluster_id),
                (2, Some("cluster-a".into()))
            );
            assert_eq!(
                encode_request(&request(got.body), 0),
                bytes,
                "{name} re-encodes identically"
            );
        }
        for (name, key, reply) in replies() {
            let bytes = encode_reply(key.code(), 0, &reply);
            let committed = fixture(&dir.join(format!("frame-{name}-answer-v0.bin")), &bytes);
            assert_eq!(committed, bytes, "{name} answer is framed as before");
            let read = decode_reply(&committed, key, 0).unwrap();
            assert_eq!(format!("{read:?}"), format!("{reply:?}"));
        }
        // Every frame ever committed, of any version, still reads: a node of the release
        // before sends them during a rolling upgrade.
        let mut read = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let bytes = std::fs::read(&path).unwrap();
            let at = |i: usize| u16::from_be_bytes([bytes[i], bytes[i + 1]]);
            let (key, version) = (ApiKey::from_code(at(1)).unwrap(), at(3));
            if name.contains("-request-") {
                let incoming = decode_request(&bytes, &ours).unwrap();
                assert!(incoming.request.is_ok(), "{name}: {incoming:?}");
            } else {
                decode_reply(&bytes, key, version).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            read += 1;
        }
        assert!(read >= requests().len() + replies().len());
    }

    #[test]
    fn a_message_or_version_not_spoken_here_is_answered_not_dropped() {
        let ours = Versions::this_release();
        let mut vote = encode_request(&requests()[2].1, 0);
        // The version field follows the format byte and the api key.
        vote[3..5].copy_from_slice(&7u16.to_be_bytes());
        let read = decode_request(&vote, &ours).unwrap();
        assert_eq!(read.version, 7);
        assert!(
            matches!(&read.request, Err(Refusal::Unsupported(r)) if r.contains("Vote v7")),
            "{read:?}"
        );
        let mut unknown = encode_request(&requests()[4].1, 0);
        unknown[1..3].copy_from_slice(&900u16.to_be_bytes());
        let read = decode_request(&unknown, &ours).unwrap();
        assert!(matches!(read.request, Err(Refusal::Unsupported(_))));
        // The answer names the same message and version, so the asker can read it.
        let answer = encode_reply(
            read.key,
            read.version,
            &RpcReply::Unsupported { reason: "x".into() },
        );
        assert_eq!(&answer[1..5], &unknown[1..5]);
        // A body that does not decode is refused with the message's name.
        let mut bad = encode_request(&requests()[2].1, 0);
        bad.truncate(bad.len() - 3);
        let read = decode_request(&bad, &ours).unwrap();
        assert!(matches!(&read.request, Err(Refusal::Malformed(r)) if r.starts_with("Vote v0")));
    }

    #[test]
    fn the_release_befores_json_frames_are_named() {
        let frame = b"\x01{\"cluster_id\":null,\"from_node\":1,\"body\":\"DescribeQuorum\"}";
        let error = decode_request(frame, &Versions::this_release()).unwrap_err();
        assert!(error.contains("JSON protocol"), "{error}");
        assert!(decode_reply(frame, ApiKey::DescribeQuorum, 0).is_err());
    }

    #[test]
    fn an_answer_to_another_message_is_not_misread() {
        let bytes = encode_reply(ApiKey::Vote.code(), 0, &replies()[2].2);
        let error = decode_reply(&bytes, ApiKey::AppendEntries, 0).unwrap_err();
        assert!(error.contains("not to AppendEntries"), "{error}");
    }

    proptest::proptest! {
        #[test]
        fn no_bytes_make_a_decoder_panic(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
            at in 0usize..400,
            flip in proptest::prelude::any::<u8>(),
        ) {
            let ours = Versions::this_release();
            let _ = decode_request(&bytes, &ours);
            for key in ApiKey::ALL {
                let _ = decode_reply(&bytes, key, 0);
            }
            // Valid frames with one byte changed: refused or read, never a panic.
            for (_, sent) in requests() {
                let mut frame = encode_request(&sent, 0);
                let i = at % frame.len();
                frame[i] ^= flip;
                let _ = decode_request(&frame, &ours);
            }
            for (_, key, reply) in replies() {
                let mut frame = encode_reply(key.code(), 0, &reply);
                let i = at % frame.len();
                frame[i] ^= flip;
                let _ = decode_reply(&frame, key, 0);
            }
        }
    }
}
