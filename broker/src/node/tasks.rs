//! The node's background duties and its stop: ISR proposals to the controller, the
//! inter-broker credential, periodic log maintenance, controlled shutdown.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::controller::{Controller, ControllerError};
use crate::replication::{IsrProposal, ReplicaManager};

/// Creates the SCRAM credential the brokers authenticate to each other with when the user
/// has none (Kafka writes it at format time with `kafka-storage --add-scram`; here the
/// quorum, which brokers reach without SASL, takes it). A credential set since, by any
/// broker or an admin, is left alone.
pub(super) async fn ensure_inter_broker_credential(
    controller: Arc<Controller>,
    sasl: crate::config::InterBrokerSasl,
    mut shutdown: watch::Receiver<bool>,
) {
    use crate::controller::ScramAlteration;
    use crate::metadata::records::ScramMechanism;
    use crate::security::SaslMechanism;
    // PLAIN is checked against the SCRAM-SHA-512 credential.
    let mechanism = match sasl.mechanism {
        SaslMechanism::Scram(mechanism) => mechanism,
        _ => ScramMechanism::Sha512,
    };
    loop {
        if controller
            .image()
            .scram_credential(&sasl.username, mechanism)
            .is_some()
        {
            return;
        }
        let salt = uuid::Uuid::new_v4().simple().to_string().into_bytes();
        let alteration = ScramAlteration::Upsert {
            user: sasl.username.clone(),
            mechanism: mechanism.code(),
            credential: crate::security::credential_from_password(
                mechanism,
                &sasl.password,
                &salt,
                8192,
            ),
        };
        match controller.alter_scram_credentials(vec![alteration]).await {
            Ok(results) if results.iter().all(|(_, error)| error.is_none()) => {
                tracing::info!(user = %sasl.username, mechanism = ?mechanism, "Created the inter-broker SCRAM credential (the user had none)");
                return;
            }
            Ok(results) => {
                tracing::warn!(user = %sasl.username, ?results, "Cannot create the inter-broker SCRAM credential; retrying");
            }
            Err(error) => {
                tracing::warn!(user = %sasl.username, %error, "Cannot create the inter-broker SCRAM credential yet; retrying");
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = shutdown.wait_for(|down| *down) => return,
        }
    }
}

/// Why a controller task ended (none ends while the node runs).
pub(super) fn task_end(
    ended: Result<Result<(), ControllerError>, tokio::task::JoinError>,
) -> String {
    match ended {
        Ok(Ok(())) => "a controller task ended".to_string(),
        Ok(Err(error)) => error.to_string(),
        Err(error) => format!("a controller task failed: {error}"),
    }
}

/// Moves this broker's leaderships away before it stops (when another broker can take
/// them), so a rolling restart takes no partition offline.
pub(super) async fn controlled_shutdown(controller: &Controller) {
    let node_id = controller.node_id();
    let others_live = controller
        .image()
        .live_brokers()
        .any(|b| b.node_id != node_id);
    if !others_live {
        return;
    }
    let started = std::time::Instant::now();
    match tokio::time::timeout(Duration::from_secs(10), controller.controlled_shutdown()).await {
        Ok(Ok(())) => {
            tracing::info!(elapsed = ?started.elapsed(), "Controlled shutdown: leaderships moved")
        }
        Ok(Err(error)) => tracing::warn!(%error, "Controlled shutdown failed; stopping anyway"),
        Err(_) => tracing::warn!("Controlled shutdown timed out; stopping anyway"),
    }
}

/// Sends the ISR changes this broker's leaders propose to the controller.
pub(super) async fn send_isr_proposals(
    mut proposals: tokio::sync::mpsc::UnboundedReceiver<IsrProposal>,
    controller: Arc<Controller>,
    replicas: Arc<ReplicaManager>,
) {
    while let Some(proposal) = proposals.recv().await {
        let controller = Arc::clone(&controller);
        let replicas = Arc::clone(&replicas);
        tokio::spawn(async move {
            let grows = replicas
                .partition(&proposal.topic_partition)
                .is_some_and(|p| p.role().in_sync_replicas.len() < proposal.in_sync_replicas.len());
            let result = controller.alter_partition(&proposal).await;
            if result.is_ok() {
                if grows {
                    replicas.metrics.isr_expands.inc();
                } else {
                    replicas.metrics.isr_shrinks.inc();
                }
            }
            if let Err(error) = result {
                tracing::info!(topic_partition = %proposal.topic_partition, isr = ?proposal.in_sync_replicas, %error, "The controller did not take an ISR change");
                if let Some(partition) = replicas.partition(&proposal.topic_partition) {
                    partition.proposal_failed(proposal.partition_epoch, replicas.now_ms());
                }
            }
        });
    }
}

/// Runs the blocking `work` every `interval_ms` (at least 100 ms) on the blocking pool,
/// off the request path: retention and flushes, the log cleaner.
pub(super) async fn every(
    interval_ms: u64,
    mut shutdown: watch::Receiver<bool>,
    work: impl Fn() + Send + Sync + 'static,
) {
    let work = Arc::new(work);
    let mut ticker = tokio::time::interval(Duration::from_millis(interval_ms.max(100)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                let work = Arc::clone(&work);
                if let Err(error) = tokio::task::spawn_blocking(move || work()).await {
                    tracing::error!(%error, "Log maintenance task failed");
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}
