//! What a `User` becomes in the cluster: its SCRAM credentials (KIP-554), its ACLs and its
//! client quotas (KIP-546), through the Kafka admin API the brokers serve.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;

use bytes::Bytes;
use kafka_protocol::messages::alter_client_quotas_request::{
    AlterClientQuotasRequest, EntityData, EntryData, OpData,
};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    AlterUserScramCredentialsRequest, ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use kafka_protocol::messages::delete_acls_request::{DeleteAclsFilter, DeleteAclsRequest};
use kafka_protocol::messages::describe_acls_request::DescribeAclsRequest;
use kafka_protocol::messages::describe_client_quotas_request::{
    ComponentData, DescribeClientQuotasRequest,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::{
    DescribeUserScramCredentialsRequest, UserName,
};
use kafka_protocol::protocol::StrBytes;
use oxbow_kafka_client::ResponseError;
use ring::rand::{SecureRandom, SystemRandom};

use super::{AdminClient, AdminError, check};

/// Kafka's SCRAM mechanism numbers.
pub const SCRAM_SHA_256: i8 = 1;
pub const SCRAM_SHA_512: i8 = 2;
/// Iterations of a credential the operator sets (Kafka's minimum and the clients' default).
const SCRAM_ITERATIONS: u32 = 4096;
/// "any" in ACL filters.
const ANY: i8 = 1;
/// The quota keys a User manages.
pub const QUOTA_KEYS: [&str; 3] = [
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
];

/// One Kafka ACL of a principal, in the protocol's numbers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Acl {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

impl AdminClient {
    /// The SCRAM mechanisms `user` has a credential for.
    pub async fn scram_mechanisms(&mut self, user: &str) -> Result<BTreeSet<i8>, AdminError> {
        let request = DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
            UserName::default().with_name(StrBytes::from_string(user.to_string())),
        ]));
        let response = self.call(&request).await?;
        check(
            "DescribeUserScramCredentials",
            response.error_code,
            response.error_message.as_ref(),
        )?;
        let mut mechanisms = BTreeSet::new();
        for result in &response.results {
            if result.error_code == ResponseError::ResourceNotFound.code() {
                continue;
            }
            check(
                "DescribeUserScramCredentials",
                result.error_code,
                result.error_message.as_ref(),
            )?;
            mechanisms.extend(result.credential_infos.iter().map(|c| c.mechanism));
        }
        Ok(mechanisms)
    }

    /// Sets `user`'s credential of `mechanism` from `password` (salted here: the password
    /// never travels), and deletes its credentials of `remove`.
    pub async fn set_scram(
        &mut self,
        user: &str,
        mechanism: i8,
        password: &str,
        remove: &[i8],
    ) -> Result<(), AdminError> {
        let mut salt = [0u8; 32];
        SystemRandom::new()
            .fill(&mut salt)
            .map_err(|_| AdminError::Local("no randomness for a SCRAM salt".into()))?;
        let algorithm = if mechanism == SCRAM_SHA_512 {
            ring::pbkdf2::PBKDF2_HMAC_SHA512
        } else {
            ring::pbkdf2::PBKDF2_HMAC_SHA256
        };
        let mut salted = vec![0u8; if mechanism == SCRAM_SHA_512 { 64 } else { 32 }];
        let iterations = NonZeroU32::new(SCRAM_ITERATIONS).unwrap_or(NonZeroU32::MIN);
        ring::pbkdf2::derive(
            algorithm,
            iterations,
            &salt,
            password.as_bytes(),
            &mut salted,
        );
        let name = StrBytes::from_string(user.to_string());
        let request = AlterUserScramCredentialsRequest::default()
            .with_upsertions(vec![
                ScramCredentialUpsertion::default()
                    .with_name(name.clone())
                    .with_mechanism(mechanism)
                    .with_iterations(SCRAM_ITERATIONS as i32)
                    .with_salt(Bytes::copy_from_slice(&salt))
                    .with_salted_password(Bytes::from(salted)),
            ])
            .with_deletions(
                remove
                    .iter()
                    .map(|&m| {
                        ScramCredentialDeletion::default()
                            .with_name(name.clone())
                            .with_mechanism(m)
                    })
                    .collect(),
            );
        self.alter_scram(request).await
    }

    /// Deletes `user`'s credentials of `mechanisms`.
    pub async fn delete_scram(&mut self, user: &str, mechanisms: &[i8]) -> Result<(), AdminError> {
        if mechanisms.is_empty() {
            return Ok(());
        }
        let name = StrBytes::from_string(user.to_string());
        let request = AlterUserScramCredentialsRequest::default().with_deletions(
            mechanisms
                .iter()
                .map(|&m| {
                    ScramCredentialDeletion::default()
                        .with_name(name.clone())
                        .with_mechanism(m)
                })
                .collect(),
        );
        self.alter_scram(request).await
    }

    async fn alter_scram(
        &mut self,
        request: AlterUserScramCredentialsRequest,
    ) -> Result<(), AdminError> {
        let response = self.call(&request).await?;
        for result in &response.results {
            // A deletion of a credential that is already gone is what was wanted.
            if result.error_code == ResponseError::ResourceNotFound.code() {
                continue;
            }
            check(
                "AlterUserScramCredentials",
                result.error_code,
                result.error_message.as_ref(),
            )?;
        }
        Ok(())
    }

    /// Every ACL whose principal is `principal`, on any resource.
    pub async fn acls_of(&mut self, principal: &str) -> Result<BTreeSet<Acl>, AdminError> {
        let request = DescribeAclsRequest::default()
            .with_resource_type_filter(ANY)
            .with_resource_name_filter(None)
            .with_pattern_type_filter(ANY)
            .with_principal_filter(Some(StrBytes::from_string(principal.to_string())))
            .with_host_filter(None)
            .with_operation(ANY)
            .with_permission_type(ANY);
        let response = self.call(&request).await?;
        check(
            "DescribeAcls",
            response.error_code,
            response.error_message.as_ref(),
        )?;
        let mut acls = BTreeSet::new();
        for resource in &response.resources {
            for acl in resource
                .acls
                .iter()
                .filter(|a| a.principal.as_str() == principal)
            {
                acls.insert(Acl {
                    resource_type: resource.resource_type,
                    resource_name: resource.resource_name.to_string(),
                    pattern_type: resource.pattern_type,
                    host: acl.host.to_string(),
                    operation: acl.operation,
                    permission: acl.permission_type,
                });
            }
        }
        Ok(acls)
    }

    /// Creates `acls` for `principal` in one request.
    pub async fn create_acls(&mut self, principal: &str, acls: &[Acl]) -> Result<(), AdminError> {
        if acls.is_empty() {
            return Ok(());
        }
        let request = CreateAclsRequest::default().with_creations(
            acls.iter()
                .map(|acl| {
                    AclCreation::default()
                        .with_resource_type(acl.resource_type)
                        .with_resource_name(StrBytes::from_string(acl.resource_name.clone()))
                        .with_resource_pattern_type(acl.pattern_type)
                        .with_principal(StrBytes::from_string(principal.to_string()))
                        .with_host(StrBytes::from_string(acl.host.clone()))
                        .with_operation(acl.operation)
                        .with_permission_type(acl.permission)
                })
                .collect(),
        );
        let response = self.call(&request).await?;
        for result in &response.results {
            check(
                "CreateAcls",
                result.error_code,
                result.error_message.as_ref(),
            )?;
        }
        Ok(())
    }

    /// Deletes exactly `acls` of `principal` (each filter matches one ACL).
    pub async fn delete_acls(&mut self, principal: &str, acls: &[Acl]) -> Result<(), AdminError> {
        if acls.is_empty() {
            return Ok(());
        }
        let request = DeleteAclsRequest::default().with_filters(
            acls.iter()
                .map(|acl| {
                    DeleteAclsFilter::default()
                        .with_resource_type_filter(acl.resource_type)
                        .with_resource_name_filter(Some(StrBytes::from_string(
                            acl.resource_name.clone(),
                        )))
                        .with_pattern_type_filter(acl.pattern_type)
                        .with_principal_filter(Some(StrBytes::from_string(principal.to_string())))
                        .with_host_filter(Some(StrBytes::from_string(acl.host.clone())))
                        .with_operation(acl.operation)
                        .with_permission_type(acl.permission)
                })
                .collect(),
        );
        let response = self.call(&request).await?;
        for result in &response.filter_results {
            check(
                "DeleteAcls",
                result.error_code,
                result.error_message.as_ref(),
            )?;
        }
        Ok(())
    }

    /// The client quotas set for exactly the entity `user=<user>`.
    pub async fn user_quotas(&mut self, user: &str) -> Result<BTreeMap<String, f64>, AdminError> {
        let request = DescribeClientQuotasRequest::default()
            .with_components(vec![
                ComponentData::default()
                    .with_entity_type(StrBytes::from_static_str("user"))
                    .with_match_type(0)
                    .with_match(Some(StrBytes::from_string(user.to_string()))),
            ])
            .with_strict(true);
        let response = self.call(&request).await?;
        check(
            "DescribeClientQuotas",
            response.error_code,
            response.error_message.as_ref(),
        )?;
        let mut quotas = BTreeMap::new();
        for entry in response.entries.iter().flatten() {
            let is_user = entry.entity.len() == 1
                && entry.entity[0].entity_type.as_str() == "user"
                && entry.entity[0].entity_name.as_deref() == Some(user);
            if is_user {
                quotas.extend(entry.values.iter().map(|v| (v.key.to_string(), v.value)));
            }
        }
        Ok(quotas)
    }

    /// Sets `set` and removes `remove` among `user`'s quotas.
    pub async fn alter_user_quotas(
        &mut self,
        user: &str,
        set: &BTreeMap<String, f64>,
        remove: &[String],
    ) -> Result<(), AdminError> {
        let ops: Vec<OpData> = set
            .iter()
            .map(|(key, value)| {
                OpData::default()
                    .with_key(StrBytes::from_string(key.clone()))
                    .with_value(*value)
            })
            .chain(remove.iter().map(|key| {
                OpData::default()
                    .with_key(StrBytes::from_string(key.clone()))
                    .with_remove(true)
            }))
            .collect();
        if ops.is_empty() {
            return Ok(());
        }
        let request = AlterClientQuotasRequest::default().with_entries(vec![
            EntryData::default()
                .with_entity(vec![
                    EntityData::default()
                        .with_entity_type(StrBytes::from_static_str("user"))
                        .with_entity_name(Some(StrBytes::from_string(user.to_string()))),
                ])
                .with_ops(ops),
        ]);
        let response = self.call(&request).await?;
        for entry in &response.entries {
            check(
                "AlterClientQuotas",
                entry.error_code,
                entry.error_message.as_ref(),
            )?;
        }
        Ok(())
    }
}
