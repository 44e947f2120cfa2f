//! CreateAcls, DescribeAcls and DeleteAcls (`kafka-acls`): entries checked here, kept in
//! the metadata log by the controller. Without an authorizer each answers
//! SECURITY_DISABLED; changing entries needs ALTER on the cluster, listing them DESCRIBE.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::security::acl::{AclBinding, AclFilter, Operation};

const NO_AUTHORIZER: &str = "No Authorizer is configured (authorizer.class.name)";

/// Why a whole ACL request is refused before looking at its entries.
fn refusal(context: &RequestContext<'_>, operation: Operation) -> Option<(i16, String)> {
    let access = context.access();
    if !access.enabled() {
        return Some((ResponseError::SecurityDisabled.code(), NO_AUTHORIZER.into()));
    }
    (!access.allows_cluster(operation)).then(|| {
        (
            ResponseError::ClusterAuthorizationFailed.code(),
            format!(
                "{} may not {operation:?} the cluster's ACLs",
                context.principal
            ),
        )
    })
}

fn message(text: String) -> Option<StrBytes> {
    Some(StrBytes::from_string(text))
}

#[derive(Debug)]
pub struct CreateAclsApi;

impl Api for CreateAclsApi {
    fn key(&self) -> ApiKey {
        ApiKey::CreateAcls
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: CreateAclsRequest = context.decode(body)?;
            let refused = refusal(context, Operation::Alter);
            // Each creation is answered on its own: checked here, the valid ones committed
            // together.
            let mut answers: Vec<Result<AclBinding, (i16, String)>> = request
                .creations
                .iter()
                .map(|c| {
                    if let Some(refused) = &refused {
                        return Err(refused.clone());
                    }
                    AclBinding::from_request(
                        c.resource_type,
                        &c.resource_name,
                        c.resource_pattern_type,
                        &c.principal,
                        &c.host,
                        c.operation,
                        c.permission_type,
                    )
                    .map_err(|reason| (errors::INVALID_REQUEST, reason))
                })
                .collect();
            let valid: Vec<AclBinding> = answers.iter().filter_map(|a| a.clone().ok()).collect();
            if !valid.is_empty() {
                if let Err(error) = context.broker.controller.create_acls(valid.clone()).await {
                    let failed = (errors::controller_error(&error), error.to_string());
                    for answer in answers.iter_mut().filter(|a| a.is_ok()) {
                        *answer = Err(failed.clone());
                    }
                } else {
                    for acl in &valid {
                        tracing::info!(by = %context.principal, ?acl, "Created ACL");
                    }
                }
            }
            let results = answers
                .into_iter()
                .map(|answer| match answer {
                    Ok(_) => AclCreationResult::default(),
                    Err((code, reason)) => {
                        tracing::info!(code, %reason, "CreateAcls refused an entry");
                        AclCreationResult::default()
                            .with_error_code(code)
                            .with_error_message(message(reason))
                    }
                })
                .collect();
            context.respond(&CreateAclsResponse::default().with_results(results))
        })
    }
}

#[derive(Debug)]
pub struct DescribeAclsApi;

impl Api for DescribeAclsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeAcls
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeAclsRequest = context.decode(body)?;
            if let Some((code, reason)) = refusal(context, Operation::Describe) {
                return context.respond(
                    &DescribeAclsResponse::default()
                        .with_error_code(code)
                        .with_error_message(message(reason)),
                );
            }
            let filter = match AclFilter::from_request(
                request.resource_type_filter,
                request.resource_name_filter.as_deref(),
                request.pattern_type_filter,
                request.principal_filter.as_deref(),
                request.host_filter.as_deref(),
                request.operation,
                request.permission_type,
            ) {
                Ok(filter) => filter,
                Err(reason) => {
                    return context.respond(
                        &DescribeAclsResponse::default()
                            .with_error_code(errors::INVALID_REQUEST)
                            .with_error_message(message(reason)),
                    );
                }
            };
            let image = context.broker.controller.image();
            // Entries grouped by resource pattern, as Kafka answers.
            let mut resources: BTreeMap<(i8, &str, i8), Vec<AclDescription>> = BTreeMap::new();
            for acl in image.acls.iter().filter(|acl| filter.matches(acl)) {
                resources
                    .entry((
                        acl.resource_type.code(),
                        acl.resource_name.as_str(),
                        acl.pattern_type.code(),
                    ))
                    .or_default()
                    .push(
                        AclDescription::default()
                            .with_principal(StrBytes::from_string(acl.principal.clone()))
                            .with_host(StrBytes::from_string(acl.host.clone()))
                            .with_operation(acl.operation.code())
                            .with_permission_type(acl.permission.code()),
                    );
            }
            let resources = resources
                .into_iter()
                .map(|((resource_type, name, pattern_type), acls)| {
                    DescribeAclsResource::default()
                        .with_resource_type(resource_type)
                        .with_resource_name(StrBytes::from_string(name.to_string()))
                        .with_pattern_type(pattern_type)
                        .with_acls(acls)
                })
                .collect();
            context.respond(&DescribeAclsResponse::default().with_resources(resources))
        })
    }
}

#[derive(Debug)]
pub struct DeleteAclsApi;

impl Api for DeleteAclsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DeleteAcls
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DeleteAclsRequest = context.decode(body)?;
            let failed_result = |(code, reason): (i16, String)| {
                DeleteAclsFilterResult::default()
                    .with_error_code(code)
                    .with_error_message(message(reason))
            };
            if let Some(refused) = refusal(context, Operation::Alter) {
                let results = request
                    .filters
                    .iter()
                    .map(|_| failed_result(refused.clone()))
                    .collect();
                return context
                    .respond(&DeleteAclsResponse::default().with_filter_results(results));
            }
            let parsed: Vec<Result<AclFilter, String>> = request
                .filters
                .iter()
                .map(|f| {
                    AclFilter::from_request(
                        f.resource_type_filter,
                        f.resource_name_filter.as_deref(),
                        f.pattern_type_filter,
                        f.principal_filter.as_deref(),
                        f.host_filter.as_deref(),
                        f.operation,
                        f.permission_type,
                    )
                })
                .collect();
            let valid: Vec<AclFilter> = parsed.iter().filter_map(|p| p.clone().ok()).collect();
            let mut removed = match context.broker.controller.delete_acls(valid).await {
                Ok(removed) => Ok(removed.into_iter()),
                Err(error) => Err((errors::controller_error(&error), error.to_string())),
            };
            let results = parsed
                .into_iter()
                .map(|filter| match (filter, &mut removed) {
                    (Err(reason), _) => failed_result((errors::INVALID_REQUEST, reason)),
                    (Ok(_), Err(failed)) => failed_result(failed.clone()),
                    (Ok(_), Ok(removed)) => DeleteAclsFilterResult::default().with_matching_acls(
                        removed
                            .next()
                            .unwrap_or_default()
                            .into_iter()
                            .map(|acl| {
                                tracing::info!(by = %context.principal, ?acl, "Deleted ACL");
                                DeleteAclsMatchingAcl::default()
                                    .with_resource_type(acl.resource_type.code())
                                    .with_resource_name(StrBytes::from_string(acl.resource_name))
                                    .with_pattern_type(acl.pattern_type.code())
                                    .with_principal(StrBytes::from_string(acl.principal))
                                    .with_host(StrBytes::from_string(acl.host))
                                    .with_operation(acl.operation.code())
                                    .with_permission_type(acl.permission.code())
                            })
                            .collect(),
                    ),
                })
                .collect();
            context.respond(&DeleteAclsResponse::default().with_filter_results(results))
        })
    }
}
