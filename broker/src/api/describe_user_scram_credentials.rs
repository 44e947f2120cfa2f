//! DescribeUserScramCredentials (`kafka-configs --describe --entity-type users`): each
//! user's mechanisms and iteration counts, never a key; a user without credentials is
//! RESOURCE_NOT_FOUND, a user named twice DUPLICATE_RESOURCE, as Kafka answers.

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    ApiKey, DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::metadata::image::ClusterImage;
use crate::security::acl::Operation;

#[derive(Debug)]
pub struct DescribeUserScramCredentialsApi;

impl Api for DescribeUserScramCredentialsApi {
    fn key(&self) -> ApiKey {
        ApiKey::DescribeUserScramCredentials
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: DescribeUserScramCredentialsRequest = context.decode(body)?;
            let access = context.access();
            if !access.allows_cluster(Operation::Describe) {
                return context.respond(
                    &DescribeUserScramCredentialsResponse::default()
                        .with_error_code(errors::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(access.cluster_denied(Operation::Describe)),
                );
            }
            let image = context.broker.controller.image();
            let results = match request.users {
                // Null or empty: every user with a credential.
                None => image
                    .scram_credentials
                    .keys()
                    .map(|user| described(&image, user))
                    .collect(),
                Some(users) if users.is_empty() => image
                    .scram_credentials
                    .keys()
                    .map(|user| described(&image, user))
                    .collect(),
                Some(users) => {
                    let names: Vec<String> = users.iter().map(|u| u.name.to_string()).collect();
                    let mut results = Vec::new();
                    let mut answered: Vec<&str> = Vec::new();
                    for name in &names {
                        if answered.contains(&name.as_str()) {
                            continue;
                        }
                        answered.push(name);
                        if names.iter().filter(|n| *n == name).count() > 1 {
                            results.push(failed(
                                name,
                                ResponseError::DuplicateResource,
                                "Cannot describe SCRAM credentials for the same user twice in a single request",
                            ));
                        } else {
                            results.push(described(&image, name));
                        }
                    }
                    results
                }
            };
            context.respond(&DescribeUserScramCredentialsResponse::default().with_results(results))
        })
    }
}

fn described(image: &ClusterImage, user: &str) -> DescribeUserScramCredentialsResult {
    match image.scram_credentials.get(user) {
        Some(credentials) if !credentials.is_empty() => {
            DescribeUserScramCredentialsResult::default()
                .with_user(StrBytes::from_string(user.to_string()))
                .with_credential_infos(
                    credentials
                        .iter()
                        .map(|(mechanism, credential)| {
                            CredentialInfo::default()
                                .with_mechanism(mechanism.code())
                                .with_iterations(
                                    i32::try_from(credential.iterations).unwrap_or(i32::MAX),
                                )
                        })
                        .collect(),
                )
        }
        _ => failed(
            user,
            ResponseError::ResourceNotFound,
            "Attempt to describe a user credential that does not exist",
        ),
    }
}

fn failed(user: &str, error: ResponseError, message: &str) -> DescribeUserScramCredentialsResult {
    DescribeUserScramCredentialsResult::default()
        .with_user(StrBytes::from_string(user.to_string()))
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_string(format!("{message}: {user}"))))
}
