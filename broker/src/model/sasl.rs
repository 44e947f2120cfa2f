//! The SASL mechanisms a listener offers and the SCRAM mechanisms credentials are kept for,
//! with Kafka's names and type codes.

use serde::{Deserialize, Serialize};

/// A SCRAM mechanism, with Kafka's names and type codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];

    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SCRAM-SHA-256",
            Self::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Kafka's `ScramMechanism` type code (AlterUserScramCredentials,
    /// DescribeUserScramCredentials): 1 for SHA-256, 2 for SHA-512.
    pub fn code(self) -> i8 {
        match self {
            Self::Sha256 => 1,
            Self::Sha512 => 2,
        }
    }

    pub fn from_code(code: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.code() == code)
    }
}

/// A SASL mechanism a listener can offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    Scram(ScramMechanism),
    Plain,
    OAuthBearer,
}

impl SaslMechanism {
    pub const ALL: [SaslMechanism; 4] = [
        SaslMechanism::Scram(ScramMechanism::Sha256),
        SaslMechanism::Scram(ScramMechanism::Sha512),
        SaslMechanism::Plain,
        SaslMechanism::OAuthBearer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Scram(scram) => scram.name(),
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}
