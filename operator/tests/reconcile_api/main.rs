//! The operator's reconcilers driven against a real Kubernetes API server (the testbed of
//! `e2e/k8s`: real kube-apiserver, controller manager and scheduler; kwok nodes), with the
//! brokers replaced by a fake Kafka cluster (`fake_kafka.rs`) that records every admin call.
//!
//! The test calls `controller::reconcile` for the Cluster and the Topic directly, the way
//! the controller runtime does, and checks each step of the pipelines as the API server and
//! the fake see it: finalizer, owned objects (owner references, spec from the CR), status
//! conditions and observedGeneration, events, idempotence (no resourceVersion moves on a
//! second reconcile), spec changes reaching the owned objects, the roll of outdated brokers
//! one at a time, the roll gate closed while partitions are under-replicated, topic
//! creation/growth/config/deletion reaching the cluster, and deletion (finalizers, garbage
//! collection). `upgrade.rs`: a version change rolled, then the feature levels finalized,
//! held, refused, and a release below them refused.
//!
//! Nothing runs the brokers' processes: the real StatefulSet controller creates the pods,
//! the real scheduler places them, kwok marks them Running, and the test stands in for the
//! kubelet's readiness report when nothing else gives it (see `make_ready`).
//!
//! Needs `KUBECONFIG`: `e2e/suites/75-operator-reconcile.sh` starts the testbed and runs
//! these ignored tests with `--ignored`. Run without an API server they fail, never pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bed;
mod checks;
mod fake_kafka;
mod upgrade;

use std::collections::BTreeMap;

use fake_kafka::{Call, FakeKafka};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, Service};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use oxbow_operator::crd::{Cluster, TOPIC_FINALIZER, Topic};
use serde_json::json;

use bed::*;
use checks::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kubernetes API server (KUBECONFIG); run by e2e/suites/75-operator-reconcile.sh"]
async fn reconcile_healthy_cluster_and_topic() {
    let fake = FakeKafka::start(&[(0, "zone-a"), (1, "zone-b"), (2, "zone-c")]).await;
    let bed = setup("oxbow-reconcile-healthy", fake).await;
    create_ready_cluster(&bed).await;

    // --- Topic: created in the cluster, as the spec says -------------------------------
    let topic: Topic = serde_json::from_value(json!({
        "apiVersion": "oxbow.dev/v1alpha1",
        "kind": "Topic",
        "metadata": { "name": TOPIC, "namespace": bed.namespace },
        "spec": {
            "cluster": CLUSTER,
            "partitions": 6,
            "replicationFactor": 3,
            "config": { "retention.ms": 86400000, "cleanup.policy": "delete" },
        },
    }))
    .unwrap();
    bed.api::<Topic>()
        .create(&PostParams::default(), &topic)
        .await
        .unwrap();
    bed.reconcile_topic().await;
    let topic = bed.api::<Topic>().get(TOPIC).await.unwrap();
    assert!(
        topic.finalizers().iter().any(|f| f == TOPIC_FINALIZER),
        "the first Topic reconcile adds the finalizer"
    );
    bed.reconcile_topic().await;
    let calls = bed.fake.take_calls();
    let described = Call::Metadata {
        topics: Some(vec![TOPIC.to_string()]),
    };
    assert_eq!(calls.first(), Some(&described), "describe first: {calls:?}");
    assert_eq!(
        calls.last(),
        Some(&described),
        "describe again for status: {calls:?}"
    );
    let created: Vec<&Call> = calls.iter().filter(|c| c.mutates()).collect();
    assert_eq!(created.len(), 1, "one CreateTopics: {calls:?}");
    let Call::CreateTopics {
        name,
        assignment,
        configs,
        ..
    } = created[0]
    else {
        panic!("expected CreateTopics, got {created:?}");
    };
    assert_eq!(name, TOPIC);
    assert_eq!(
        configs,
        &BTreeMap::from([
            ("cleanup.policy".to_string(), "delete".to_string()),
            ("retention.ms".to_string(), "86400000".to_string()),
        ])
    );
    // Rack-aware: 6 partitions, each on 3 distinct brokers, one per zone.
    assert_eq!(assignment.len(), 6, "{assignment:?}");
    for replicas in assignment {
        let mut sorted = replicas.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2], "{assignment:?}");
    }
    let topic = bed.api::<Topic>().get(TOPIC).await.unwrap();
    let status = topic.status.clone().unwrap();
    assert_eq!(status.observed_generation, topic.metadata.generation);
    let ready = condition(&status.conditions, "Ready");
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Ready")
    );
    assert_eq!(status.partitions, Some(6));
    assert_eq!(status.replication_factor, Some(3));
    assert!(
        status
            .topic_id
            .as_deref()
            .is_some_and(|id| id.starts_with("0b0b")),
        "topic id from the cluster: {:?}",
        status.topic_id
    );

    // Idempotent: only questions, no change, no status write.
    let version = topic.resource_version();
    bed.reconcile_topic().await;
    let calls = bed.fake.take_calls();
    assert!(
        calls.iter().all(|c| !c.mutates()),
        "an unchanged Topic changed the cluster: {calls:?}"
    );
    assert!(
        calls.contains(&Call::DescribeConfigs {
            name: TOPIC.to_string()
        }),
        "configs are checked against the cluster (drift): {calls:?}"
    );
    assert_eq!(
        bed.api::<Topic>()
            .get(TOPIC)
            .await
            .unwrap()
            .resource_version(),
        version,
        "an unchanged Topic's status was rewritten"
    );

    // A spec change: more partitions and a changed config reach the cluster.
    bed.api::<Topic>()
        .patch(
            TOPIC,
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "partitions": 8, "config": { "retention.ms": 3600000 } } }),
            ),
        )
        .await
        .unwrap();
    bed.reconcile_topic().await;
    let mutations: Vec<Call> = bed
        .fake
        .take_calls()
        .into_iter()
        .filter(Call::mutates)
        .collect();
    assert_eq!(
        mutations,
        vec![
            Call::CreatePartitions {
                name: TOPIC.to_string(),
                count: 8
            },
            Call::AlterConfigs {
                name: TOPIC.to_string(),
                set: BTreeMap::from([("retention.ms".to_string(), "3600000".to_string())]),
                delete: vec![],
            },
        ]
    );
    let (partitions, configs) = bed.fake.topic(TOPIC).unwrap();
    assert_eq!(partitions, 8);
    assert_eq!(configs["retention.ms"], "3600000");
    let topic = bed.api::<Topic>().get(TOPIC).await.unwrap();
    let status = topic.status.clone().unwrap();
    assert_eq!(status.observed_generation, topic.metadata.generation);
    assert_eq!(status.partitions, Some(8));

    // Deletion: the finalizer deletes the Kafka topic, then lets the Topic go.
    bed.api::<Topic>()
        .delete(TOPIC, &DeleteParams::default())
        .await
        .unwrap();
    bed.reconcile_topic().await;
    assert_eq!(
        bed.fake.take_calls(),
        vec![Call::DeleteTopics {
            names: vec![TOPIC.to_string()]
        }]
    );
    assert!(bed.fake.topic(TOPIC).is_none());
    assert!(
        bed.api::<Topic>().get_opt(TOPIC).await.unwrap().is_none(),
        "the finalizer was released"
    );

    // --- Cluster: a broker config change rolls the brokers, one at a time ---------------
    bed.fake
        .seed_topic("payments", vec![vec![0, 1, 2], vec![1, 2, 0]]);
    let original = bed.pod_uids().await;
    let revision = change_broker_config(&bed, 5).await;
    // Highest ordinal first; each restart waits for the previous broker to be back.
    for pod in ["events-2", "events-1", "events-0"] {
        bed.make_ready(3).await;
        let before = bed.pod_uids().await;
        // The reconcile of the change itself may have restarted events-2 already, if the
        // StatefulSet controller had the new revision out by then.
        if before.get(pod) == original.get(pod) {
            bed.reconcile_cluster().await;
            let restarted = bed.restarted_since(&before).await;
            assert_eq!(restarted, vec![pod], "restarted by one reconcile");
            assert_eq!(
                gate_questions(&bed.fake.take_calls()),
                1,
                "the roll gate asked the brokers before restarting {pod}"
            );
            bed.make_ready(3).await;
        }
        let recreated = &bed.pods().await[pod];
        assert_eq!(
            recreated.labels().get("controller-revision-hash"),
            Some(&revision),
            "{pod} recreated on the new revision"
        );
    }
    assert_eq!(bed.events("RollingBroker").await, 3, "RollingBroker events");
    bed.wait_stateful_set_observed(3).await;
    bed.reconcile_cluster().await;
    assert_ready(&bed, 3).await;
    assert_idempotent(&bed).await;

    // --- Cluster deletion: finalizer removes the rack binding; GC the owned objects -----
    bed.api::<Cluster>()
        .delete(CLUSTER, &DeleteParams::default())
        .await
        .unwrap();
    bed.reconcile_cluster().await;
    assert!(
        ClusterRoleBindings::get(&bed.client, &bed.namespace)
            .await
            .is_none(),
        "the finalizer deleted the rack ClusterRoleBinding"
    );
    assert!(
        bed.api::<Cluster>()
            .get_opt(CLUSTER)
            .await
            .unwrap()
            .is_none(),
        "the finalizer was released"
    );
    wait_for(
        "the garbage collector to delete the StatefulSet",
        || async {
            bed.api::<StatefulSet>()
                .get_opt(CLUSTER)
                .await
                .unwrap()
                .is_none()
        },
    )
    .await;
    cleanup(&bed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kubernetes API server (KUBECONFIG); run by e2e/suites/75-operator-reconcile.sh"]
async fn reconcile_waits_to_roll_while_partitions_are_under_replicated() {
    let fake = FakeKafka::start(&[(0, "zone-a"), (1, "zone-b"), (2, "zone-c")]).await;
    let bed = setup("oxbow-reconcile-under-replicated", fake).await;
    create_ready_cluster(&bed).await;

    // Broker 2 stops fetching: both partitions of a topic on it are under-replicated.
    bed.fake
        .seed_topic("payments", vec![vec![0, 1, 2], vec![2, 0, 1]]);
    bed.fake.fall_behind(Some(2));
    change_broker_config(&bed, 7).await;
    let uids = bed.pod_uids().await;
    for attempt in 0..2 {
        bed.reconcile_cluster().await;
        assert_eq!(
            bed.restarted_since(&uids).await,
            Vec::<String>::new(),
            "a broker was restarted while partitions are under-replicated (reconcile {attempt})"
        );
        assert_eq!(
            gate_questions(&bed.fake.take_calls()),
            1,
            "the roll gate asked the brokers"
        );
        let cluster = assert_status_observed(&bed).await;
        let status = cluster.status.unwrap();
        let ready = condition(&status.conditions, "Ready");
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "Rolling")
        );
        assert_eq!(
            ready.message,
            "restart of events-2 waits: 2 partition(s) are under-replicated (a restarted broker is still catching up)"
        );
        assert!(
            status.brokers.iter().all(|b| b.state == "Outdated"),
            "{:?}",
            status.brokers
        );
    }
    assert_eq!(bed.events("RollingBroker").await, 0, "RollingBroker events");

    // In sync again: the gate opens and the roll starts with the highest ordinal.
    bed.fake.fall_behind(None);
    bed.reconcile_cluster().await;
    assert_eq!(
        bed.restarted_since(&uids).await,
        vec!["events-2"],
        "the gate opened: events-2 restarted, the others left alone"
    );
    assert_eq!(gate_questions(&bed.fake.take_calls()), 1);

    // --- Scale: replicas reach the StatefulSet, the per-broker config and status --------
    bed.make_ready(3).await;
    bed.patch_cluster(json!({ "spec": { "replicas": 4 } }))
        .await;
    bed.reconcile_cluster().await;
    assert_owned_objects(&bed, 4, "7").await;
    assert_status_observed(&bed).await;
    assert_eq!(bed.events("Scaled").await, 1, "Scaled event");

    // --- Optional objects: an external listener adds per-broker Services, removing it
    // deletes them (orphans); a ServiceMonitor without the Prometheus Operator's CRD
    // (the testbed has none) degrades the Cluster instead of failing the reconcile.
    bed.patch_cluster(json!({ "spec": {
        "listeners": { "external": { "type": "LoadBalancer" } },
        "metrics": { "serviceMonitor": true },
    } }))
    .await;
    bed.reconcile_cluster().await;
    let cluster = bed.cluster().await;
    let external: Vec<String> = (0..4).map(|i| format!("events-{i}-external")).collect();
    assert_eq!(bed.external_services().await, external);
    for name in &external {
        let service = bed.api::<Service>().get(name).await.unwrap();
        assert_owned("Service", &service.metadata, &cluster);
        assert_eq!(
            service.spec.and_then(|s| s.type_).as_deref(),
            Some("LoadBalancer")
        );
    }
    let status = assert_status_observed(&bed).await.status.unwrap();
    let degraded = condition(&status.conditions, "Degraded");
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "ServiceMonitorUnavailable"),
        "{degraded:?}"
    );

    bed.patch_cluster(json!({ "spec": {
        "listeners": { "external": null },
        "metrics": { "serviceMonitor": false },
    } }))
    .await;
    bed.reconcile_cluster().await;
    assert_eq!(
        bed.external_services().await,
        Vec::<String>::new(),
        "external Services of a removed listener are deleted"
    );
    let status = assert_status_observed(&bed).await.status.unwrap();
    assert_eq!(condition(&status.conditions, "Degraded").status, "False");
    assert_owned_objects(&bed, 4, "7").await;
    cleanup(&bed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a Kubernetes API server (KUBECONFIG); run by e2e/suites/75-operator-reconcile.sh"]
async fn reconcile_secured_cluster_issues_and_mounts_certificates() {
    use k8s_openapi::api::core::v1::Secret;
    use oxbow_operator::cluster::{certificate_secrets, certificates, names::Names};
    let fake = FakeKafka::start(&[(0, "zone-a"), (1, "zone-b"), (2, "zone-c")]).await;
    let bed = setup("oxbow-reconcile-secured", fake).await;
    bed.create_cluster().await;
    bed.patch_cluster(json!({ "spec": { "listeners": { "tls": true } } }))
        .await;
    bed.reconcile_cluster().await;
    bed.reconcile_cluster().await;
    let names = Names::new(CLUSTER, &bed.namespace);
    let broker_certs: Secret = bed
        .owned(&certificate_secrets::broker_certs_secret(&names))
        .await;
    let data = certificate_secrets::text_data(&broker_certs);
    for ordinal in 0..3 {
        let store = &data[&format!("{}.pem", names.pod(ordinal))];
        let sans = certificates::read(store).unwrap().sans;
        assert!(sans.contains(&names.pod_dns(ordinal)), "{sans:?}");
    }
    let cluster_ca: Secret = bed
        .owned(&certificate_secrets::cluster_ca_secret(&names))
        .await;
    let ca_key = &certificate_secrets::text_data(&cluster_ca)[certificate_secrets::CA_KEY];
    assert!(
        data.values().all(|v| !v.contains(ca_key.as_str())),
        "no CA key reaches the brokers"
    );
    let _: Secret = bed
        .owned(&certificate_secrets::clients_ca_secret(&names))
        .await;
    let _: Secret = bed
        .owned(&certificate_secrets::operator_cert_secret(&names))
        .await;
    // The pods mount the brokers' Secret and the broker files configure the listeners.
    let stateful_set: StatefulSet = bed.owned(CLUSTER).await;
    let pod = stateful_set.spec.unwrap().template.spec.unwrap();
    assert!(
        pod.volumes.unwrap().iter().any(|v| v
            .secret
            .as_ref()
            .is_some_and(|s| s.secret_name.as_deref()
                == Some(certificate_secrets::broker_certs_secret(&names).as_str()))),
        "no certs volume"
    );
    assert_eq!(bed.events("CertificatesIssued").await, 1, "one issue event");
    // Nothing is issued again while nothing is due.
    let before = certificate_secrets::text_data(&broker_certs);
    bed.reconcile_cluster().await;
    let again: Secret = bed
        .owned(&certificate_secrets::broker_certs_secret(&names))
        .await;
    assert_eq!(certificate_secrets::text_data(&again), before);
    assert_eq!(
        again.metadata.resource_version,
        broker_certs.metadata.resource_version
    );
    cleanup(&bed).await;
}

/// Deletes the scenario's namespace and rack binding (the testbed goes anyway; an
/// external cluster keeps nothing).
async fn cleanup(bed: &Bed) {
    release_finalizers(&bed.client, &bed.namespace).await;
    let namespaces: Api<Namespace> = Api::all(bed.client.clone());
    let _ = namespaces
        .delete(&bed.namespace, &DeleteParams::default())
        .await;
    let _ = ClusterRoleBindings::delete(&bed.client, &bed.namespace).await;
}
