//! User credentials: SCRAM credentials set and removed (AlterUserScramCredentials), with
//! Kafka's checks and its per-user answer: a user's alterations apply together or not at
//! all, other users' independently.

use super::{CommandOutcome, ControllerError};
use crate::metadata::features::{SCRAM_METADATA_VERSION, metadata_version_name};
use crate::metadata::image::ClusterImage;
use crate::metadata::records::{MetadataRecord, ScramCredential, ScramMechanism};

/// Kafka's bounds on a credential's iteration count.
pub const MIN_ITERATIONS: u32 = 4096;
pub const MAX_ITERATIONS: u32 = 16384;

/// One alteration of AlterUserScramCredentials. The mechanism is Kafka's type code, checked
/// here so an unknown one is answered per user.
#[derive(Debug, Clone, PartialEq)]
pub enum ScramAlteration {
    Upsert {
        user: String,
        mechanism: i8,
        credential: ScramCredential,
    },
    Delete {
        user: String,
        mechanism: i8,
    },
}

impl ScramAlteration {
    pub fn user(&self) -> &str {
        match self {
            Self::Upsert { user, .. } | Self::Delete { user, .. } => user,
        }
    }

    fn mechanism_code(&self) -> i8 {
        match self {
            Self::Upsert { mechanism, .. } | Self::Delete { mechanism, .. } => *mechanism,
        }
    }
}

/// The users an AlterUserScramCredentials names, each once, in the order they first appear
/// (the order of its answers).
pub fn users_in_order(alterations: &[ScramAlteration]) -> Vec<&str> {
    let mut users: Vec<&str> = Vec::new();
    for alteration in alterations {
        if !users.contains(&alteration.user()) {
            users.push(alteration.user());
        }
    }
    users
}

pub(super) fn alter_scram_credentials(
    image: &ClusterImage,
    alterations: &[ScramAlteration],
) -> (Vec<MetadataRecord>, CommandOutcome) {
    let mut records = Vec::new();
    let mut outcomes = Vec::new();
    for user in users_in_order(alterations) {
        let mine: Vec<&ScramAlteration> = alterations.iter().filter(|a| a.user() == user).collect();
        match user_records(image, user, &mine) {
            Ok(mut user_records) => {
                records.append(&mut user_records);
                outcomes.push((user.to_string(), None));
            }
            Err(error) => outcomes.push((user.to_string(), Some(error))),
        }
    }
    (records, CommandOutcome::Users(outcomes))
}

fn user_records(
    image: &ClusterImage,
    user: &str,
    alterations: &[&ScramAlteration],
) -> Result<Vec<MetadataRecord>, ControllerError> {
    if user.is_empty() {
        return Err(ControllerError::UnacceptableCredential(
            "Username must not be empty".into(),
        ));
    }
    let mv = image.features.metadata_version();
    if image.features.is_set() && mv < SCRAM_METADATA_VERSION {
        return Err(ControllerError::UnsupportedVersion(format!(
            "SCRAM credentials need metadata.version {} or later; the cluster is at {}",
            metadata_version_name(SCRAM_METADATA_VERSION),
            metadata_version_name(mv)
        )));
    }
    let mut seen = Vec::new();
    let mut records = Vec::new();
    for alteration in alterations {
        let code = alteration.mechanism_code();
        let mechanism = ScramMechanism::from_code(code).ok_or_else(|| {
            ControllerError::UnsupportedSaslMechanism(format!("Unknown SCRAM mechanism {code}"))
        })?;
        if seen.contains(&mechanism) {
            return Err(ControllerError::DuplicateResource(
                "A user credential cannot be altered twice in the same request".into(),
            ));
        }
        seen.push(mechanism);
        match alteration {
            ScramAlteration::Upsert { credential, .. } => {
                if credential.iterations < MIN_ITERATIONS {
                    return Err(ControllerError::UnacceptableCredential(format!(
                        "Too few iterations: {} (at least {MIN_ITERATIONS})",
                        credential.iterations
                    )));
                }
                if credential.iterations > MAX_ITERATIONS {
                    return Err(ControllerError::UnacceptableCredential(format!(
                        "Too many iterations: {} (at most {MAX_ITERATIONS})",
                        credential.iterations
                    )));
                }
                if credential.salt.is_empty() || credential.stored_key.is_empty() {
                    return Err(ControllerError::UnacceptableCredential(
                        "A credential needs a salt and a salted password".into(),
                    ));
                }
                records.push(MetadataRecord::ScramCredentialSet {
                    user: user.to_string(),
                    mechanism,
                    credential: credential.clone(),
                });
            }
            ScramAlteration::Delete { .. } => {
                if image.scram_credential(user, mechanism).is_none() {
                    return Err(ControllerError::ResourceNotFound(
                        "Attempt to delete a user credential that does not exist".into(),
                    ));
                }
                records.push(MetadataRecord::ScramCredentialRemoved {
                    user: user.to_string(),
                    mechanism,
                });
            }
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(iterations: u32) -> ScramCredential {
        ScramCredential {
            salt: b"salt".to_vec(),
            stored_key: vec![1; 32],
            server_key: vec![2; 32],
            iterations,
        }
    }

    fn upsert(user: &str, mechanism: i8, iterations: u32) -> ScramAlteration {
        ScramAlteration::Upsert {
            user: user.into(),
            mechanism,
            credential: credential(iterations),
        }
    }

    fn outcome_of(
        image: &mut ClusterImage,
        alterations: &[ScramAlteration],
    ) -> Vec<(String, Option<ControllerError>)> {
        let (records, outcome) = alter_scram_credentials(image, alterations);
        for record in &records {
            image.apply(record);
        }
        match outcome {
            CommandOutcome::Users(users) => users,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_user_is_answered_and_altered_all_or_nothing() {
        let mut image = ClusterImage::default();
        let answers = outcome_of(
            &mut image,
            &[
                upsert("alice", 2, 8192),
                upsert("alice", 1, 4096),
                upsert("bob", 2, 100),
                upsert("bob", 1, 4096),
                upsert("carol", 9, 4096),
                upsert("", 1, 4096),
                ScramAlteration::Delete {
                    user: "dave".into(),
                    mechanism: 1,
                },
                upsert("erin", 1, 4096),
                upsert("erin", 1, 4096),
            ],
        );
        let code = |user: &str| {
            answers
                .iter()
                .find(|(u, _)| u == user)
                .and_then(|(_, e)| e.clone())
        };
        assert_eq!(code("alice"), None);
        assert!(matches!(
            code("bob"),
            Some(ControllerError::UnacceptableCredential(_))
        ));
        assert!(matches!(
            code("carol"),
            Some(ControllerError::UnsupportedSaslMechanism(_))
        ));
        assert!(matches!(
            code(""),
            Some(ControllerError::UnacceptableCredential(_))
        ));
        assert!(matches!(
            code("dave"),
            Some(ControllerError::ResourceNotFound(_))
        ));
        assert!(matches!(
            code("erin"),
            Some(ControllerError::DuplicateResource(_))
        ));
        assert_eq!(
            image.scram_credentials.len(),
            1,
            "only alice's credentials were set"
        );
        assert_eq!(image.scram_credentials["alice"].len(), 2);
        assert!(
            image
                .scram_credential("bob", ScramMechanism::Sha256)
                .is_none()
        );

        let answers = outcome_of(
            &mut image,
            &[ScramAlteration::Delete {
                user: "alice".into(),
                mechanism: 2,
            }],
        );
        assert_eq!(answers, vec![("alice".to_string(), None)]);
        assert!(
            image
                .scram_credential("alice", ScramMechanism::Sha512)
                .is_none()
        );
        assert!(
            image
                .scram_credential("alice", ScramMechanism::Sha256)
                .is_some()
        );
    }
}
