//! DeleteGroups: only groups without members; offsets and metadata get tombstones.

use bytes::Bytes;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::{ApiKey, DeleteGroupsRequest, DeleteGroupsResponse};
use kafka_protocol::protocol::VersionRange;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{Operation, ResourceType};

#[derive(Debug)]
pub struct DeleteGroupsApi;

impl Api for DeleteGroupsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DeleteGroups
    }

    /// v3 adds per-group error messages and GROUP_DELETION_FAILED (KIP-1331): not yet.
    fn versions(&self) -> VersionRange {
        super::up_to(self.key(), 2)
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DeleteGroupsRequest = context.decode(body)?;
            let access = context.access();
            let results = request
                .groups_names
                .into_iter()
                .map(|group_id| {
                    let result = if access.allows(Operation::Delete, ResourceType::Group, &group_id)
                    {
                        context.broker.groups.delete_group(&group_id.0)
                    } else {
                        Err(crate::group::GroupError::GroupAuthorizationFailed)
                    };
                    DeletableGroupResult::default()
                        .with_group_id(group_id)
                        .with_error_code(errors::group_result(&result))
                })
                .collect();
            context.respond(&DeleteGroupsResponse::default().with_results(results))
        })
    }
}
