//! `meta.properties` in a log directory, in Kafka's format: the node id, the cluster id and
//! the directory's own id (KIP-858).
//!
//! ```text
//! <log.dir>/meta.properties    version=1, node.id=N, cluster.id=..., directory.id=<base64url>
//! ```
//!
//! KIP-853 names a controller by its node id and the id of its metadata directory, so a
//! controller that lost its disk and came back empty is a different voter. Kafka's own
//! `kafka-metadata-quorum add-controller` reads the directory id from this file, so it is
//! written where Kafka writes it, in Kafka's text format.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use uuid::Uuid;

use super::checkpoint::{CheckpointError, write_atomically};

pub const META_PROPERTIES: &str = "meta.properties";

/// Why a directory's identity could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum MetaPropertiesError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} has directory.id `{value}`, which is not a Kafka Uuid")]
    BadDirectoryId { path: String, value: String },
    /// A layout this release does not know: left as it is, not rewritten over.
    #[error(
        "{path} has version={version}, and this release reads only version 1 (Kafka's KRaft layout): the directory was written by a newer release or another tool; start that release, or point log.dirs elsewhere"
    )]
    Version { path: String, version: String },
    #[error(transparent)]
    Write(#[from] CheckpointError),
}

/// The directory id of `dir`: the one its `meta.properties` holds, or a new one written
/// there now. The file is (re)written whenever the node id or a newly learned cluster id
/// is not what it says, keeping the directory id.
pub fn ensure_directory_id(
    dir: &Path,
    node_id: i32,
    cluster_id: Option<&str>,
) -> Result<Uuid, MetaPropertiesError> {
    let path = dir.join(META_PROPERTIES);
    let shown = path.display().to_string();
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => {
            return Err(MetaPropertiesError::Read {
                path: shown,
                source,
            });
        }
    };
    let value = |key: &str| {
        existing
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if let Some(version) = value("version")
        && version != "1"
    {
        return Err(MetaPropertiesError::Version {
            path: shown,
            version: version.to_string(),
        });
    }
    let directory_id = match value("directory.id") {
        Some(text) => decode_uuid(text).ok_or_else(|| MetaPropertiesError::BadDirectoryId {
            path: shown.clone(),
            value: text.to_string(),
        })?,
        None => Uuid::new_v4(),
    };
    let recorded_cluster = value("cluster.id").map(str::to_string);
    let cluster = cluster_id.map(str::to_string).or(recorded_cluster);
    let node = node_id.to_string();
    let current = value("node.id") == Some(node.as_str())
        && value("directory.id").is_some()
        && value("version") == Some("1")
        && value("cluster.id").map(str::to_string) == cluster;
    if !current {
        let mut text = String::from("#\n#Written by Oxbow\n");
        text.push_str(&format!("node.id={node}\n"));
        text.push_str(&format!("directory.id={}\n", encode_uuid(directory_id)));
        text.push_str("version=1\n");
        if let Some(cluster) = &cluster {
            text.push_str(&format!("cluster.id={cluster}\n"));
        }
        write_atomically(&path, text.as_bytes())?;
    }
    Ok(directory_id)
}

/// Kafka's text form of a Uuid: its 16 bytes in URL-safe base64 without padding.
pub fn encode_uuid(id: Uuid) -> String {
    URL_SAFE_NO_PAD.encode(id.as_bytes())
}

/// Kafka's text form back to a Uuid.
pub fn decode_uuid(text: &str) -> Option<Uuid> {
    let bytes = URL_SAFE_NO_PAD.decode(text.trim()).ok()?;
    Uuid::from_slice(&bytes).ok()
}

/// `key=value` lines; `#` comments and blank lines skipped.
fn parse(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('!'))
        .filter_map(|line| {
            let (key, value) = line.split_once('=')?;
            Some((key.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_id_is_kept_and_the_cluster_id_added_once_known() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure_directory_id(dir.path(), 3, None).unwrap();
        let text = std::fs::read_to_string(dir.path().join(META_PROPERTIES)).unwrap();
        assert!(text.contains("node.id=3\n"), "{text}");
        assert!(!text.contains("cluster.id"), "{text}");
        assert_eq!(
            ensure_directory_id(dir.path(), 3, Some("abc")).unwrap(),
            first
        );
        let text = std::fs::read_to_string(dir.path().join(META_PROPERTIES)).unwrap();
        assert!(text.contains("cluster.id=abc\n"), "{text}");
        assert!(text.contains(&format!("directory.id={}\n", encode_uuid(first))));
        // A later start without a configured cluster id keeps the recorded one.
        assert_eq!(ensure_directory_id(dir.path(), 3, None).unwrap(), first);
        let again = std::fs::read_to_string(dir.path().join(META_PROPERTIES)).unwrap();
        assert_eq!(again, text);
    }

    #[test]
    fn a_newer_layout_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(META_PROPERTIES);
        let newer = "node.id=3\nversion=2\ncluster.id=abc\n";
        std::fs::write(&path, newer).unwrap();
        let error = ensure_directory_id(dir.path(), 3, Some("abc")).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("has version=2, and this release reads only version 1"),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
    }

    #[test]
    fn kafka_uuid_text_round_trips_and_junk_is_refused() {
        let id = Uuid::new_v4();
        let text = encode_uuid(id);
        assert_eq!(text.len(), 22);
        assert_eq!(decode_uuid(&text), Some(id));
        // Sixteen 0xff bytes: 21 full sextets and a last one holding two bits.
        assert_eq!(
            encode_uuid(Uuid::from_u128(u128::MAX)),
            "_____________________w"
        );
        assert_eq!(decode_uuid("not a uuid"), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(META_PROPERTIES), "directory.id=???\n").unwrap();
        assert!(matches!(
            ensure_directory_id(dir.path(), 1, None),
            Err(MetaPropertiesError::BadDirectoryId { .. })
        ));
    }
}
