//! The entry points the controller runtime calls for every resource kind: one reconcile and
//! one error policy, generic over [`Reconciled`].
//!
//! ```text
//!   reconcile ─▶ finalizer ─┬─ Apply   ─▶ K::apply   ─┐
//!                           └─ Cleanup ─▶ K::cleanup ─┴─▶ reconciles metric (duration)
//!   error_policy ─▶ K::log_failure ─▶ errors metric (category) ─▶ back-off per object
//! ```
//!
//! The finalizer, the metrics and the back-off are the same for a Cluster, a Topic and a
//! User; what differs (the pipelines, their errors, the log line's field) is the trait.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{self, Event as FinalizerEvent};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::Context;

/// A resource kind the operator reconciles.
pub trait Reconciled:
    Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    /// The failed step of the kind's pipeline.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Controller name in metrics, logs and back-off keys.
    const CONTROLLER: &'static str;
    /// The finalizer that holds deletion until [`Reconciled::cleanup`] succeeded.
    const FINALIZER: &'static str;

    /// The pipeline of an object that exists (the finalizer is in place).
    fn apply(&self, ctx: &Context) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// The pipeline of an object being deleted.
    fn cleanup(&self, ctx: &Context) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// The error of an object without a namespace (nothing can be done with it).
    fn no_namespace() -> Self::Error;

    /// The error of a finalizer step (the add, the removal, or the pipeline inside).
    fn finalizer_failed(error: finalizer::Error<Self::Error>) -> Self::Error;

    /// Bounded label for the errors metric.
    fn category(error: &Self::Error) -> &'static str;

    /// The warning a failed reconcile logs; the kind's own field names the object.
    fn log_failure(&self, error: &Self::Error);
}

/// Entry point for the controller runtime.
pub async fn reconcile<K: Reconciled>(
    object: Arc<K>,
    ctx: Arc<Context>,
) -> Result<Action, K::Error> {
    let started = Instant::now();
    let namespace = object.namespace().ok_or_else(K::no_namespace)?;
    let api: Api<K> = Api::namespaced(ctx.client.clone(), &namespace);
    // The pipelines' futures hold tens of KB of Kubernetes objects: on the heap, every
    // future that awaits a reconcile stays small (a test awaiting many reconciles in debug
    // builds overflowed its thread's 2 MiB stack with them inline).
    let result = finalizer::finalizer(&api, K::FINALIZER, object, |event| async {
        match event {
            FinalizerEvent::Apply(object) => Box::pin(object.apply(&ctx)).await,
            FinalizerEvent::Cleanup(object) => Box::pin(object.cleanup(&ctx)).await,
        }
    })
    .await
    .map_err(K::finalizer_failed);
    ctx.metrics.reconciled(K::CONTROLLER, started.elapsed());
    result
}

/// Controller error policy: log the error, count it and back off.
pub fn error_policy<K: Reconciled>(object: Arc<K>, error: &K::Error, ctx: Arc<Context>) -> Action {
    object.log_failure(error);
    ctx.metrics.failed(K::CONTROLLER, K::category(error));
    ctx.backoff(&key(object.as_ref()))
}

/// The object's back-off key: its failures count until a reconcile of it succeeds
/// ([`Context::succeeded`]).
pub fn key<K: Reconciled>(object: &K) -> String {
    format!(
        "{}/{}/{}",
        K::CONTROLLER,
        object.namespace().unwrap_or_default(),
        object.name_any()
    )
}
