use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetSpec, StatefulSetStatus};
use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::cluster::observe::RollCheck;
use crate::cluster::roll::RollGate;
use crate::cluster::tests::{cluster, settings};
use crate::crd::{ScalingPhase, ScalingStatus};

fn pod(ordinal: i32, revision: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("events-{ordinal}")),
            labels: Some(BTreeMap::from([(
                "controller-revision-hash".into(),
                revision.into(),
            )])),
            ..ObjectMeta::default()
        },
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
        ..Pod::default()
    }
}

/// A StatefulSet of `replicas` on revision v2 whose claims were made at `claim_size`, and
/// its ready pods on the given revisions.
fn brokers(replicas: i32, claim_size: &str, revisions: &[&str]) -> Observed {
    let mut stateful_set = build::build(
        &cluster(&format!(
            "replicas: {replicas}\nstorage:\n  size: {claim_size}"
        )),
        &settings(),
    )
    .unwrap()
    .stateful_set;
    stateful_set.status = Some(StatefulSetStatus {
        replicas,
        update_revision: Some("v2".into()),
        ..StatefulSetStatus::default()
    });
    Observed {
        stateful_set: Some(stateful_set),
        pods: (0..)
            .zip(revisions)
            .map(|(ordinal, revision)| pod(ordinal, revision))
            .collect(),
        node_labels: BTreeMap::new(),
    }
}

fn steady(keep: i32) -> scale::Outcome {
    scale::Outcome {
        keep,
        status: None,
        event: None,
    }
}

fn plan_of(cluster: &Cluster, observation: Observation) -> Plan {
    let validated = build::validate(cluster).unwrap();
    plan(cluster, &validated, &settings(), observation)
}

fn replicas_of(set: &StatefulSet) -> Option<i32> {
    set.spec.as_ref().and_then(|s: &StatefulSetSpec| s.replicas)
}

fn claim_size(set: &StatefulSet) -> String {
    let template = &set
        .spec
        .as_ref()
        .unwrap()
        .volume_claim_templates
        .as_ref()
        .unwrap()[0];
    let requests = template.spec.as_ref().unwrap().resources.as_ref().unwrap();
    requests.requests.as_ref().unwrap()["storage"].0.clone()
}

#[test]
fn a_draining_scale_in_keeps_the_leaving_brokers_objects() {
    let cluster = cluster("replicas: 3\nlisteners:\n  external: {type: LoadBalancer}");
    let draining = scale::Outcome {
        keep: 5,
        status: Some(ScalingStatus {
            from: 5,
            to: 3,
            phase: ScalingPhase::Draining,
            message: "Moving replicas off brokers 3-4".into(),
            progress: None,
        }),
        event: None,
    };
    let plan = plan_of(
        &cluster,
        Observation {
            brokers: brokers(5, "10Gi", &["v2"; 5]),
            scaling: draining,
            roll: None,
            features: None,
        },
    );
    // What a Cluster of five brokers is built into, built once.
    let mut five = cluster.clone();
    five.spec.replicas = 5;
    let expected = build::build(&five, &settings()).unwrap();
    assert_eq!(replicas_of(&plan.desired.stateful_set), Some(5));
    assert_eq!(plan.desired.config_map, expected.config_map);
    assert_eq!(plan.desired.external_services, expected.external_services);
    assert_eq!(plan.desired.stateful_set, expected.stateful_set);
    assert_eq!(plan.announcement, None);
    assert!(!plan.change_voters, "no voter change while a scale runs");
}

#[test]
fn a_drained_scale_in_shrinks_the_stateful_set_and_says_so() {
    let plan = plan_of(
        &cluster("replicas: 3"),
        Observation {
            brokers: brokers(5, "10Gi", &["v2"; 5]),
            scaling: steady(3),
            roll: None,
            features: None,
        },
    );
    assert_eq!(replicas_of(&plan.desired.stateful_set), Some(3));
    assert_eq!(
        plan.announcement,
        Some((
            "Scaled",
            "Scale",
            "Scaling the StatefulSet from 5 to 3 brokers".to_string()
        ))
    );
}

#[test]
fn a_new_cluster_is_announced_and_claims_keep_the_size_they_were_made_with() {
    let cluster = cluster("replicas: 3\nstorage:\n  size: 50Gi");
    let fresh = plan_of(
        &cluster,
        Observation {
            brokers: Observed::default(),
            scaling: steady(3),
            roll: None,
            features: None,
        },
    );
    assert_eq!(
        fresh.announcement,
        Some(("Created", "Create", "Created 3 brokers".to_string()))
    );
    assert_eq!(claim_size(&fresh.desired.stateful_set), "50Gi");
    let existing = plan_of(
        &cluster,
        Observation {
            brokers: brokers(3, "10Gi", &["v2"; 3]),
            scaling: steady(3),
            roll: None,
            features: None,
        },
    );
    assert_eq!(existing.announcement, None);
    assert_eq!(claim_size(&existing.desired.stateful_set), "10Gi");
}

#[test]
fn an_outdated_broker_restarts_through_an_open_gate_the_active_controller_last() {
    let observation = |gate| Observation {
        brokers: brokers(3, "10Gi", &["v2", "v1", "v1"]),
        scaling: steady(3),
        roll: Some(RollCheck {
            gate,
            active_controller_pod: Some("events-2".into()),
        }),
        features: None,
    };
    let cluster = cluster("replicas: 3");
    let open = plan_of(&cluster, observation(RollGate::Open));
    assert_eq!(open.roll, Roll::Restart("events-1".into()));
    assert!(!open.change_voters, "no voter change while a roll runs");
    let closed = plan_of(&cluster, observation(RollGate::UnderReplicated(2)));
    let Roll::Waits(message) = &closed.roll else {
        panic!("the roll should wait, not {:?}", closed.roll);
    };
    assert!(
        message.starts_with("restart of events-1 waits: "),
        "{message}"
    );
    assert!(!closed.change_voters);
}

#[test]
fn a_release_of_another_node_protocol_is_not_rolled_onto_one_broker_at_a_time() {
    let observation = |versions: [&str; 3]| {
        let mut brokers = brokers(3, "10Gi", &["v1", "v1", "v1"]);
        for (pod, version) in brokers.pods.iter_mut().zip(versions) {
            pod.metadata
                .labels
                .get_or_insert_with(BTreeMap::new)
                .insert(upgrade::VERSION_LABEL.into(), version.into());
        }
        Observation {
            brokers,
            scaling: steady(3),
            roll: Some(RollCheck {
                gate: RollGate::Open,
                active_controller_pod: Some("events-2".into()),
            }),
            features: None,
        }
    };
    // 0.1.0 talks JSON between nodes, 0.2.0 the versioned protocol: a lone 0.2.0 broker
    // could not join, so nothing restarts and the message says how to upgrade.
    let cluster = cluster("replicas: 3\nversion: 0.2.0");
    let plan = plan_of(&cluster, observation(["0.1.0", "0.1.0", "0.1.0"]));
    let Roll::Waits(message) = &plan.roll else {
        panic!("the roll should wait, not {:?}", plan.roll);
    };
    assert!(
        message.contains("release 0.1.0 cannot roll to 0.2.0")
            && message.contains("delete every broker pod at once"),
        "{message}"
    );
    // Between releases of one protocol the roll goes on.
    let plan = plan_of(&cluster, observation(["0.2.0", "0.2.0", "0.2.0"]));
    assert!(matches!(plan.roll, Roll::Restart(_)), "{:?}", plan.roll);
    assert_eq!(
        upgrade::offline_upgrade("0.2.0", "0.2.0"),
        None,
        "one protocol"
    );
    assert_eq!(
        upgrade::offline_upgrade("0.1.0", "9.9.9"),
        None,
        "unknown release"
    );
}

#[test]
fn a_settled_cluster_may_change_its_voters() {
    let settled = plan_of(
        &cluster("replicas: 3"),
        Observation {
            brokers: brokers(3, "10Gi", &["v2"; 3]),
            scaling: steady(3),
            roll: None,
            features: None,
        },
    );
    assert_eq!(settled.roll, Roll::Nothing);
    assert!(settled.change_voters);
    let starting = plan_of(
        &cluster("replicas: 3"),
        Observation {
            brokers: brokers(3, "10Gi", &["v2"; 2]),
            scaling: steady(3),
            roll: None,
            features: None,
        },
    );
    assert!(!starting.change_voters, "a broker is missing");
}
