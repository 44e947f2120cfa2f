//! Which messages and versions a node speaks on the controller listener, and the choice of
//! a version both ends of a connection speak (Kafka's ApiVersions is the model: the first
//! request on every connection lists the caller's ranges, the answer lists the callee's,
//! and each request then goes at the highest version both list).

use std::collections::BTreeMap;

/// The messages of the controller RPC. The numbers are on the wire: never reuse one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ApiKey {
    /// The handshake: each side's supported ranges. Always version 0.
    Versions,
    AppendEntries,
    Vote,
    InstallSnapshot,
    /// A metadata change forwarded to the active controller.
    Command,
    /// An observer's long poll for metadata.
    FetchMetadata,
    DescribeQuorum,
    /// A change of the quorum's voters (or a controller asking to follow).
    Voters,
}

impl ApiKey {
    pub const ALL: [ApiKey; 8] = [
        ApiKey::Versions,
        ApiKey::AppendEntries,
        ApiKey::Vote,
        ApiKey::InstallSnapshot,
        ApiKey::Command,
        ApiKey::FetchMetadata,
        ApiKey::DescribeQuorum,
        ApiKey::Voters,
    ];

    pub fn code(self) -> u16 {
        match self {
            ApiKey::Versions => 0,
            ApiKey::AppendEntries => 1,
            ApiKey::Vote => 2,
            ApiKey::InstallSnapshot => 3,
            ApiKey::Command => 4,
            ApiKey::FetchMetadata => 5,
            ApiKey::DescribeQuorum => 6,
            ApiKey::Voters => 7,
        }
    }

    pub fn from_code(code: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|key| key.code() == code)
    }

    pub fn name(self) -> &'static str {
        match self {
            ApiKey::Versions => "Versions",
            ApiKey::AppendEntries => "AppendEntries",
            ApiKey::Vote => "Vote",
            ApiKey::InstallSnapshot => "InstallSnapshot",
            ApiKey::Command => "Command",
            ApiKey::FetchMetadata => "FetchMetadata",
            ApiKey::DescribeQuorum => "DescribeQuorum",
            ApiKey::Voters => "Voters",
        }
    }
}

/// A node's supported versions per message, by wire code (a peer may list codes this
/// release does not know: they are kept and ignored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions(pub BTreeMap<u16, (u16, u16)>);

impl Versions {
    /// What this release speaks. A new version of a message is added at the top of its
    /// range; the bottom rises only when the release that needed it can no longer be a peer
    /// (rolling upgrades go one release at a time).
    pub fn this_release() -> Self {
        let payloads = super::command_format::VERSIONS;
        Self(
            ApiKey::ALL
                .into_iter()
                .map(|key| {
                    let range = match key {
                        ApiKey::Command
                        | ApiKey::FetchMetadata
                        | ApiKey::DescribeQuorum
                        | ApiKey::Voters => (*payloads.start(), *payloads.end()),
                        // The handshake and openraft's messages (`raft_format`).
                        ApiKey::Versions
                        | ApiKey::AppendEntries
                        | ApiKey::Vote
                        | ApiKey::InstallSnapshot => (0, 0),
                    };
                    (key.code(), range)
                })
                .collect(),
        )
    }

    pub fn range(&self, key: ApiKey) -> Option<(u16, u16)> {
        self.0.get(&key.code()).copied()
    }

    pub fn supports(&self, key: ApiKey, version: u16) -> bool {
        self.range(key)
            .is_some_and(|(min, max)| (min..=max).contains(&version))
    }

    /// The version to send `key` to a peer that speaks `theirs`: the highest both list.
    pub fn choose(&self, key: ApiKey, theirs: &Versions) -> Result<u16, String> {
        let ours = self.range(key);
        let peer = theirs.range(key);
        match (ours, peer) {
            (Some((our_min, our_max)), Some((their_min, their_max)))
                if our_min.max(their_min) <= our_max.min(their_max) =>
            {
                Ok(our_max.min(their_max))
            }
            (_, None) => Err(format!(
                "the peer does not speak {} (an older release)",
                key.name()
            )),
            (ours, Some((their_min, their_max))) => Err(format!(
                "no common version of {}: this node speaks {}, the peer {their_min}-{their_max}",
                key.name(),
                ours.map_or("none".to_string(), |(min, max)| format!("{min}-{max}")),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(pairs: &[(ApiKey, u16, u16)]) -> Versions {
        Versions(
            pairs
                .iter()
                .map(|(key, min, max)| (key.code(), (*min, *max)))
                .collect(),
        )
    }

    #[test]
    fn the_highest_version_both_speak_is_chosen() {
        let newer = versions(&[(ApiKey::Command, 0, 2), (ApiKey::Vote, 1, 1)]);
        let older = versions(&[(ApiKey::Command, 0, 1), (ApiKey::Vote, 0, 0)]);
        assert_eq!(newer.choose(ApiKey::Command, &older), Ok(1));
        assert_eq!(older.choose(ApiKey::Command, &newer), Ok(1));
        let refused = newer.choose(ApiKey::Vote, &older).unwrap_err();
        assert!(
            refused.contains("this node speaks 1-1, the peer 0-0"),
            "{refused}"
        );
        let missing = newer.choose(ApiKey::Voters, &older).unwrap_err();
        assert!(missing.contains("does not speak Voters"), "{missing}");
    }

    #[test]
    fn codes_are_unique_and_this_release_speaks_every_message() {
        let codes: std::collections::BTreeSet<u16> = ApiKey::ALL.iter().map(|k| k.code()).collect();
        assert_eq!(codes.len(), ApiKey::ALL.len());
        let ours = Versions::this_release();
        for key in ApiKey::ALL {
            assert_eq!(ApiKey::from_code(key.code()), Some(key));
            assert_eq!(ours.choose(key, &ours), Ok(0));
        }
        assert_eq!(ApiKey::from_code(999), None);
    }
}
