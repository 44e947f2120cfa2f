//! Changing the number of controller voters (`spec.controllerVoters`) with KIP-853.
//!
//! ```text
//!   grow (3 -> 5):   broker 3 restarts with the controller role (its config file has it),
//!                    joins as an observer  -> AddRaftVoter(3) -> same for 4
//!   shrink (5 -> 3): RemoveRaftVoter(4) -> RemoveRaftVoter(3) -> brokers 4, 3 restart
//!                    as brokers only (their files no longer give them the role)
//! ```
//!
//! One step per reconcile, decided from what the brokers report (the voters, from
//! DescribeQuorum; each broker's running `process.roles`, from DescribeConfigs), so an
//! operator restarted at any point goes on from where the quorum is. Restarts wait for the
//! roll gate like a roll's. The voters are the lowest ordinals, as the config files say.

use std::collections::{BTreeMap, BTreeSet};

use crate::admin::{AdminClient, AdminError};

/// What the brokers report about the quorum.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuorumView {
    pub voters: BTreeSet<i32>,
    pub leader: Option<i32>,
    /// Brokers running with the controller role.
    pub controllers: BTreeSet<i32>,
}

/// The next step towards `controllerVoters` voters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuorumStep {
    /// The voters are as asked and every broker runs with the role its file gives it.
    Done,
    /// Restart this broker: it runs with a controller role its file no longer (or not yet)
    /// matches.
    Restart(i32),
    /// Make this broker (running with the controller role) a voter.
    Add(i32),
    /// Stop this broker voting.
    Remove(i32),
}

/// The voters `controllerVoters` asks for: the lowest ordinals.
pub fn wanted(controller_voters: i32) -> BTreeSet<i32> {
    (0..controller_voters.max(0)).collect()
}

/// The next step from `view` towards the voters `wanted` among `brokers`.
pub fn decide(view: &QuorumView, wanted: &BTreeSet<i32>, brokers: &BTreeSet<i32>) -> QuorumStep {
    // Fewer voters: the highest go first, while they still run the controller role.
    if let Some(leaving) = view.voters.difference(wanted).max() {
        return QuorumStep::Remove(*leaving);
    }
    if let Some(joining) = wanted.difference(&view.voters).min() {
        return if view.controllers.contains(joining) {
            QuorumStep::Add(*joining)
        } else {
            QuorumStep::Restart(*joining)
        };
    }
    brokers
        .iter()
        .rev()
        .find(|b| view.controllers.contains(b) != wanted.contains(b))
        .map_or(QuorumStep::Done, |b| QuorumStep::Restart(*b))
}

/// A sentence for the status: what `step` does.
pub fn describe(step: &QuorumStep, view: &QuorumView, desired: usize) -> Option<String> {
    let voters = view
        .voters
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    match step {
        QuorumStep::Done => None,
        QuorumStep::Add(id) => Some(format!(
            "adding broker {id} to the controller voters ({voters}; {desired} asked)"
        )),
        QuorumStep::Remove(id) => Some(format!(
            "removing broker {id} from the controller voters ({voters}; {desired} asked)"
        )),
        QuorumStep::Restart(id) if view.controllers.contains(id) => Some(format!(
            "restarting broker {id} without the controller role (voters {voters})"
        )),
        QuorumStep::Restart(id) => Some(format!(
            "restarting broker {id} with the controller role before it becomes a voter (voters {voters}; {desired} asked)"
        )),
    }
}

/// Reads the quorum: the voters from any broker, each broker's roles from itself.
pub async fn observe(
    any: &[String],
    own_addresses: &BTreeMap<i32, String>,
    brokers: &BTreeSet<i32>,
    wanted: &BTreeSet<i32>,
) -> Result<QuorumView, AdminError> {
    let (mut admin, _) = crate::bootstrap::connect(any).await?;
    let state = admin.quorum().await?;
    let mut controllers = BTreeSet::new();
    for broker in brokers {
        let Some(address) = own_addresses.get(broker) else {
            // A broker's roles are asked of it alone; without its address (an override
            // reaches only the bootstrap), take the role its file gives it, so nothing is
            // restarted on a guess.
            if wanted.contains(broker) || state.voters.contains(broker) {
                controllers.insert(*broker);
            }
            continue;
        };
        let mut own = AdminClient::connect_within(address, OWN_CONNECT_TIMEOUT).await?;
        let roles = own.process_roles(*broker).await?;
        if roles.split(',').any(|r| r.trim() == "controller") {
            controllers.insert(*broker);
        }
    }
    Ok(QuorumView {
        voters: state.voters,
        leader: state.leader,
        controllers,
    })
}

/// How long a broker's own address may take to connect.
const OWN_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

#[cfg(test)]
mod tests {
    use super::*;

    fn view(voters: &[i32], controllers: &[i32]) -> QuorumView {
        QuorumView {
            voters: voters.iter().copied().collect(),
            leader: voters.first().copied(),
            controllers: controllers.iter().copied().collect(),
        }
    }

    #[test]
    fn growing_restarts_each_new_voter_with_the_role_then_adds_it() {
        let brokers: BTreeSet<i32> = (0..5).collect();
        assert_eq!(
            decide(&view(&[0, 1, 2], &[0, 1, 2]), &wanted(5), &brokers),
            QuorumStep::Restart(3)
        );
        assert_eq!(
            decide(&view(&[0, 1, 2], &[0, 1, 2, 3]), &wanted(5), &brokers),
            QuorumStep::Add(3)
        );
        assert_eq!(
            decide(&view(&[0, 1, 2, 3], &[0, 1, 2, 3]), &wanted(5), &brokers),
            QuorumStep::Restart(4)
        );
        assert_eq!(
            decide(&view(&[0, 1, 2, 3], &[0, 1, 2, 3, 4]), &wanted(5), &brokers),
            QuorumStep::Add(4)
        );
        let done = view(&[0, 1, 2, 3, 4], &[0, 1, 2, 3, 4]);
        assert_eq!(decide(&done, &wanted(5), &brokers), QuorumStep::Done);
        assert_eq!(describe(&QuorumStep::Done, &done, 5), None);
    }

    #[test]
    fn shrinking_removes_the_highest_voters_then_restarts_them_without_the_role() {
        let brokers: BTreeSet<i32> = (0..5).collect();
        let all = [0, 1, 2, 3, 4];
        assert_eq!(
            decide(&view(&all, &all), &wanted(3), &brokers),
            QuorumStep::Remove(4)
        );
        assert_eq!(
            decide(&view(&[0, 1, 2, 3], &all), &wanted(3), &brokers),
            QuorumStep::Remove(3)
        );
        assert_eq!(
            decide(&view(&[0, 1, 2], &all), &wanted(3), &brokers),
            QuorumStep::Restart(4)
        );
        assert_eq!(
            decide(&view(&[0, 1, 2], &[0, 1, 2, 3]), &wanted(3), &brokers),
            QuorumStep::Restart(3)
        );
        assert_eq!(
            decide(&view(&[0, 1, 2], &[0, 1, 2]), &wanted(3), &brokers),
            QuorumStep::Done
        );
        let message = describe(&QuorumStep::Restart(4), &view(&[0, 1, 2], &all), 3).unwrap();
        assert!(message.contains("without the controller role"), "{message}");
    }

    #[test]
    fn a_change_back_midway_goes_straight_to_the_new_count() {
        // 3 -> 5 asked, broker 3 added, then 3 asked again: 3 is removed, 4 never added.
        let brokers: BTreeSet<i32> = (0..5).collect();
        assert_eq!(
            decide(&view(&[0, 1, 2, 3], &[0, 1, 2, 3, 4]), &wanted(3), &brokers),
            QuorumStep::Remove(3)
        );
    }
}
