//! kube-apiserver's `PodSecurity` admission plugin (with `ServerConfig::pod_admission_plugins`):
//! a namespace's `pod-security.kubernetes.io/*` labels refuse the Pods that violate its
//! `enforce` level, warn about Pods and Pod templates that violate its `warn` level, are
//! validated themselves, and warn about the Pods already there when `enforce` tightens; every
//! answer in kube-apiserver's words.
// The helpers answer what ApiServer::handle answers: a Status error.
#![allow(clippy::result_large_err)]

#[path = "common/mod.rs"]
mod common;

use common::*;
use kube_core::params::{Patch, PatchParams, PostParams};
use model_apiserver::{Context, Request, Response, ServerConfig};
use std::collections::BTreeMap;

use model_apiserver::admission::pod_security::{
    Level, LevelVersion, PodView, Policy, Version, evaluate, forbidden_detail,
};
use serde_json::{Map, Value, json};

const RESTRICTED_NGINX: &str = r#"violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#;

fn with_plugins() -> World {
    World::with_config(ServerConfig { pod_admission_plugins: true, ..ServerConfig::default() })
}

/// Handle `request` and return the answer with the warnings it earned.
fn handle_warned(w: &mut World, request: Request) -> (Result<Response, kube_core::Status>, Vec<String>) {
    let mut ctx = Context::new(w.now, &mut w.ids);
    let answer = w.server.handle(request, &mut ctx);
    (answer, ctx.take_warnings())
}

fn create_warned(
    w: &mut World,
    ar: &kube_core::ApiResource,
    ns: &str,
    body: Value,
) -> (Result<Response, kube_core::Status>, Vec<String>) {
    handle_warned(w, Request::create(ar, Some(ns), obj(body), PostParams::default()))
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

fn nginx(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}})
}

/// A Pod that passes the restricted level.
fn hardened(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
    "spec": {
        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "app", "image": "app:1", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
    }})
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}})
}

#[test]
fn a_pod_that_violates_the_enforced_level_is_refused_and_a_hardened_one_admitted() {
    let mut w = with_plugins();
    w.create(
        &namespaces(),
        None,
        namespace("secure", json!({"pod-security.kubernetes.io/enforce": "restricted"})),
    );
    let (answer, warnings) = create_warned(&mut w, &pods(), "secure", nginx("web"));
    let err = answer.unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert_eq!(err.message, format!(r#"pods "web" is forbidden: {RESTRICTED_NGINX}"#));
    assert!(warnings.is_empty(), "a refused Pod earns no warning: {warnings:?}");
    assert!(w.try_get(&pods(), Some("secure"), "web").is_err(), "nothing stored");
    // A dry run is refused the same way.
    let dry = PostParams { dry_run: true, ..PostParams::default() };
    let err = w.handle(Request::create(&pods(), Some("secure"), obj(nginx("web")), dry)).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    // The hardened Pod passes, without a warning.
    let (answer, warnings) = create_warned(&mut w, &pods(), "secure", hardened("app"));
    assert!(answer.is_ok(), "{answer:?}");
    assert!(warnings.is_empty(), "{warnings:?}");
    // An unlabelled namespace is privileged: anything goes.
    let privileged = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root"},
        "spec": {"hostNetwork": true, "containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}});
    let (answer, warnings) = create_warned(&mut w, &pods(), "default", privileged);
    assert!(answer.is_ok() && warnings.is_empty(), "{answer:?} {warnings:?}");
}

#[test]
fn without_the_pod_plugins_the_labels_limit_nothing() {
    let mut w = World::new();
    w.create(
        &namespaces(),
        None,
        namespace("secure", json!({"pod-security.kubernetes.io/enforce": "restricted"})),
    );
    let (answer, warnings) = create_warned(&mut w, &pods(), "secure", nginx("web"));
    assert!(answer.is_ok() && warnings.is_empty(), "{answer:?} {warnings:?}");
    w.create(&namespaces(), None, namespace("odd", json!({"pod-security.kubernetes.io/enforce": "strict"})));
}

#[test]
fn the_warn_level_warns_about_pods_and_pod_templates_and_the_enforce_level_names_its_version() {
    let mut w = with_plugins();
    w.create(
        &namespaces(),
        None,
        namespace(
            "team",
            json!({"pod-security.kubernetes.io/enforce": "baseline",
                   "pod-security.kubernetes.io/enforce-version": "v1.25",
                   "pod-security.kubernetes.io/warn": "restricted"}),
        ),
    );
    let (answer, warnings) = create_warned(&mut w, &pods(), "team", nginx("web"));
    assert!(answer.is_ok(), "baseline admits a plain nginx: {answer:?}");
    assert_eq!(warnings, [RESTRICTED_NGINX.replacen("violates", "would violate", 1)]);
    // A privileged container breaks the enforced baseline, at the version the label names.
    let mut root = nginx("root");
    root["spec"]["containers"][0]["securityContext"] = json!({"privileged": true});
    let err = w.try_create(&pods(), Some("team"), root).unwrap_err();
    assert_eq!(
        err.message,
        r#"pods "root" is forbidden: violates PodSecurity "baseline:v1.25": privileged (container "nginx" must not set securityContext.privileged=true)"#
    );
    // The controllers are warned about, never refused.
    let (answer, warnings) = create_warned(&mut w, &deployments(), "team", deployment("web"));
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(warnings, [RESTRICTED_NGINX.replacen("violates", "would violate", 1)]);
    let cronjob = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "backup"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "hostPID": true,
            "containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}}});
    let (answer, warnings) = create_warned(&mut w, &builtin("batch", "cronjobs"), "team", cronjob);
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with(r#"would violate PodSecurity "restricted:latest": host namespaces (hostPID=true), allowPrivilegeEscalation != false"#),
        "{warnings:?}"
    );
    // A write of a subresource (`/scale`) is not evaluated; one of the Deployment itself is.
    let patch = |replicas: i64| {
        Request::patch(
            &deployments(),
            Some("team"),
            "web",
            Patch::Merge(json!({"spec": {"replicas": replicas}})),
            PatchParams::default(),
        )
    };
    let (answer, warnings) =
        handle_warned(&mut w, patch(3).with_subresource(model_apiserver::Subresource::Scale));
    assert!(answer.is_ok() && warnings.is_empty(), "{answer:?} {warnings:?}");
    let (answer, warnings) = handle_warned(&mut w, patch(4));
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
}

#[test]
fn a_namespace_that_only_enforces_warns_about_nothing_and_its_controllers_pods_are_refused() {
    let mut w = with_plugins();
    w.create(
        &namespaces(),
        None,
        namespace("secure", json!({"pod-security.kubernetes.io/enforce": "restricted"})),
    );
    let (answer, warnings) = create_warned(&mut w, &deployments(), "secure", deployment("web"));
    assert!(answer.is_ok() && warnings.is_empty(), "{answer:?} {warnings:?}");
    // The Pod its ReplicaSet would create, named by the storage from its generateName.
    let mut generated = nginx("");
    generated["metadata"] = json!({"generateName": "web-5d8f-"});
    let err = w.try_create(&pods(), Some("secure"), generated).unwrap_err();
    assert!(err.message.starts_with(r#"pods "web-5d8f-"#), "{}", err.message);
    assert!(err.message.ends_with(&format!(r#"" is forbidden: {RESTRICTED_NGINX}"#)), "{}", err.message);
}

#[test]
fn invalid_labels_are_refused_on_create_and_on_an_update_that_changes_them() {
    let mut w = with_plugins();
    let err = w
        .try_create(
            &namespaces(),
            None,
            namespace(
                "odd",
                json!({"pod-security.kubernetes.io/enforce": "strict", "pod-security.kubernetes.io/warn-version": "1.30"}),
            ),
        )
        .unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        err.message,
        r#"Namespace "odd" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.30": must be "latest" or "v1.x"]"#
    );
    w.create(
        &namespaces(),
        None,
        namespace("fine", json!({"pod-security.kubernetes.io/enforce": "baseline"})),
    );
    let err = w
        .try_merge(
            &namespaces(),
            None,
            "fine",
            json!({"metadata": {"labels": {"pod-security.kubernetes.io/audit": "everything"}}}),
        )
        .unwrap_err();
    assert_eq!(
        err.message,
        r#"Namespace "fine" is invalid: metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "everything": must be one of privileged, baseline, restricted"#
    );
}

#[test]
fn tightening_enforce_warns_about_the_pods_already_there_and_leaves_them_running() {
    let mut w = with_plugins();
    w.create(&namespaces(), None, namespace("apps", json!({})));
    for name in ["web-2", "web-1", "web-3"] {
        w.create(&pods(), Some("apps"), nginx(name));
    }
    let mut root = nginx("agent");
    root["spec"]["hostNetwork"] = json!(true);
    w.create(&pods(), Some("apps"), root);
    w.create(&pods(), Some("apps"), hardened("fine"));
    let label = |level: &str| {
        Request::patch(
            &namespaces(),
            None,
            "apps",
            Patch::Merge(json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": level}}})),
            PatchParams::default(),
        )
    };
    let (answer, warnings) = handle_warned(&mut w, label("restricted"));
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(
        warnings,
        [
            r#"existing pods in namespace "apps" violate the new PodSecurity enforce level "restricted:latest""#,
            "agent: host namespaces, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
            "web-1 (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile",
        ]
    );
    // Relaxing at the same version is quiet.
    let (answer, warnings) = handle_warned(&mut w, label("baseline"));
    assert!(answer.is_ok() && warnings.is_empty(), "{answer:?} {warnings:?}");
    // Back to restricted: the running Pods stay, and an update that changes nothing the policy
    // checks is admitted; one that changes an image is not.
    handle_warned(&mut w, label("restricted")).0.unwrap();
    let relabel =
        w.try_merge(&pods(), Some("apps"), "web-1", json!({"metadata": {"labels": {"tier": "front"}}}));
    assert!(relabel.is_ok(), "{relabel:?}");
    let set_image = Request::patch(
        &pods(),
        Some("apps"),
        "web-1",
        Patch::Strategic(json!({"spec": {"containers": [{"name": "nginx", "image": "nginx:1.28"}]}})),
        PatchParams::default(),
    );
    let err = w.handle(set_image).unwrap_err();
    assert_eq!(code_reason(&err), (403, "Forbidden"));
    assert!(err.message.contains(r#"violates PodSecurity "restricted:latest""#), "{}", err.message);
}

// The checks on their own: upstream's words, order and versions.

fn spec(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

fn check(level: &str, version: &str, pod: Value) -> String {
    let lv = LevelVersion { level: Level::parse(level).unwrap(), version: Version::parse(version).unwrap() };
    let spec = spec(pod);
    forbidden_detail(&evaluate(lv, &PodView { annotations: None, spec: &spec }))
}

#[test]
fn an_unhardened_container_fails_the_four_restricted_checks_in_upstream_words() {
    let pod = json!({"containers": [{"name": "nginx", "image": "nginx"}]});
    assert_eq!(check("baseline", "latest", pod.clone()), "");
    assert_eq!(
        check("restricted", "latest", pod),
        r#"allowPrivilegeEscalation != false (container "nginx" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "nginx" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "nginx" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "nginx" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
    );
}

#[test]
fn a_hardened_pod_passes_the_restricted_level() {
    let pod = json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "app", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}, {"name": "cfg", "configMap": {"name": "c"}}],
    });
    assert_eq!(check("restricted", "latest", pod), "");
}

#[test]
fn baseline_checks_come_first_then_the_restricted_ones() {
    let pod = json!({
        "hostNetwork": true, "hostPID": true, "hostIPC": true,
        "containers": [
            {"name": "a", "ports": [{"containerPort": 80, "hostPort": 9100}, {"containerPort": 81, "hostPort": 10}],
             "securityContext": {"privileged": true, "capabilities": {"add": ["NET_RAW", "CHOWN"]}}},
        ],
        "volumes": [{"name": "proc", "hostPath": {"path": "/proc"}}, {"name": "sys", "hostPath": {"path": "/sys"}}],
    });
    assert_eq!(
        check("baseline", "latest", pod.clone()),
        r#"non-default capabilities (container "a" must not include "NET_RAW" in securityContext.capabilities.add), host namespaces (hostNetwork=true, hostPID=true, hostIPC=true), hostPath volumes (volumes "proc", "sys"), hostPort (container "a" uses hostPorts 10, 9100), privileged (container "a" must not set securityContext.privileged=true)"#
    );
    // Restricted: the capability and hostPath checks are the restricted ones.
    let restricted = check("restricted", "latest", pod);
    assert!(
        restricted.starts_with("host namespaces (hostNetwork=true, hostPID=true, hostIPC=true), hostPort"),
        "{restricted}"
    );
    assert!(
        restricted.contains(r#"unrestricted capabilities (container "a" must set securityContext.capabilities.drop=["ALL"]; container "a" must not include "CHOWN", "NET_RAW" in securityContext.capabilities.add), restricted volume types (volumes "proc", "sys" use restricted volume type "hostPath")"#),
        "{restricted}"
    );
}

#[test]
fn versions_select_the_check_revisions() {
    let sysctl = |name: &str| json!({"securityContext": {"sysctls": [{"name": name, "value": "1"}]}, "containers": []});
    assert_eq!(
        check("baseline", "v1.26", sysctl("net.ipv4.ip_local_reserved_ports")),
        "forbidden sysctls (net.ipv4.ip_local_reserved_ports)"
    );
    assert_eq!(check("baseline", "v1.27", sysctl("net.ipv4.ip_local_reserved_ports")), "");
    assert_eq!(
        check("baseline", "v1.31", sysctl("net.ipv4.tcp_rmem")),
        "forbidden sysctls (net.ipv4.tcp_rmem)"
    );
    assert_eq!(check("baseline", "latest", sysctl("net.ipv4.tcp_rmem")), "");
    assert_eq!(check("baseline", "v1.99", sysctl("net.ipv4.tcp_rmem")), "");
    // runAsUser=0 is checked from v1.23, the capabilities from v1.22.
    let root = json!({"securityContext": {"runAsNonRoot": true, "runAsUser": 0}, "containers": [
        {"name": "a", "securityContext": {"allowPrivilegeEscalation": false, "seccompProfile": {"type": "RuntimeDefault"}}}]});
    assert_eq!(check("restricted", "v1.21", root.clone()), "");
    assert_eq!(
        check("restricted", "v1.23", root),
        r#"unrestricted capabilities (container "a" must set securityContext.capabilities.drop=["ALL"]), runAsUser=0 (pod must not set runAsUser=0)"#
    );
    // Windows Pods skip three restricted checks from v1.25.
    let windows = json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true}, "containers": [{"name": "w"}]});
    assert_eq!(check("restricted", "v1.25", windows.clone()), "");
    assert!(check("restricted", "v1.24", windows).starts_with("allowPrivilegeEscalation != false"));
}

#[test]
fn explicit_bad_values_name_their_setters() {
    let pod = json!({
        "securityContext": {"seLinuxOptions": {"type": "foo", "user": "bar"}, "seccompProfile": {"type": "Unconfined"},
                            "runAsNonRoot": false, "appArmorProfile": {"type": "Unconfined"}},
        "initContainers": [{"name": "init", "securityContext": {"procMount": "Unmasked", "runAsNonRoot": false}}],
        "containers": [{"name": "e", "securityContext": {"seLinuxOptions": {"type": "bar"}, "seccompProfile": {"type": "Unconfined"}}}],
    });
    assert_eq!(
        check("baseline", "latest", pod.clone()),
        r#"forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined"), procMount (container "init" must not set securityContext.procMount to "Unmasked"), seLinuxOptions (pod and container "e" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set), seccompProfile (pod and container "e" must not set securityContext.seccompProfile.type to "Unconfined")"#
    );
    assert!(check("restricted", "latest", pod).contains(
        r#"runAsNonRoot != true (pod and container "init" must not set securityContext.runAsNonRoot=false)"#
    ));
}

#[test]
fn labels_parse_into_a_policy_with_upstreams_errors() {
    let labels: BTreeMap<String, String> = [
        ("pod-security.kubernetes.io/enforce", "strict"),
        ("pod-security.kubernetes.io/enforce-version", "v1.05"),
        ("pod-security.kubernetes.io/warn", "baseline"),
        ("pod-security.kubernetes.io/warn-version", "v1.30"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let (policy, errors) = Policy::of(Some(&labels));
    assert_eq!(policy.enforce.to_string(), "restricted:latest");
    assert_eq!(policy.warn.to_string(), "baseline:v1.30");
    assert_eq!(policy.audit.to_string(), "privileged:latest");
    let messages: Vec<String> = errors.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    assert_eq!(
        messages,
        [
            r#"metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted"#,
            r#"metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: "v1.05": must be "latest" or "v1.x""#,
        ]
    );
    assert!(Policy::of(None).0.fully_privileged());
}

#[test]
fn a_debugging_container_in_a_restricted_namespace_must_be_hardened_too() {
    // `kubectl debug` adds an ephemeral container: an update the plugin evaluates, so a plain
    // busybox is refused beside a hardened Pod, and `--profile=restricted`'s container passes.
    let mut w = with_plugins();
    w.create(
        &namespaces(),
        None,
        namespace("secure", json!({"pod-security.kubernetes.io/enforce": "restricted"})),
    );
    w.create(&pods(), Some("secure"), hardened("app"));
    let debug = |container: Value| {
        Request::patch(
            &pods(),
            Some("secure"),
            "app",
            Patch::Strategic(json!({"spec": {"ephemeralContainers": [container]}})),
            PatchParams::default(),
        )
        .with_subresource(model_apiserver::Subresource::EphemeralContainers)
    };
    let err = w.handle(debug(json!({"name": "debugger-a", "image": "busybox"}))).unwrap_err();
    assert_eq!(
        err.message,
        r#"pods "app" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "debugger-a" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "debugger-a" must set securityContext.capabilities.drop=["ALL"])"#
    );
    let restricted = json!({"name": "debugger-b", "image": "busybox", "securityContext": {
        "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": true,
        "seccompProfile": {"type": "RuntimeDefault"}}});
    let answer = w.handle(debug(restricted));
    assert!(answer.is_ok(), "{answer:?}");
}
