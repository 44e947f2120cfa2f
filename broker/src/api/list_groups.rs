//! ListGroups, with the state (v4+) and type (v5+) filters.

use bytes::Bytes;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{ApiKey, GroupId, ListGroupsRequest, ListGroupsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext};
use crate::security::acl::{CLUSTER_NAME, Operation, ResourceType};

#[derive(Debug)]
pub struct ListGroupsApi;

impl Api for ListGroupsApi {
    fn key(&self) -> ApiKey {
        ApiKey::ListGroups
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: ListGroupsRequest = context.decode(body)?;
            let matches = |filter: &[StrBytes], value: &str| {
                filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(value))
            };
            // DESCRIBE on the cluster lists every group; otherwise those the principal may
            // describe.
            let access = context.access();
            let describe_all =
                access.sees(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME);
            let groups = context
                .broker
                .groups
                .list()
                .into_iter()
                .filter(|(id, _, state, kind)| {
                    matches(&request.states_filter, state)
                        && matches(&request.types_filter, kind)
                        && (describe_all
                            || access.sees(Operation::Describe, ResourceType::Group, id))
                })
                .map(|(id, protocol_type, state, kind)| {
                    ListedGroup::default()
                        .with_group_id(GroupId(StrBytes::from_string(id)))
                        .with_protocol_type(StrBytes::from_string(protocol_type))
                        .with_group_state(StrBytes::from_static_str(state))
                        .with_group_type(StrBytes::from_static_str(kind))
                })
                .collect();
            context.respond(&ListGroupsResponse::default().with_groups(groups))
        })
    }
}
