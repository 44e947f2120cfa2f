//! A broker's side of the quorum: it registers with the active controller, keeps its
//! session alive with heartbeats, and — when it is not a voter — follows the metadata log
//! by long-polling a voter (an observer, as KRaft calls it).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;

use super::Controller;
use super::decisions::{CommandOutcome, ControllerCommand, ControllerError};
use super::rpc::CommandReply;

/// How long one observer fetch may wait at the voter for new records.
const FETCH_WAIT: Duration = Duration::from_secs(1);
/// Pause between registration and heartbeat attempts until the broker is unfenced.
const STARTUP_RETRY: Duration = Duration::from_millis(50);
/// Pause after a failed fetch.
const FETCH_BACKOFF: Duration = Duration::from_millis(200);

impl Controller {
    /// A registration or heartbeat, on its own connection so metadata changes in
    /// flight never delay it.
    async fn heartbeat(
        &self,
        command: &ControllerCommand,
    ) -> Result<CommandReply, ControllerError> {
        let timeout = self.settings.session_timeout / 2;
        self.send(&self.heartbeat_client, command, timeout).await
    }

    /// Controlled shutdown: stops heartbeating, asks the controller to move this broker's
    /// leaderships to other in-sync replicas and take it out of every ISR, and waits
    /// until this broker has applied that (so it no longer leads anything).
    pub async fn controlled_shutdown(&self) -> Result<(), ControllerError> {
        self.heartbeats_stopped.store(true, Ordering::Relaxed);
        self.execute(ControllerCommand::ControlledShutdown {
            node_id: self.settings.node_id,
            incarnation: self.incarnation,
        })
        .await?;
        // The active controller about to stop: the other voters learn that the change is
        // committed only from its next heartbeat, so send one now and give it a moment,
        // rather than leaving them to find out after the next election.
        if let (Some(raft), Some(active)) = (&self.raft, &self.active)
            && active.is_leader()
        {
            if let Err(error) = raft.trigger().heartbeat().await {
                tracing::warn!(%error, "Cannot send a last heartbeat to the quorum");
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        Ok(())
    }

    pub fn heartbeats_stopped(&self) -> bool {
        self.heartbeats_stopped.load(Ordering::Relaxed)
    }
}

/// Registers and heartbeats until shutdown. `caught_up_target` receives the log index of
/// this broker's registration: once the broker has applied it, its image is as new as the
/// controller's was when it joined.
pub async fn run_broker(
    controller: Arc<Controller>,
    caught_up_target: watch::Sender<Option<u64>>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ControllerError> {
    let interval = controller.settings.heartbeat_interval;
    let mut registered = false;
    let mut last_error = String::new();
    // When the current run of failed heartbeats began, and how many it holds.
    let mut failing_since: Option<(std::time::Instant, u32)> = None;
    loop {
        if controller.heartbeats_stopped() {
            // Controlled shutdown: the session ends here, on purpose.
            tokio::select! {
                _ = tokio::time::sleep(interval) => continue,
                _ = shutdown.changed() => return Ok(()),
            }
        }
        let result = if registered {
            let command = ControllerCommand::BrokerHeartbeat {
                node_id: controller.settings.node_id,
                incarnation: controller.incarnation,
                applied_index: controller.feed.current().applied_index,
            };
            controller.heartbeat(&command).await.map(|reply| {
                if let CommandOutcome::Heartbeat { fenced } = reply.outcome {
                    controller.set_fenced(fenced);
                }
            })
        } else {
            let command = ControllerCommand::RegisterBroker {
                node_id: controller.settings.node_id,
                incarnation: controller.incarnation,
                endpoint: controller.settings.endpoint.clone(),
                rack: controller.settings.rack.clone(),
                listeners: controller.settings.listeners.clone(),
                supported_features: Some(crate::metadata::features::supported()),
            };
            controller.heartbeat(&command).await.map(|reply| {
                tracing::info!(
                    node_id = controller.settings.node_id,
                    index = reply.index,
                    "Registered with the active controller"
                );
                registered = true;
                caught_up_target.send_replace(Some(reply.index));
            })
        };
        let failed = result.is_err();
        match result {
            Ok(()) => {
                // One line when the run of failures ends, not one per failure.
                if let Some((since, count)) = failing_since.take() {
                    tracing::info!(
                        failures = count,
                        after_ms = since.elapsed().as_millis() as u64,
                        "Heartbeat to the controller answered again"
                    );
                }
                last_error.clear();
            }
            Err(ControllerError::UnknownBroker(_)) => {
                tracing::warn!(
                    "The controller does not know this broker's registration; registering again"
                );
                registered = false;
                controller.set_fenced(true);
            }
            Err(error @ ControllerError::Refused(_)) => {
                tracing::error!(%error, "The quorum refuses this broker");
                return Err(error);
            }
            Err(error) => {
                let text = error.to_string();
                if matches!(error, ControllerError::DuplicateBrokerRegistration { .. }) {
                    if text != last_error {
                        tracing::error!(%error, "Registration refused: another live broker uses this node.id");
                    }
                } else {
                    match &mut failing_since {
                        None => {
                            tracing::warn!(%error, registered, "Heartbeat to the controller failed; retrying");
                            failing_since = Some((std::time::Instant::now(), 1));
                        }
                        Some((_, count)) => {
                            *count += 1;
                            tracing::debug!(%error, registered, "Heartbeat to the controller failed again");
                        }
                    }
                }
                last_error = text;
            }
        }
        // Until registered and unfenced, try again soon: the broker is not serving yet.
        // A failed heartbeat is retried at once: the controller shortens the session of a
        // broker whose heartbeat connection closed.
        let pause = if registered
            && !failed
            && !controller.fenced.load(std::sync::atomic::Ordering::Relaxed)
        {
            interval
        } else {
            interval.min(STARTUP_RETRY)
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = shutdown.changed() => return Ok(()),
        }
    }
}

/// Follows the metadata log from the voters (brokers that are not voters).
pub async fn run_observer(
    controller: Arc<Controller>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), ControllerError> {
    let mut last_error = String::new();
    loop {
        let from = controller.feed.current().applied_index;
        let fetched = tokio::select! {
            fetched = controller.fetch_client.fetch_metadata(from, FETCH_WAIT) => fetched,
            _ = shutdown.changed() => return Ok(()),
        };
        match fetched {
            Ok((update, controller_id, voters)) => {
                controller.update_voters(&voters);
                controller.fetch_client.set_leader_hint(controller_id);
                controller.set_known_controller(controller_id);
                controller.feed.apply_update(update);
                last_error.clear();
            }
            Err(error @ ControllerError::Refused(_)) => return Err(error),
            Err(error) => {
                let text = error.to_string();
                if text != last_error {
                    tracing::warn!(%error, "Fetching metadata from the quorum failed");
                    last_error = text;
                }
                tokio::select! {
                    _ = tokio::time::sleep(FETCH_BACKOFF) => {}
                    _ = shutdown.changed() => return Ok(()),
                }
            }
        }
    }
}
