//! AlterUserScramCredentials (`kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=…]'
//! --entity-type users`): the client sends a salt and the salted password; the broker
//! keeps only the derived StoredKey and ServerKey, in the metadata log, and answers per
//! user with Kafka's codes.

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
};
use kafka_protocol::protocol::StrBytes;

use super::{Api, HandlerFuture, RequestContext, errors};
use crate::controller::{ScramAlteration, users_in_order};
use crate::metadata::records::{ScramCredential, ScramMechanism};
use crate::security::acl::Operation;
use crate::security::credential_from_salted_password;

#[derive(Debug)]
pub struct AlterUserScramCredentialsApi;

impl Api for AlterUserScramCredentialsApi {
    fn key(&self) -> ApiKey {
        ApiKey::AlterUserScramCredentials
    }

    fn handle<'a>(&'a self, context: &'a RequestContext<'a>, body: Bytes) -> HandlerFuture<'a> {
        Box::pin(async move {
            let request: AlterUserScramCredentialsRequest = context.decode(body)?;
            let mut alterations = Vec::new();
            for deletion in &request.deletions {
                alterations.push(ScramAlteration::Delete {
                    user: deletion.name.to_string(),
                    mechanism: deletion.mechanism,
                });
            }
            for upsertion in &request.upsertions {
                let iterations = u32::try_from(upsertion.iterations).unwrap_or(0);
                // An unknown mechanism gets an empty credential: the controller refuses it
                // for that user (UNSUPPORTED_SASL_MECHANISM) before looking at it.
                let credential = match ScramMechanism::from_code(upsertion.mechanism) {
                    Some(mechanism) => credential_from_salted_password(
                        mechanism,
                        &upsertion.salted_password,
                        &upsertion.salt,
                        iterations,
                    ),
                    None => ScramCredential {
                        salt: Vec::new(),
                        stored_key: Vec::new(),
                        server_key: Vec::new(),
                        iterations,
                    },
                };
                alterations.push(ScramAlteration::Upsert {
                    user: upsertion.name.to_string(),
                    mechanism: upsertion.mechanism,
                    credential,
                });
            }
            // For a refusal of the whole request: every user gets its error.
            let users: Vec<String> = users_in_order(&alterations)
                .into_iter()
                .map(str::to_string)
                .collect();
            if !context.access().allows_cluster(Operation::Alter) {
                let message = format!("{} may not alter credentials", context.principal);
                let denied = Some((errors::CLUSTER_AUTHORIZATION_FAILED, message));
                let results = users
                    .into_iter()
                    .map(|user| result(user, denied.clone()))
                    .collect();
                return context
                    .respond(&AlterUserScramCredentialsResponse::default().with_results(results));
            }
            let results = match context
                .broker
                .controller
                .alter_scram_credentials(alterations)
                .await
            {
                Ok(answers) => answers
                    .into_iter()
                    .map(|(user, error)| {
                        if error.is_none() {
                            tracing::info!(user, "Altered SCRAM credentials");
                        }
                        result(
                            user,
                            error
                                .as_ref()
                                .map(|e| (errors::controller_error(e), e.to_string())),
                        )
                    })
                    .collect(),
                Err(error) => users
                    .into_iter()
                    .map(|user| {
                        result(
                            user,
                            Some((errors::controller_error(&error), error.to_string())),
                        )
                    })
                    .collect(),
            };
            context.respond(&AlterUserScramCredentialsResponse::default().with_results(results))
        })
    }
}

fn result(user: String, error: Option<(i16, String)>) -> AlterUserScramCredentialsResult {
    let (code, message) = error.map_or((0, None), |(code, message)| (code, Some(message)));
    AlterUserScramCredentialsResult::default()
        .with_user(StrBytes::from_string(user))
        .with_error_code(code)
        .with_error_message(message.map(StrBytes::from_string))
}
