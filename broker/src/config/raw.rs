//! Reading typed values out of the merged key map: every reader names the key in its
//! error, with the value it refused and why.

use std::collections::BTreeMap;

use super::{ConfigError, integer_range};

/// The merged configuration (every key, defaults included), read by key.
#[derive(Debug, Clone, Copy)]
pub(super) struct Raw<'a>(pub &'a BTreeMap<String, String>);

impl Raw<'_> {
    pub fn get(&self, key: &str) -> String {
        self.0.get(key).cloned().unwrap_or_default()
    }

    pub fn invalid(&self, key: &str, reason: &str) -> ConfigError {
        ConfigError::InvalidValue {
            key: key.to_string(),
            value: self.get(key),
            reason: reason.to_string(),
        }
    }

    /// An integer within the key's range in the catalog.
    pub fn int(&self, key: &str) -> Result<i64, ConfigError> {
        let (min, max) = integer_range(key);
        let value: i64 = self
            .get(key)
            .trim()
            .parse()
            .map_err(|_| self.invalid(key, "not an integer"))?;
        if value < min || value > max {
            return Err(self.invalid(key, &format!("must be between {min} and {max}")));
        }
        Ok(value)
    }

    pub fn boolean(&self, key: &str) -> Result<bool, ConfigError> {
        self.get(key)
            .trim()
            .parse()
            .map_err(|_| self.invalid(key, "expected true or false"))
    }

    /// A socket buffer size: Kafka's -1 means "the OS default"; 0 is no buffer at all,
    /// refused as Java refuses it.
    pub fn buffer_size(&self, key: &str) -> Result<Option<usize>, ConfigError> {
        match self.int(key)? {
            -1 => Ok(None),
            0 => Err(self.invalid(key, "must be -1 (the OS default) or a positive size")),
            size => Ok(Some(size as usize)),
        }
    }

    /// The value, trimmed, when not empty.
    pub fn optional(&self, key: &str) -> Option<String> {
        Some(self.get(key).trim().to_string()).filter(|s| !s.is_empty())
    }
}
