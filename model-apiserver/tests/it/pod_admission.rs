//! kube-apiserver's Pod admission plugins (`ServerConfig::pod_admission_plugins`):
//! `ServiceAccount`, `Priority` and `DefaultTolerationSeconds`, with what each adds to a created
//! Pod, its exceptions and its refusals in upstream's words; and nothing of it with the flag off.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;

use common::*;
use kube_core::DynamicObject;
use model_apiserver::ServerConfig;
use serde_json::{Value, json};

const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn service_accounts() -> kube_core::ApiResource {
    builtin("", "serviceaccounts")
}

fn priority_classes() -> kube_core::ApiResource {
    builtin("scheduling.k8s.io", "priorityclasses")
}

/// A server with the plugins on, the two system PriorityClasses its bootstrap stores, and the
/// `default` ServiceAccount of `default` that kube-controller-manager would create.
fn with_plugins() -> World {
    let mut w = World::with_config(ServerConfig { pod_admission_plugins: true, ..ServerConfig::default() });
    for (name, value) in
        [("system-node-critical", 2_000_001_000_i64), ("system-cluster-critical", 2_000_000_000)]
    {
        w.create(&priority_classes(), None, class(name, value, json!({})));
    }
    w.create(&service_accounts(), Some("default"), account("default", json!({})));
    w
}

fn class(name: &str, value: i64, more: Value) -> Value {
    let mut body = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": value});
    merge(&mut body, more);
    body
}

fn account(name: &str, more: Value) -> Value {
    let mut body = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}});
    merge(&mut body, more);
    body
}

/// A Pod with one container `c`, and `spec` merged into its spec.
fn pod(name: &str, spec: Value) -> Value {
    let mut body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    merge(&mut body["spec"], spec);
    body
}

fn merge(into: &mut Value, more: Value) {
    if let (Some(into), Value::Object(more)) = (into.as_object_mut(), more) {
        into.extend(more);
    }
}

fn spec(pod: &DynamicObject) -> &Value {
    &pod.data["spec"]
}

/// The name of the Pod's token volume (the one projecting a service account token).
fn token_volume(pod: &DynamicObject) -> String {
    let volumes = spec(pod)["volumes"].as_array().expect("the pod has volumes");
    let token = volumes.iter().find(|v| v.pointer("/projected/sources/0/serviceAccountToken").is_some());
    token.expect("a token volume")["name"].as_str().unwrap().to_owned()
}

fn the_two_tolerations() -> Value {
    json!([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
    ])
}

#[test]
fn a_created_pod_gets_the_default_account_its_token_volume_priority_and_tolerations_and_nothing_else() {
    let mut plain = World::new();
    let mut w = with_plugins();
    let body = pod("p", json!({"initContainers": [{"name": "init", "image": "i"}]}));
    let without = plain.create(&pods(), Some("default"), body.clone());
    let with = w.create(&pods(), Some("default"), body);

    let volume = token_volume(&with);
    let suffix = volume.strip_prefix("kube-api-access-").expect("upstream's prefix");
    assert_eq!(suffix.len(), 5, "{volume}");
    assert!(suffix.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)), "{volume}");
    let mount = json!({"name": volume, "readOnly": true, "mountPath": MOUNT_PATH});
    let mut expected = spec(&without).clone();
    expected["serviceAccountName"] = json!("default");
    expected["volumes"] = json!([{"name": volume, "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [
                {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}},
            ]}},
        ],
    }}]);
    expected["containers"][0]["volumeMounts"] = json!([mount]);
    expected["initContainers"][0]["volumeMounts"] = json!([mount]);
    expected["priority"] = json!(0);
    expected["preemptionPolicy"] = json!("PreemptLowerPriority");
    expected["tolerations"] = the_two_tolerations();
    assert_eq!(spec(&with), &expected);
    // The same pod read back is what the create answered.
    assert_eq!(w.get(&pods(), Some("default"), "p").data, with.data);
}

#[test]
fn the_token_volume_suffix_is_drawn_from_the_request_ids_so_it_replays() {
    let names = || {
        let mut w = with_plugins();
        (0..3)
            .map(|i| token_volume(&w.create(&pods(), Some("default"), pod(&format!("p{i}"), json!({})))))
            .collect::<Vec<_>>()
    };
    let first = names();
    assert_eq!(first, names(), "the same ids give the same names");
    assert_ne!(first[0], first[1], "each pod draws its own");
}

#[test]
fn a_pod_whose_account_is_missing_is_refused_as_upstream_refuses_it() {
    let mut w = with_plugins();
    let err =
        w.try_create(&pods(), Some("default"), pod("p", json!({"serviceAccountName": "robot"}))).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "pods \"p\" is forbidden: error looking up service account default/robot: serviceaccount \"robot\" not found"
    );
    // Admission runs before the storage generates a name: the refusal names the prefix.
    let mut generated = pod("", json!({"serviceAccountName": "robot"}));
    generated["metadata"] = json!({"generateName": "web-"});
    let err = w.try_create(&pods(), Some("default"), generated).unwrap_err();
    assert!(err.message.starts_with("pods \"web-\" is forbidden: error looking up"), "{}", err.message);
    // Once the account exists, the Pod is admitted with it.
    w.create(&service_accounts(), Some("default"), account("robot", json!({})));
    let admitted = w.create(&pods(), Some("default"), pod("p", json!({"serviceAccountName": "robot"})));
    assert_eq!(spec(&admitted)["serviceAccountName"], "robot");
}

#[test]
fn a_missing_default_account_is_taken_as_the_one_upstreams_wait_would_find() {
    let mut w = with_plugins();
    // kube-public has no `default` account yet: upstream would wait for kube-controller-manager to
    // make it, a bare account, and mount its token.
    let p = w.create(&pods(), Some("kube-public"), pod("p", json!({})));
    assert_eq!(spec(&p)["serviceAccountName"], "default");
    token_volume(&p);
    assert!(spec(&p).get("imagePullSecrets").is_none());
    // Named explicitly, the same missing account is no different.
    let q = w.create(&pods(), Some("kube-public"), pod("q", json!({"serviceAccountName": "default"})));
    assert_eq!(spec(&q)["serviceAccountName"], "default");
}

#[test]
fn automount_false_on_the_pod_or_its_account_mounts_no_token_and_the_pods_choice_wins() {
    let mut w = with_plugins();
    let opted_out =
        w.create(&pods(), Some("default"), pod("a", json!({"automountServiceAccountToken": false})));
    assert!(spec(&opted_out).get("volumes").is_none());
    assert!(spec(&opted_out)["containers"][0].get("volumeMounts").is_none());
    assert_eq!(spec(&opted_out)["serviceAccountName"], "default", "the account is set all the same");

    w.create(
        &service_accounts(),
        Some("default"),
        account("quiet", json!({"automountServiceAccountToken": false})),
    );
    let quiet = w.create(&pods(), Some("default"), pod("b", json!({"serviceAccountName": "quiet"})));
    assert!(spec(&quiet).get("volumes").is_none());
    let wants = json!({"serviceAccountName": "quiet", "automountServiceAccountToken": true});
    let mounted = w.create(&pods(), Some("default"), pod("c", wants));
    token_volume(&mounted);
}

#[test]
fn a_container_with_its_own_mount_at_the_path_and_an_existing_token_volume_are_kept() {
    let mut w = with_plugins();
    // Every container has something at the path already: no volume is added.
    let own = json!({"containers": [{"name": "c", "image": "i",
        "volumeMounts": [{"name": "mine", "mountPath": MOUNT_PATH}]}],
        "volumes": [{"name": "mine", "emptyDir": {}}]});
    let kept = w.create(&pods(), Some("default"), pod("a", own));
    assert_eq!(spec(&kept)["volumes"].as_array().unwrap().len(), 1);
    assert_eq!(spec(&kept)["containers"][0]["volumeMounts"].as_array().unwrap().len(), 1);
    // A volume named kube-api-access-... is the token volume: mounted, not added again.
    let existing = json!({"volumes": [{"name": "kube-api-access-mine", "emptyDir": {}}]});
    let reused = w.create(&pods(), Some("default"), pod("b", existing));
    assert_eq!(spec(&reused)["volumes"], json!([{"name": "kube-api-access-mine", "emptyDir": {}}]));
    assert_eq!(
        spec(&reused)["containers"][0]["volumeMounts"],
        json!([{"name": "kube-api-access-mine", "readOnly": true, "mountPath": MOUNT_PATH}])
    );
}

#[test]
fn a_pod_without_image_pull_secrets_gets_its_accounts() {
    let mut w = with_plugins();
    let secrets = json!({"imagePullSecrets": [{"name": "registry"}]});
    w.create(&service_accounts(), Some("default"), account("puller", secrets));
    let given = w.create(&pods(), Some("default"), pod("a", json!({"serviceAccountName": "puller"})));
    assert_eq!(spec(&given)["imagePullSecrets"], json!([{"name": "registry"}]));
    let own = json!({"serviceAccountName": "puller", "imagePullSecrets": [{"name": "mine"}]});
    let kept = w.create(&pods(), Some("default"), pod("b", own));
    assert_eq!(spec(&kept)["imagePullSecrets"], json!([{"name": "mine"}]));
}

#[test]
fn an_account_that_enforces_mountable_secrets_refuses_a_secret_it_does_not_list() {
    let mut w = with_plugins();
    let strict = json!({"metadata": {"name": "strict",
        "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}}, "secrets": [{"name": "ok"}]});
    w.create(&service_accounts(), Some("default"), account("strict", strict));
    let volume = |secret: &str| json!({"serviceAccountName": "strict", "volumes": [{"name": "s", "secret": {"secretName": secret}}]});
    w.create(&pods(), Some("default"), pod("a", volume("ok")));
    let err = w.try_create(&pods(), Some("default"), pod("b", volume("other"))).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "pods \"b\" is forbidden: volume with secret.secretName=\"other\" is not allowed because service \
         account strict does not reference that secret"
    );
    let env = json!({"serviceAccountName": "strict", "containers": [{"name": "c", "image": "i",
        "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}]});
    let err = w.try_create(&pods(), Some("default"), pod("c", env)).unwrap_err();
    assert_eq!(
        err.message,
        "pods \"c\" is forbidden: container c with envVar X referencing secret.secretName=\"other\" is not \
         allowed because service account strict does not reference that secret"
    );
}

#[test]
fn a_mirror_pod_is_not_changed_by_the_account_plugin_and_may_not_name_an_account_or_a_secret() {
    let mut w = with_plugins();
    let mirror = |name: &str, spec: Value| {
        let mut body = pod(name, spec);
        body["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
        body
    };
    let admitted = w.create(&pods(), Some("default"), mirror("a", json!({})));
    assert!(spec(&admitted).get("serviceAccountName").is_none());
    assert!(spec(&admitted).get("volumes").is_none());
    // The other plugins still act on it.
    assert_eq!(spec(&admitted)["tolerations"], the_two_tolerations());
    assert_eq!(spec(&admitted)["priority"], 0);
    for (body, why) in [
        (
            mirror("b", json!({"serviceAccountName": "default"})),
            "a mirror pod may not reference service accounts",
        ),
        (
            mirror("c", json!({"volumes": [{"name": "s", "secret": {"secretName": "x"}}]})),
            "a mirror pod may not reference secrets",
        ),
    ] {
        let err = w.try_create(&pods(), Some("default"), body).unwrap_err();
        assert_eq!(code_reason(&err), (403, "Forbidden"));
        assert!(err.message.ends_with(why), "{}", err.message);
    }
}

#[test]
fn a_priority_class_resolves_to_its_value_and_preemption_policy() {
    let mut w = with_plugins();
    let critical =
        w.create(&pods(), Some("default"), pod("a", json!({"priorityClassName": "system-node-critical"})));
    assert_eq!(spec(&critical)["priority"], 2_000_001_000);
    assert_eq!(spec(&critical)["preemptionPolicy"], "PreemptLowerPriority");
    w.create(&priority_classes(), None, class("batch", 10, json!({"preemptionPolicy": "Never"})));
    let batch = w.create(&pods(), Some("default"), pod("b", json!({"priorityClassName": "batch"})));
    assert_eq!(spec(&batch)["priority"], 10);
    assert_eq!(spec(&batch)["preemptionPolicy"], "Never");
    assert_eq!(spec(&batch)["priorityClassName"], "batch");
}

#[test]
fn an_unknown_priority_class_is_refused_with_upstreams_403() {
    let mut w = with_plugins();
    let err =
        w.try_create(&pods(), Some("default"), pod("x", json!({"priorityClassName": "y"}))).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(err.message, "pods \"x\" is forbidden: no PriorityClass with name y was found");
}

#[test]
fn a_pod_may_set_only_the_priority_and_policy_its_class_gives() {
    let mut w = with_plugins();
    let err = w.try_create(&pods(), Some("default"), pod("a", json!({"priority": 5}))).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "pods \"a\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority \
         admission controller computed 0 from the given PriorityClass name"
    );
    w.create(&priority_classes(), None, class("batch", 10, json!({"preemptionPolicy": "Never"})));
    let policy = json!({"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"});
    let err = w.try_create(&pods(), Some("default"), pod("b", policy)).unwrap_err();
    assert_eq!(
        err.message,
        "pods \"b\" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be \
         provided in pod spec; priority admission controller computed Never from the given PriorityClass name"
    );
    // The values the class gives pass, as a controller copying a stored Pod's spec sends them.
    let same = json!({"priorityClassName": "batch", "priority": 10, "preemptionPolicy": "Never"});
    w.create(&pods(), Some("default"), pod("c", same));
}

#[test]
fn a_global_default_class_is_given_to_pods_without_one_and_only_one_may_exist() {
    let mut w = with_plugins();
    w.create(&priority_classes(), None, class("normal", 100, json!({"globalDefault": true})));
    let p = w.create(&pods(), Some("default"), pod("a", json!({})));
    assert_eq!(spec(&p)["priorityClassName"], "normal");
    assert_eq!(spec(&p)["priority"], 100);
    assert_eq!(spec(&p)["preemptionPolicy"], "PreemptLowerPriority");

    let err = w
        .try_create(&priority_classes(), None, class("other", 5, json!({"globalDefault": true})))
        .unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "priorityclasses.scheduling.k8s.io \"other\" is forbidden: PriorityClass normal is already marked as \
         default. Only one default can exist"
    );
    // Updating the default class itself is no second default.
    w.try_merge(&priority_classes(), None, "normal", json!({"description": "d"})).unwrap();
    w.create(&priority_classes(), None, class("other", 5, json!({})));
    let err = w.try_merge(&priority_classes(), None, "other", json!({"globalDefault": true})).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
}

#[test]
fn a_pod_that_tolerates_a_taint_already_keeps_its_own_toleration() {
    let mut w = with_plugins();
    let own = json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"});
    let p = w.create(&pods(), Some("default"), pod("a", json!({"tolerations": [own]})));
    let unreachable = &the_two_tolerations()[1];
    assert_eq!(spec(&p)["tolerations"], json!([own, unreachable]));
    // An empty key and effect tolerate everything: nothing is added.
    let all = json!({"operator": "Exists"});
    let p = w.create(&pods(), Some("default"), pod("b", json!({"tolerations": [all]})));
    assert_eq!(spec(&p)["tolerations"], json!([all]));
    // Another effect does not count.
    let no_schedule =
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"});
    let p = w.create(&pods(), Some("default"), pod("c", json!({"tolerations": [no_schedule]})));
    assert_eq!(spec(&p)["tolerations"].as_array().unwrap().len(), 3);
}

#[test]
fn an_update_that_omits_the_admitted_priority_and_tolerations_keeps_them() {
    let mut w = with_plugins();
    w.create(&priority_classes(), None, class("batch", 10, json!({"preemptionPolicy": "Never"})));
    let created = w.create(&pods(), Some("default"), pod("a", json!({"priorityClassName": "batch"})));
    // A client that rebuilds the pod from what it sent at first, with a new label.
    let mut rebuilt: DynamicObject = (*created).clone();
    for field in ["priority", "preemptionPolicy", "tolerations"] {
        rebuilt.data["spec"].as_object_mut().unwrap().remove(field);
    }
    rebuilt.metadata.labels = Some([("new".to_owned(), "label".to_owned())].into());
    let updated = w.try_update(&pods(), Some("default"), rebuilt).unwrap();
    assert_eq!(spec(&updated), spec(&created));
    assert_eq!(updated.metadata.labels.as_ref().unwrap()["new"], "label");
}

#[test]
fn without_the_flag_a_pod_gets_none_of_it_and_names_any_class_or_account() {
    let mut w = World::new();
    let body = pod("p", json!({"serviceAccountName": "robot", "priorityClassName": "missing"}));
    let p: Arc<DynamicObject> = w.create(&pods(), Some("default"), body);
    for field in ["volumes", "priority", "preemptionPolicy", "tolerations"] {
        assert!(spec(&p).get(field).is_none(), "{field}: {}", spec(&p));
    }
    assert!(spec(&p)["containers"][0].get("volumeMounts").is_none());
    let bare = w.create(&pods(), Some("default"), pod("q", json!({})));
    assert!(spec(&bare).get("serviceAccountName").is_none());
    // Two default classes are no refusal either.
    w.create(&priority_classes(), None, class("a", 1, json!({"globalDefault": true})));
    w.create(&priority_classes(), None, class("b", 2, json!({"globalDefault": true})));
}
