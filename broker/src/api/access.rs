//! What the connection's principal may do, asked by handlers: `context.access()` takes one
//! view of the ACLs for the request. Without an authorizer everything is allowed and the
//! authorized-operations fields report every operation (as Kafka does).

use std::sync::Arc;

use super::RequestContext;
use crate::metadata::image::ClusterImage;
use crate::security::Authorizer;
use crate::security::acl::{CLUSTER_NAME, Operation, ResourceType};

/// One request's view of the authorizer.
#[derive(Debug)]
pub struct Access<'a> {
    checked: Option<Checked<'a>>,
    context: &'a RequestContext<'a>,
}

#[derive(Debug)]
struct Checked<'a> {
    authorizer: &'a Authorizer,
    image: Arc<ClusterImage>,
    principal: String,
    host: String,
}

impl<'a> Access<'a> {
    pub(super) fn new(context: &'a RequestContext<'a>) -> Self {
        let checked = context
            .broker
            .config
            .authorizer
            .as_ref()
            .map(|authorizer| Checked {
                authorizer,
                image: context.broker.controller.image(),
                principal: context.principal.to_string(),
                host: context.client_address.to_string(),
            });
        Self { checked, context }
    }

    /// Whether the request may do `operation` on the resource; a denial is counted and logged.
    pub fn allows(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        let allowed = self.sees(operation, resource_type, name);
        if !allowed {
            self.denied(operation, resource_type, name);
        }
        allowed
    }

    /// As [`Self::allows`] without counting a denial: for listings that leave out what the
    /// principal may not see (Metadata of all topics, ListGroups).
    pub fn sees(&self, operation: Operation, resource_type: ResourceType, name: &str) -> bool {
        match &self.checked {
            None => true,
            Some(c) => c.authorizer.authorize(
                &c.image.acls,
                &c.principal,
                &c.host,
                operation,
                resource_type,
                name,
            ),
        }
    }

    /// `operation` on the cluster resource.
    pub fn allows_cluster(&self, operation: Operation) -> bool {
        self.allows(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// `operation` on at least one resource of the type (an idempotent producer's WRITE).
    pub fn allows_any(&self, operation: Operation, resource_type: ResourceType) -> bool {
        match &self.checked {
            None => true,
            Some(c) => c.authorizer.authorize_any(
                &c.image.acls,
                &c.principal,
                &c.host,
                operation,
                resource_type,
            ),
        }
    }

    /// KIP-430's bit field of the operations allowed on the resource.
    pub fn operations(&self, resource_type: ResourceType, name: &str) -> i32 {
        match &self.checked {
            None => resource_type
                .operations()
                .iter()
                .fold(0, |bits, op| bits | (1 << op.code())),
            Some(c) => c.authorizer.authorized_operations(
                &c.image.acls,
                &c.principal,
                &c.host,
                resource_type,
                name,
            ),
        }
    }

    /// The message of a CLUSTER_AUTHORIZATION_FAILED answer.
    pub fn cluster_denied(
        &self,
        operation: Operation,
    ) -> Option<kafka_protocol::protocol::StrBytes> {
        Some(kafka_protocol::protocol::StrBytes::from_string(format!(
            "{} is not authorized to {operation:?} the cluster",
            self.context.principal
        )))
    }

    /// Whether requests are checked at all.
    pub fn enabled(&self) -> bool {
        self.checked.is_some()
    }

    fn denied(&self, operation: Operation, resource_type: ResourceType, name: &str) {
        let Some(c) = &self.checked else { return };
        self.context
            .broker
            .metrics
            .authorization_denials
            .with_label_values(&[resource_type.label(), operation.label()])
            .inc();
        tracing::info!(
            principal = %c.principal,
            host = %c.host,
            api = super::api_name(self.context.api),
            ?operation,
            ?resource_type,
            resource = name,
            "Denied"
        );
    }
}
