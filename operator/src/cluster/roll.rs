//! The roll gate: the operator restarts an outdated broker only while the cluster has no
//! under-replicated partition, so a roll never takes away the last in-sync copy of a
//! partition that is already short of replicas. What the brokers report decides; when no
//! broker answers, the roll waits too.

use crate::admin::AdminError;

/// May the next broker restart now?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RollGate {
    /// No partition is under-replicated: restart.
    Open,
    /// This many partitions have fewer in-sync replicas than replicas: wait.
    UnderReplicated(usize),
    /// The brokers could not be asked: wait.
    Unknown(String),
}

impl RollGate {
    /// Why the roll waits, for the Rolling condition and the log; `None` when it may go on.
    pub fn reason(&self) -> Option<String> {
        match self {
            RollGate::Open => None,
            RollGate::UnderReplicated(count) => {
                Some(format!("{count} partitions are under-replicated"))
            }
            RollGate::Unknown(message) => Some(message.clone()),
        }
    }
}

/// Asks the first broker among `candidates` (`host:port`) that answers.
pub async fn check(candidates: &[String]) -> RollGate {
    let (mut admin, _) = match crate::bootstrap::connect(candidates).await {
        Ok(connected) => connected,
        Err(error) => {
            return RollGate::Unknown(format!(
                "cannot reach the brokers to check replication: {error}"
            ));
        }
    };
    decide(admin.under_replicated_partitions().await)
}

fn decide(under_replicated: Result<usize, AdminError>) -> RollGate {
    match under_replicated {
        Ok(0) => RollGate::Open,
        Ok(count) => RollGate::UnderReplicated(count),
        Err(error) => RollGate::Unknown(format!("cannot check replication: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_zero_under_replicated_partitions_open_the_gate() {
        assert_eq!(decide(Ok(0)), RollGate::Open);
        assert_eq!(decide(Ok(2)), RollGate::UnderReplicated(2));
        assert_eq!(
            decide(Ok(2)).reason().as_deref(),
            Some("2 partitions are under-replicated")
        );
        let unknown = decide(Err(AdminError::Timeout {
            api: "Metadata",
            address: "b:9092".to_string(),
        }));
        assert!(matches!(unknown, RollGate::Unknown(_)), "{unknown:?}");
        assert!(unknown.reason().is_some());
        assert_eq!(RollGate::Open.reason(), None);
    }
}
