//! The one place where failures become Kafka error codes.

use kafka_protocol::ResponseError;

use super::admin::AdminError;
use crate::controller::ControllerError;
use crate::group::GroupError;
use crate::replication::AppendError;
use crate::storage::CompressionError;
use crate::storage::validator::ValidationError;
use crate::storage::{BatchError, LogError};

/// Kafka's "no error".
pub const NONE: i16 = 0;

/// A Kafka error code's name as Kafka spells it (`NOT_LEADER_OR_FOLLOWER`), for metric
/// labels: a closed set, built once from the protocol crate's error table; a code the
/// table does not know is `UNKNOWN`.
pub fn error_name(code: i16) -> &'static str {
    static NAMES: std::sync::OnceLock<std::collections::HashMap<i16, String>> =
        std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        (-1..=200)
            .filter_map(|code| ResponseError::try_from_code(code).map(|e| (code, e)))
            .map(|(code, error)| (code, screaming_snake(&format!("{error:?}"))))
            .collect()
    });
    match code {
        NONE => "NONE",
        _ => names.get(&code).map_or("UNKNOWN", String::as_str),
    }
}

fn screaming_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

// Codes a handler answers with for a condition it finds itself, in the request or in the
// broker's view (no module error behind them); the mappings below cover module errors.
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = ResponseError::ClusterAuthorizationFailed.code();
pub const GROUP_AUTHORIZATION_FAILED: i16 = ResponseError::GroupAuthorizationFailed.code();
pub const TOPIC_AUTHORIZATION_FAILED: i16 = ResponseError::TopicAuthorizationFailed.code();
pub const COORDINATOR_NOT_AVAILABLE: i16 = ResponseError::CoordinatorNotAvailable.code();
pub const GROUP_ID_NOT_FOUND: i16 = ResponseError::GroupIdNotFound.code();
pub const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();
pub const INVALID_REPLICATION_FACTOR: i16 = ResponseError::InvalidReplicationFactor.code();
pub const INVALID_REQUEST: i16 = ResponseError::InvalidRequest.code();
pub const INVALID_TOPIC_EXCEPTION: i16 = ResponseError::InvalidTopicException.code();
pub const INVALID_REQUIRED_ACKS: i16 = ResponseError::InvalidRequiredAcks.code();
pub const KAFKA_STORAGE_ERROR: i16 = ResponseError::KafkaStorageError.code();
pub const LEADER_NOT_AVAILABLE: i16 = ResponseError::LeaderNotAvailable.code();
pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 =
    ResponseError::NotEnoughReplicasAfterAppend.code();
pub const NOT_LEADER_OR_FOLLOWER: i16 = ResponseError::NotLeaderOrFollower.code();
pub const FENCED_LEADER_EPOCH: i16 = ResponseError::FencedLeaderEpoch.code();
pub const REQUEST_TIMED_OUT: i16 = ResponseError::RequestTimedOut.code();
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 =
    ResponseError::TransactionalIdAuthorizationFailed.code();
pub const UNKNOWN_SERVER_ERROR: i16 = ResponseError::UnknownServerError.code();
pub const UNKNOWN_TOPIC_ID: i16 = ResponseError::UnknownTopicId.code();
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
pub const UNSUPPORTED_VERSION: i16 = ResponseError::UnsupportedVersion.code();

pub const INVALID_PRODUCER_EPOCH: i16 = ResponseError::InvalidProducerEpoch.code();
pub const OPERATION_NOT_ATTEMPTED: i16 = ResponseError::OperationNotAttempted.code();
pub const INVALID_TXN_STATE: i16 = ResponseError::InvalidTxnState.code();
pub const UNSTABLE_OFFSET_COMMIT: i16 = ResponseError::UnstableOffsetCommit.code();
pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = ResponseError::TransactionalIdNotFound.code();
pub const CONCURRENT_TRANSACTIONS: i16 = ResponseError::ConcurrentTransactions.code();
pub const TRANSACTION_ABORTABLE: i16 = ResponseError::TransactionAbortable.code();
pub const NETWORK_EXCEPTION: i16 = ResponseError::NetworkException.code();
pub const PRODUCER_FENCED: i16 = ResponseError::ProducerFenced.code();
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = ResponseError::CoordinatorLoadInProgress.code();
pub const NOT_COORDINATOR: i16 = ResponseError::NotCoordinator.code();
pub const NOT_ENOUGH_REPLICAS: i16 = ResponseError::NotEnoughReplicas.code();

/// [`txn_error`] for a client at `version` of an API whose `first_fenced` version
/// introduced PRODUCER_FENCED (KIP-588): older clients are told INVALID_PRODUCER_EPOCH,
/// the fencing they know.
pub fn txn_error_at(error: &crate::txn::TxnError, version: i16, first_fenced: i16) -> i16 {
    match txn_error(error) {
        PRODUCER_FENCED if version < first_fenced => INVALID_PRODUCER_EPOCH,
        code => code,
    }
}

/// A transaction coordinator's refusal as Kafka's error code.
pub fn txn_error(error: &crate::txn::TxnError) -> i16 {
    use crate::txn::TxnError;
    match error {
        TxnError::NotCoordinator => ResponseError::NotCoordinator.code(),
        TxnError::LoadInProgress => ResponseError::CoordinatorLoadInProgress.code(),
        TxnError::NotAvailable => ResponseError::CoordinatorNotAvailable.code(),
        TxnError::InvalidProducerIdMapping => ResponseError::InvalidProducerIdMapping.code(),
        TxnError::ProducerFenced => ResponseError::ProducerFenced.code(),
        TxnError::ConcurrentTransactions => ResponseError::ConcurrentTransactions.code(),
        TxnError::InvalidTxnState => ResponseError::InvalidTxnState.code(),
        TxnError::InvalidTransactionTimeout => ResponseError::InvalidTransactionTimeout.code(),
        TxnError::InvalidProducerEpoch => ResponseError::InvalidProducerEpoch.code(),
    }
}

pub fn batch_error(error: &BatchError) -> i16 {
    match error {
        BatchError::TooLarge { .. } => ResponseError::MessageTooLarge.code(),
        BatchError::RecordCountMismatch { .. } | BatchError::Empty => {
            ResponseError::InvalidRecord.code()
        }
        BatchError::TooShort { .. }
        | BatchError::LengthMismatch { .. }
        | BatchError::UnsupportedMagic { .. }
        | BatchError::CrcMismatch { .. } => ResponseError::CorruptMessage.code(),
    }
}

/// Produce validation: a record rule broken is INVALID_TIMESTAMP when any timestamp was
/// out of range, INVALID_RECORD otherwise (as Kafka's RecordValidationException); bytes
/// that do not decode are CORRUPT_MESSAGE.
pub fn validation_error(error: &ValidationError) -> i16 {
    match error {
        ValidationError::RecordsRejected {
            invalid_timestamp: true,
            ..
        } => ResponseError::InvalidTimestamp.code(),
        ValidationError::RecordsRejected { .. } => ResponseError::InvalidRecord.code(),
        ValidationError::InvalidBatch { source } => batch_error(source),
        ValidationError::MalformedRecord { .. } => ResponseError::CorruptMessage.code(),
        ValidationError::Codec { source } => match source {
            CompressionError::TooLarge { .. } => ResponseError::MessageTooLarge.code(),
            CompressionError::Compress { .. } => ResponseError::UnknownServerError.code(),
            CompressionError::UnknownCodec { .. } | CompressionError::Decompress { .. } => {
                ResponseError::CorruptMessage.code()
            }
        },
    }
}

/// The code of a replica's refusal.
pub fn refusal(refusal: &crate::replication::Refusal) -> i16 {
    match refusal {
        crate::replication::Refusal::Code(code) => *code,
        crate::replication::Refusal::Log(error) => log_error(error),
    }
}

pub fn log_error(error: &LogError) -> i16 {
    match error {
        LogError::InvalidBatch { source, .. } => batch_error(source),
        LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange.code(),
        LogError::OutOfOrderSequence { .. } => ResponseError::OutOfOrderSequenceNumber.code(),
        LogError::ProducerFenced { .. } => ResponseError::InvalidProducerEpoch.code(),
        LogError::CoordinatorFenced { .. } => ResponseError::TransactionCoordinatorFenced.code(),
        LogError::TransactionNotVerified { .. } => ResponseError::InvalidTxnState.code(),
        LogError::Closed { .. } => ResponseError::NotLeaderOrFollower.code(),
        LogError::Segment { .. }
        | LogError::Checkpoint { .. }
        | LogError::Directory { .. }
        | LogError::DirOffline { .. } => ResponseError::KafkaStorageError.code(),
        LogError::Decode { .. } => ResponseError::CorruptMessage.code(),
    }
}

pub fn append_error(error: &AppendError) -> i16 {
    match error {
        AppendError::NotLeader(_) => ResponseError::NotLeaderOrFollower.code(),
        AppendError::NotEnoughReplicas { .. } => ResponseError::NotEnoughReplicas.code(),
        AppendError::Invalid(error) => validation_error(error),
        AppendError::Log(error) => log_error(error),
    }
}

/// A marker this broker did not write, as WriteTxnMarkers answers it.
pub fn marker_error(failure: &crate::txn::markers::MarkerFailure) -> i16 {
    use crate::replication::CommitWait;
    use crate::txn::markers::MarkerFailure;
    match failure {
        MarkerFailure::NotServed(code) => *code,
        MarkerFailure::Refused(error) => append_error(error),
        MarkerFailure::NotReplicated(CommitWait::LeadershipLost) => NOT_LEADER_OR_FOLLOWER,
        MarkerFailure::NotReplicated(CommitWait::TimedOut) => REQUEST_TIMED_OUT,
        MarkerFailure::NotReplicated(CommitWait::NotEnoughReplicasAfterAppend) => {
            NOT_ENOUGH_REPLICAS_AFTER_APPEND
        }
    }
}

pub fn controller_error(error: &ControllerError) -> i16 {
    let code = match error {
        ControllerError::TopicAlreadyExists(_) => ResponseError::TopicAlreadyExists,
        ControllerError::UnknownTopic(_) => ResponseError::UnknownTopicOrPartition,
        ControllerError::InvalidTopicName { .. } => ResponseError::InvalidTopicException,
        ControllerError::InvalidPartitions { .. } => ResponseError::InvalidPartitions,
        ControllerError::InvalidReplicationFactor { .. } => ResponseError::InvalidReplicationFactor,
        ControllerError::InvalidConfig(_) => ResponseError::InvalidConfig,
        ControllerError::DuplicateBrokerRegistration { .. } => {
            ResponseError::DuplicateBrokerRegistration
        }
        ControllerError::UnknownBroker(_) => ResponseError::BrokerIdNotRegistered,
        ControllerError::BrokerHoldsReplicas { .. } => ResponseError::InvalidRequest,
        ControllerError::NotController(_) => ResponseError::NotController,
        ControllerError::FencedLeaderEpoch(_) => ResponseError::FencedLeaderEpoch,
        ControllerError::InvalidUpdateVersion(_) => ResponseError::InvalidUpdateVersion,
        ControllerError::UnsupportedVersion(_) => ResponseError::UnsupportedVersion,
        ControllerError::IneligibleReplica(_) => ResponseError::IneligibleReplica,
        ControllerError::ElectionNotNeeded(_) => ResponseError::ElectionNotNeeded,
        ControllerError::PreferredLeaderNotAvailable(_) => {
            ResponseError::PreferredLeaderNotAvailable
        }
        ControllerError::EligibleLeadersNotAvailable(_) => {
            ResponseError::EligibleLeadersNotAvailable
        }
        ControllerError::InvalidReplicaAssignment(_) => ResponseError::InvalidReplicaAssignment,
        ControllerError::NoReassignmentInProgress(_) => ResponseError::NoReassignmentInProgress,
        ControllerError::InvalidRequest(_) => ResponseError::InvalidRequest,
        ControllerError::TopicAuthorization(_) => ResponseError::TopicAuthorizationFailed,
        ControllerError::UnacceptableCredential(_) => ResponseError::UnacceptableCredential,
        ControllerError::UnsupportedSaslMechanism(_) => ResponseError::UnsupportedSaslMechanism,
        ControllerError::ResourceNotFound(_) => ResponseError::ResourceNotFound,
        ControllerError::DuplicateResource(_) => ResponseError::DuplicateResource,
        ControllerError::Timeout(_) => ResponseError::RequestTimedOut,
        ControllerError::Quorum(_) | ControllerError::Refused(_) => {
            ResponseError::UnknownServerError
        }
    };
    code.code()
}

pub fn admin_error(error: &AdminError) -> i16 {
    match error {
        AdminError::DuplicateTopic(_)
        | AdminError::DuplicateConfig(_)
        | AdminError::NameAndId
        | AdminError::UnsupportedResourceType(_)
        | AdminError::BrokerIdNotInteger(_)
        | AdminError::UnexpectedBrokerId { .. }
        | AdminError::NotDynamic(_)
        | AdminError::NullValue(_)
        | AdminError::UnknownOperation(_) => ResponseError::InvalidRequest.code(),
        AdminError::NotAList { .. } => ResponseError::InvalidConfig.code(),
        AdminError::TopicAuthorization { .. } => TOPIC_AUTHORIZATION_FAILED,
        AdminError::ClusterAuthorization(_) => CLUSTER_AUTHORIZATION_FAILED,
        AdminError::TopicDeletionDisabled => ResponseError::TopicDeletionDisabled.code(),
        AdminError::UnknownTopicId(_) => ResponseError::UnknownTopicId.code(),
        AdminError::UnknownPartition { .. } => ResponseError::UnknownTopicOrPartition.code(),
        AdminError::NotLeader { .. } => ResponseError::NotLeaderOrFollower.code(),
        AdminError::InvalidReplicaAssignment(_) => ResponseError::InvalidReplicaAssignment.code(),
        AdminError::CompactedTopic { .. } => ResponseError::PolicyViolation.code(),
        AdminError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange.code(),
        AdminError::UnsupportedEndpointType(_) => ResponseError::UnsupportedEndpointType.code(),
        AdminError::Controller(error) => controller_error(error),
        AdminError::Log(error) => log_error(error),
    }
}

pub fn group_error(error: &GroupError) -> i16 {
    let code = match error {
        GroupError::InvalidGroupId => ResponseError::InvalidGroupId,
        GroupError::GroupAuthorizationFailed => ResponseError::GroupAuthorizationFailed,
        GroupError::UnknownMemberId => ResponseError::UnknownMemberId,
        GroupError::MemberIdRequired => ResponseError::MemberIdRequired,
        GroupError::IllegalGeneration => ResponseError::IllegalGeneration,
        GroupError::RebalanceInProgress => ResponseError::RebalanceInProgress,
        GroupError::InconsistentGroupProtocol => ResponseError::InconsistentGroupProtocol,
        GroupError::InvalidSessionTimeout => ResponseError::InvalidSessionTimeout,
        GroupError::FencedInstanceId => ResponseError::FencedInstanceId,
        GroupError::NonEmptyGroup => ResponseError::NonEmptyGroup,
        GroupError::GroupIdNotFound => ResponseError::GroupIdNotFound,
        GroupError::CoordinatorNotAvailable => ResponseError::CoordinatorNotAvailable,
        GroupError::NotCoordinator => ResponseError::NotCoordinator,
        GroupError::CoordinatorLoadInProgress => ResponseError::CoordinatorLoadInProgress,
        GroupError::GroupSubscribedToTopic => ResponseError::GroupSubscribedToTopic,
        GroupError::FencedMemberEpoch => ResponseError::FencedMemberEpoch,
        GroupError::UnreleasedInstanceId => ResponseError::UnreleasedInstanceId,
        GroupError::UnsupportedAssignor => ResponseError::UnsupportedAssignor,
        GroupError::InvalidRegularExpression { .. } => ResponseError::InvalidRegularExpression,
        GroupError::StaleMemberEpoch => ResponseError::StaleMemberEpoch,
        GroupError::InvalidRequest(_) => ResponseError::InvalidRequest,
        GroupError::UnknownTopicOrPartition => ResponseError::UnknownTopicOrPartition,
        GroupError::OffsetMetadataTooLarge => ResponseError::OffsetMetadataTooLarge,
        GroupError::EncodeRecord { .. }
        | GroupError::BuildBatch { .. }
        | GroupError::Append { .. } => ResponseError::KafkaStorageError,
    };
    code.code()
}

/// `group_error` of a result, or NONE.
pub fn group_result<T>(result: &Result<T, GroupError>) -> i16 {
    match result {
        Ok(_) => NONE,
        Err(error) => group_error(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_names_are_kafkas() {
        assert_eq!(error_name(NOT_LEADER_OR_FOLLOWER), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(error_name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(error_name(KAFKA_STORAGE_ERROR), "KAFKA_STORAGE_ERROR");
        assert_eq!(error_name(3), "UNKNOWN_TOPIC_OR_PARTITION");
        assert_eq!(error_name(0), "NONE");
        assert_eq!(error_name(9_999), "UNKNOWN");
    }
}
