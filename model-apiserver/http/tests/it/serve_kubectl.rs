//! The real kubectl against `kube-sim serve`, as a user would run it.
//!
//! Each test starts its own server in-process (127.0.0.1, a free port, a tokio runtime on its
//! own thread) and writes a kubeconfig for it into a temporary directory. kubectl must be
//! installed: CI installs it with `.ci/install-kubectl`; these tests fail (never skip) without it.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Stdio},
    sync::mpsc,
    time::Duration,
};

use serde_json::json;

#[path = "support/kubectl.rs"]
mod kubectl;
use kubectl::Kubectl;

const CONFIGMAP: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  labels: {tier: web}
data:
  a: \"1\"
";

fn deployment(image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
      - name: app
        image: {image}
        env: [{{name: A, value: \"1\"}}]
"
    )
}

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
";

#[test]
fn create_then_apply_then_apply_again_with_a_change_updates_the_object() {
    let k = Kubectl::start();
    assert_eq!(k.ok(&["create", "-f", &k.file("cm.yaml", CONFIGMAP)]), "configmap/app created\n");
    let v1 = k.file("deploy-v1.yaml", &deployment("nginx:1"));
    assert_eq!(k.ok(&["apply", "-f", &v1]), "deployment.apps/web created\n");
    assert_eq!(k.ok(&["apply", "-f", &v1]), "deployment.apps/web unchanged\n");
    let v2 = k.file("deploy-v2.yaml", &deployment("nginx:2"));
    assert_eq!(k.ok(&["apply", "-f", &v2]), "deployment.apps/web configured\n");
    let jsonpath = "-o=jsonpath={.spec.template.spec.containers[0].image} {.metadata.generation}";
    assert_eq!(k.ok(&["get", "deployment", "web", jsonpath]), "nginx:2 2");
}

#[test]
fn client_side_apply_keeps_a_container_added_by_someone_else() {
    let k = Kubectl::start();
    k.ok(&["apply", "-f", &k.file("v1.yaml", &deployment("nginx:1"))]);
    let sidecar = r#"{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"envoy"}]}}}}"#;
    k.ok(&["patch", "deployment", "web", "--type=strategic", "-p", sidecar]);
    k.ok(&["apply", "-f", &k.file("v2.yaml", &deployment("nginx:2"))]);
    let images = k.ok(&["get", "deployment", "web", "-o=jsonpath={.spec.template.spec.containers[*].image}"]);
    assert_eq!(images, "nginx:2 envoy");
}

#[test]
fn get_as_json_and_with_a_label_selector() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("cm.yaml", CONFIGMAP)]);
    let other = CONFIGMAP.replace("name: app", "name: other").replace("tier: web", "tier: db");
    k.ok(&["create", "-f", &k.file("other.yaml", &other)]);
    assert_eq!(k.ok(&["get", "configmaps", "-l", "tier=web", "-o", "name"]), "configmap/app\n");
    assert_eq!(k.ok(&["get", "configmaps", "-l", "tier!=web", "-o", "name"]), "configmap/other\n");
    let json: serde_json::Value =
        serde_json::from_str(&k.ok(&["get", "configmap", "app", "-o", "json"])).unwrap();
    assert_eq!(
        (&json["kind"], &json["metadata"]["namespace"], &json["data"]),
        (&serde_json::json!("ConfigMap"), &serde_json::json!("default"), &serde_json::json!({"a": "1"}))
    );
    let table = k.ok(&["get", "configmaps"]);
    assert_eq!(table.lines().next(), Some("NAME    DATA   AGE"));
    assert_eq!(table.lines().count(), 3);
}

#[test]
fn patch_with_merge_json_and_strategic_patches() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("cm.yaml", CONFIGMAP)]);
    k.ok(&["apply", "-f", &k.file("deploy.yaml", &deployment("nginx:1"))]);
    assert_eq!(
        k.ok(&["patch", "cm", "app", "--type=merge", "-p", r#"{"data":{"b":"2"}}"#]),
        "configmap/app patched\n"
    );
    let json_patch =
        r#"[{"op":"test","path":"/data/b","value":"2"},{"op":"add","path":"/data/c","value":"3"}]"#;
    k.ok(&["patch", "cm", "app", "--type=json", "-p", json_patch]);
    assert_eq!(k.ok(&["get", "cm", "app", "-o=jsonpath={.data}"]), r#"{"a":"1","b":"2","c":"3"}"#);
    let env =
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"B","value":"2"}]}]}}}}"#;
    k.ok(&["patch", "deployment", "web", "--type=strategic", "-p", env]);
    assert_eq!(
        k.ok(&["get", "deployment", "web", "-o=jsonpath={.spec.template.spec.containers[0].env}"]),
        r#"[{"name":"A","value":"1"},{"name":"B","value":"2"}]"#
    );
    let failed_test = r#"[{"op":"test","path":"/data/b","value":"nope"}]"#;
    let stderr = k.fails(&["patch", "cm", "app", "--type=json", "-p", failed_test]);
    assert!(stderr.starts_with("The request is invalid"), "unexpected error: {stderr}");
}

#[test]
fn server_side_apply_records_the_manager_and_a_second_manager_conflicts_until_forced() {
    let k = Kubectl::start();
    let first = k
        .file("first.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {owner: first}\n");
    assert_eq!(k.ok(&["apply", "--server-side", "-f", &first]), "configmap/ssa serverside-applied\n");
    let managers = k.ok(&[
        "get",
        "cm",
        "ssa",
        "--show-managed-fields",
        "-o=jsonpath={.metadata.managedFields[*].manager} {.metadata.managedFields[*].operation}",
    ]);
    assert_eq!(managers, "kubectl Apply");
    let second = k.file(
        "second.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {owner: second}\n",
    );
    let stderr = k.fails(&["apply", "--server-side", "--field-manager=other", "-f", &second]);
    assert!(
        stderr.starts_with("error: Apply failed with 1 conflict: conflict with \"kubectl\": .data.owner\n"),
        "unexpected error: {stderr}"
    );
    k.ok(&["apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", &second]);
    assert_eq!(k.ok(&["get", "cm", "ssa", "-o=jsonpath={.data.owner}"]), "second");
}

#[test]
fn delete_of_an_object_with_a_finalizer_waits_for_the_finalizer() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("cm.yaml", CONFIGMAP)]);
    k.ok(&[
        "patch",
        "cm",
        "app",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    // kubectl 1.37 adds " from default namespace"; older ones end at "deleted".
    let deleted = k.ok(&["delete", "cm", "app", "--wait=false"]);
    assert!(deleted.starts_with("configmap \"app\" deleted"), "{deleted}");
    let held =
        k.ok(&["get", "cm", "app", "-o=jsonpath={.metadata.finalizers} {.metadata.deletionTimestamp}"]);
    assert!(held.starts_with(r#"["example.com/hold"] 20"#), "not held by its finalizer: {held}");
    k.ok(&["patch", "cm", "app", "--type=json", "-p", r#"[{"op":"remove","path":"/metadata/finalizers"}]"#]);
    let stderr = k.fails(&["get", "cm", "app"]);
    assert_eq!(stderr, "Error from server (NotFound): configmaps \"app\" not found\n");
}

#[test]
fn foreground_cascading_delete_leaves_the_object_with_the_foreground_finalizer_as_serve_runs_no_gc() {
    let k = Kubectl::start();
    k.ok(&["apply", "-f", &k.file("deploy.yaml", &deployment("nginx:1"))]);
    k.ok(&["delete", "deployment", "web", "--cascade=foreground", "--wait=false"]);
    let finalizers = k.ok(&["get", "deployment", "web", "-o=jsonpath={.metadata.finalizers}"]);
    assert_eq!(finalizers, r#"["foregroundDeletion"]"#);
}

#[test]
fn wait_for_condition_returns_once_a_status_patch_sets_the_condition() {
    let k = Kubectl::start();
    k.ok(&["apply", "-f", &k.file("deploy.yaml", &deployment("nginx:1"))]);
    let waiter = k
        .command(&["wait", "--for=condition=Available", "deployment/web", "--timeout=60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl wait starts");
    let condition = r#"{"status":{"conditions":[{"type":"Available","status":"True","reason":"Test"}]}}"#;
    k.ok(&["patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", condition]);
    let output = waiter.wait_with_output().expect("kubectl wait ends");
    assert!(output.status.success(), "kubectl wait failed: {}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "deployment.apps/web condition met\n");
}

#[test]
fn explain_describes_a_built_in_field_from_the_served_openapi() {
    let k = Kubectl::start();
    let explained = k.ok(&["explain", "deployment.spec.replicas"]);
    assert!(explained.contains("FIELD: replicas <integer>"), "{explained}");
    assert!(explained.contains("Number of desired pods."), "{explained}");
}

#[test]
fn a_crd_applied_from_yaml_serves_its_custom_resources_and_strategic_patch_gets_415() {
    let k = Kubectl::start();
    assert_eq!(
        k.ok(&["apply", "-f", &k.file("crd.yaml", CRD)]),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    );
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n";
    assert_eq!(k.ok(&["apply", "-f", &k.file("w.yaml", widget)]), "widget.example.com/w1 created\n");
    assert_eq!(
        k.ok(&["apply", "-f", &k.file("w2.yaml", &widget.replace("3", "4"))]),
        "widget.example.com/w1 configured\n"
    );
    assert_eq!(k.ok(&["get", "widgets", "w1", "-o=jsonpath={.spec.size}"]), "4");
    let stderr = k.fails(&["patch", "widget", "w1", "--type=strategic", "-p", r#"{"spec":{"size":5}}"#]);
    assert_eq!(
        stderr,
        "error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml\n"
    );
}

/// Read `child`'s stdout lines on a thread, so that the test can wait for one with a bound.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// How long a watch test waits for one line before failing (a bound, not an assertion on time).
const WATCH_LINE_WAIT_MAX: Duration = Duration::from_secs(30);

#[test]
fn a_watch_with_get_w_sees_creations_and_changes() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("cm.yaml", CONFIGMAP)]);
    let mut watch = k
        .command(&[
            "get",
            "configmaps",
            "-w",
            "-o=custom-columns=NAME:.metadata.name,TIER:.metadata.labels.tier",
            "--request-timeout=60s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w starts");
    let lines = lines_of(&mut watch);
    let next = || lines.recv_timeout(WATCH_LINE_WAIT_MAX).expect("kubectl printed a line");
    assert_eq!(next().split_whitespace().collect::<Vec<_>>(), ["NAME", "TIER"]);
    assert_eq!(next().split_whitespace().collect::<Vec<_>>(), ["app", "web"]);
    let later = CONFIGMAP.replace("name: app", "name: later").replace("tier: web", "tier: new");
    k.ok(&["create", "-f", &k.file("later.yaml", &later)]);
    assert_eq!(next().split_whitespace().collect::<Vec<_>>(), ["later", "new"]);
    k.ok(&["label", "cm", "app", "tier=changed", "--overwrite"]);
    assert_eq!(next().split_whitespace().collect::<Vec<_>>(), ["app", "changed"]);
    watch.kill().expect("stopping kubectl get -w");
    let _ = watch.wait();
}

// kubectl's generator commands send their objects as protobuf (`application/vnd.kubernetes.protobuf`).

/// `kubectl get KIND NAME -o json`, parsed.
fn get_json(k: &Kubectl, kind: &str, name: &str) -> serde_json::Value {
    serde_json::from_str(&k.ok(&["get", kind, name, "-o", "json"])).expect("kubectl prints JSON")
}

#[test]
fn kubectl_create_deployment_in_protobuf_creates_the_exact_deployment() {
    let k = Kubectl::start();
    k.ok(&["create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "--port=80"]);
    let d = get_json(&k, "deployment", "web");
    assert_eq!(
        (&d["metadata"]["labels"], &d["spec"]["replicas"], &d["spec"]["selector"]),
        (&json!({"app": "web"}), &json!(3), &json!({"matchLabels": {"app": "web"}}))
    );
    // The template's zero creationTimestamp is left out (`omitzero`, Kubernetes 1.34 and later).
    assert_eq!(d["spec"]["template"]["metadata"], json!({"labels": {"app": "web"}}));
    let container = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (&container["name"], &container["image"], &container["ports"]),
        (&json!("nginx"), &json!("nginx:1.27"), &json!([{"containerPort": 80, "protocol": "TCP"}]))
    );
    // The protobuf body carries every non-pointer field at zero (`stdin: false`, `paused:
    // false`, `minReadySeconds: 0`); the answer, as kube-apiserver's JSON, has none of them.
    for (object, field) in
        [(&d["spec"], "paused"), (&d["spec"], "minReadySeconds"), (container, "stdin"), (container, "tty")]
    {
        assert_eq!(object.get(field), None, "{field} in {d}");
    }
}

#[test]
fn kubectl_create_deployment_with_zero_replicas_keeps_zero() {
    let k = Kubectl::start();
    k.ok(&["create", "deployment", "idle", "--image=nginx", "--replicas=0"]);
    assert_eq!(get_json(&k, "deployment", "idle")["spec"]["replicas"], json!(0));
}

#[test]
fn kubectl_create_configmap_from_literals_creates_exactly_that_data() {
    let k = Kubectl::start();
    k.ok(&["create", "configmap", "settings", "--from-literal=a=1", "--from-literal=b=two words"]);
    let cm = get_json(&k, "configmap", "settings");
    assert_eq!(
        (&cm["metadata"]["name"], &cm["metadata"]["namespace"], &cm["data"]),
        (&json!("settings"), &json!("default"), &json!({"a": "1", "b": "two words"}))
    );
    assert_eq!(cm.get("binaryData"), None);
}

#[test]
fn kubectl_create_secret_generic_stores_the_bytes_base64_encoded() {
    let k = Kubectl::start();
    k.ok(&[
        "create",
        "secret",
        "generic",
        "login",
        "--from-literal=user=admin",
        "--from-literal=pass=s3cr3t",
    ]);
    let secret = get_json(&k, "secret", "login");
    assert_eq!(
        (&secret["type"], &secret["data"]),
        (&json!("Opaque"), &json!({"user": "YWRtaW4=", "pass": "czNjcjN0"}))
    );
}

#[test]
fn kubectl_create_namespace_creates_an_active_namespace() {
    let k = Kubectl::start();
    k.ok(&["create", "namespace", "team-a"]);
    let ns = get_json(&k, "namespace", "team-a");
    assert_eq!((&ns["metadata"]["name"], &ns["status"]["phase"]), (&json!("team-a"), &json!("Active")));
    k.ok(&["-n", "team-a", "create", "configmap", "inside", "--from-literal=x=y"]);
    assert_eq!(k.ok(&["-n", "team-a", "get", "configmaps", "-o", "name"]), "configmap/inside\n");
}

#[test]
fn kubectl_create_service_clusterip_creates_its_port_and_selector() {
    let k = Kubectl::start();
    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let svc = get_json(&k, "service", "web");
    assert_eq!(
        (&svc["spec"]["type"], &svc["spec"]["selector"], &svc["spec"]["ports"]),
        (
            &json!("ClusterIP"),
            &json!({"app": "web"}),
            &json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
        )
    );
}

#[test]
fn kubectl_create_job_creates_its_command_and_restart_policy() {
    let k = Kubectl::start();
    k.ok(&["create", "job", "hello", "--image=busybox", "--", "echo", "hi"]);
    let job = get_json(&k, "job", "hello");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(
        (&pod["restartPolicy"], &pod["containers"][0]["image"], &pod["containers"][0]["command"]),
        (&json!("Never"), &json!("busybox"), &json!(["echo", "hi"]))
    );
}

#[test]
fn kubectl_create_serviceaccount_and_docker_registry_secret_work() {
    let k = Kubectl::start();
    k.ok(&["create", "serviceaccount", "robot"]);
    assert_eq!(get_json(&k, "serviceaccount", "robot")["metadata"]["name"], json!("robot"));
    k.ok(&[
        "create",
        "secret",
        "docker-registry",
        "pull",
        "--docker-server=r.example",
        "--docker-username=u",
        "--docker-password=p",
    ]);
    let secret = get_json(&k, "secret", "pull");
    assert_eq!(secret["type"], json!("kubernetes.io/dockerconfigjson"));
    assert!(secret["data"][".dockerconfigjson"].is_string(), "{secret}");
}

#[test]
fn kubectl_scale_label_and_set_image_change_a_deployment_made_by_kubectl_create() {
    let k = Kubectl::start();
    k.ok(&["create", "deployment", "web", "--image=nginx:1.27"]);
    k.ok(&["scale", "deployment", "web", "--replicas=4"]);
    k.ok(&["label", "deployment", "web", "tier=front"]);
    k.ok(&["set", "image", "deployment/web", "nginx=nginx:1.28"]);
    let d = get_json(&k, "deployment", "web");
    assert_eq!(
        (
            &d["spec"]["replicas"],
            &d["metadata"]["labels"],
            &d["spec"]["template"]["spec"]["containers"][0]["image"]
        ),
        (&json!(4), &json!({"app": "web", "tier": "front"}), &json!("nginx:1.28"))
    );
}

#[test]
fn kubectl_run_creates_the_pod_and_kubectl_expose_the_service_of_a_deployment() {
    let k = Kubectl::start();
    k.ok(&["run", "nginx", "--image=nginx:1.27", "--labels=app=n", "--env=A=1", "--port=80"]);
    let pod = get_json(&k, "pod", "nginx");
    let container = &pod["spec"]["containers"][0];
    assert_eq!(
        (&pod["metadata"]["labels"], &container["image"], &container["env"], &container["ports"]),
        (
            &json!({"app": "n"}),
            &json!("nginx:1.27"),
            &json!([{"name": "A", "value": "1"}]),
            &json!([{"containerPort": 80, "protocol": "TCP"}])
        )
    );
    k.ok(&["create", "deployment", "web", "--image=nginx"]);
    k.ok(&["expose", "deployment", "web", "--port=80", "--target-port=8080"]);
    let svc = get_json(&k, "service", "web");
    assert_eq!(
        (&svc["spec"]["selector"], &svc["spec"]["ports"]),
        (&json!({"app": "web"}), &json!([{"port": 80, "protocol": "TCP", "targetPort": 8080}]))
    );
}

#[test]
fn kubectl_create_cronjob_pdb_ingress_priorityclass_and_quota_create_exactly_those_objects() {
    let k = Kubectl::start();
    k.ok(&["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *"]);
    let cronjob = get_json(&k, "cronjob", "nightly");
    assert_eq!(
        (
            &cronjob["spec"]["schedule"],
            &cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"]
        ),
        (&json!("0 3 * * *"), &json!("busybox"))
    );
    k.ok(&["create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=1"]);
    let pdb = get_json(&k, "poddisruptionbudget", "web");
    assert_eq!(
        (&pdb["spec"]["minAvailable"], &pdb["spec"]["selector"]),
        (&json!(1), &json!({"matchLabels": {"app": "web"}}))
    );
    k.ok(&["create", "ingress", "web", "--rule=example.com/=web:80"]);
    let ingress = get_json(&k, "ingress", "web");
    assert_eq!(ingress["spec"]["rules"][0]["host"], json!("example.com"));
    assert_eq!(
        ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"],
        json!({"name": "web", "port": {"number": 80}})
    );
    k.ok(&["create", "priorityclass", "high", "--value=1000"]);
    assert_eq!(get_json(&k, "priorityclass", "high")["value"], json!(1000));
    k.ok(&["create", "quota", "q", "--hard=pods=10"]);
    assert_eq!(get_json(&k, "resourcequota", "q")["spec"]["hard"], json!({"pods": "10"}));
}

#[test]
fn kubectl_create_role_and_bindings_namespaced_and_cluster_wide() {
    let k = Kubectl::start();
    k.ok(&["create", "role", "reader", "--verb=get", "--resource=pods"]);
    assert_eq!(
        get_json(&k, "role", "reader")["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    );
    k.ok(&["create", "rolebinding", "rb", "--role=reader", "--user=alice"]);
    let binding = get_json(&k, "rolebinding", "rb");
    assert_eq!(
        (&binding["roleRef"]["name"], &binding["subjects"][0]["name"]),
        (&json!("reader"), &json!("alice"))
    );
    k.ok(&["create", "clusterrole", "cr", "--verb=list", "--resource=nodes"]);
    k.ok(&["create", "clusterrolebinding", "crb", "--clusterrole=cr", "--user=bob"]);
    let binding = get_json(&k, "clusterrolebinding", "crb");
    assert_eq!(binding["metadata"].get("namespace"), None, "cluster-scoped");
    assert_eq!(
        (&binding["roleRef"]["kind"], &binding["subjects"][0]["name"]),
        (&json!("ClusterRole"), &json!("bob"))
    );
}

const CORE_EVENT: &str = "apiVersion: v1
kind: Event
metadata: {name: web-0.started}
involvedObject: {kind: Pod, name: web-0, namespace: default, apiVersion: v1}
reason: Started
message: Started container app
type: Normal
source: {component: kubelet}
";

const NEW_EVENT: &str = "apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: web.scaled}
eventTime: \"2026-01-01T00:00:00.000000Z\"
regarding: {kind: Deployment, name: web, namespace: default, apiVersion: apps/v1}
reason: Scaled
note: Scaled up to 2
type: Normal
action: Scale
reportingController: example.com/operator
reportingInstance: operator-0
";

#[test]
fn kubectl_get_events_and_kubectl_events_read_core_and_events_k8s_io_events_from_one_store() {
    let k = Kubectl::start();
    assert_eq!(k.ok(&["create", "-f", &k.file("core.yaml", CORE_EVENT)]), "event/web-0.started created\n");
    assert_eq!(
        k.ok(&["create", "-f", &k.file("new.yaml", NEW_EVENT)]),
        "event.events.k8s.io/web.scaled created\n"
    );
    let names = "-o=jsonpath={.items[*].metadata.name}";
    assert_eq!(k.ok(&["get", "events", names]), "web-0.started web.scaled");
    assert_eq!(k.ok(&["get", "events.events.k8s.io", names]), "web-0.started web.scaled");
    let table = k.ok(&["get", "events"]);
    assert!(table.starts_with("LAST SEEN"), "{table}");
    assert!(table.contains("pod/web-0") && table.contains("Started container app"), "{table}");
    assert!(table.contains("deployment/web") && table.contains("Scaled up to 2"), "{table}");
    let for_pod = k.ok(&["events", "--for", "pod/web-0"]);
    assert!(for_pod.contains("Started container app") && !for_pod.contains("Scaled"), "{for_pod}");
    let selected = k.ok(&["get", "events", "--field-selector", "reason=Scaled", names]);
    assert_eq!(selected, "web.scaled");
}

const DRAINED_NODE: &str = "apiVersion: v1
kind: Node
metadata:
  name: node-1
---
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  labels: {app: web}
spec:
  nodeName: node-1
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  labels: {app: web}
spec:
  nodeName: node-1
  containers: [{name: c, image: nginx}]
";

const WEB_BUDGET: &str = "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
";

/// `kubectl drain` cordons the node and evicts its pods through `pods/eviction`: refused while
/// the budget allows nothing (drain retries until its timeout), then granted.
#[test]
fn drain_evicts_through_the_eviction_subresource_and_respects_the_budget() {
    let k = Kubectl::start();
    k.ok(&["apply", "-f", &k.file("node.yaml", DRAINED_NODE)]);
    let running = r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
    for pod in ["web-0", "web-1"] {
        k.ok(&["patch", "pod", pod, "--subresource=status", "--type=merge", "-p", running]);
    }
    k.ok(&["apply", "-f", &k.file("pdb.yaml", WEB_BUDGET)]);
    let no_disruption = r#"{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":2,"desiredHealthy":1,"expectedPods":2}}"#;
    k.ok(&["patch", "pdb", "web", "--subresource=status", "--type=merge", "-p", no_disruption]);
    let drain = ["drain", "node-1", "--force", "--grace-period=0", "--timeout=3s"];
    let refused = k.fails(&drain);
    assert!(
        refused.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{refused}"
    );
    assert_eq!(k.ok(&["get", "pods", "-o", "name"]), "pod/web-0\npod/web-1\n");
    assert_eq!(k.ok(&["get", "node", "node-1", "-o", "jsonpath={.spec.unschedulable}"]), "true");

    let two_allowed = r#"{"status":{"observedGeneration":1,"disruptionsAllowed":2,"currentHealthy":2,"desiredHealthy":0,"expectedPods":2}}"#;
    k.ok(&["patch", "pdb", "web", "--subresource=status", "--type=merge", "-p", two_allowed]);
    let drained = k.ok(&["drain", "node-1", "--force", "--grace-period=0", "--timeout=20s"]);
    assert!(drained.contains("pod/web-0 evicted") && drained.contains("pod/web-1 evicted"), "{drained}");
    assert!(drained.contains("node/node-1 drained"), "{drained}");
    assert_eq!(k.ok(&["get", "pods", "-o", "name"]), "");
    let disrupted = k.ok(&["get", "pdb", "web", "-o", "jsonpath={.status.disruptionsAllowed}"]);
    assert_eq!(disrupted, "0");
}

const RULED_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: databases.example.com}
spec:
  group: example.com
  names: {kind: Database, plural: databases, singular: database, listKind: DatabaseList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: 'self.minReplicas <= self.maxReplicas', message: minReplicas must not exceed maxReplicas}
            properties:
              minReplicas: {type: integer}
              maxReplicas: {type: integer}
              engine:
                type: string
                x-kubernetes-validations: [{rule: self == oldSelf, message: Value is immutable}]
";

// A CRD's CEL validation rules refuse what a real cluster refuses, in its words: a broken rule
// on create, a change of an immutable field on update.
#[test]
fn kubectl_meets_a_crds_validation_rules() {
    let k = Kubectl::start();
    k.ok(&["create", "-f", &k.file("crd.yaml", RULED_CRD)]);
    k.ok(&["wait", "--for=condition=Established", "crd/databases.example.com"]);
    let db = |min: u32, engine: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Database\nmetadata: {{name: db}}\n\
             spec: {{minReplicas: {min}, maxReplicas: 3, engine: {engine}}}\n"
        )
    };
    let err = k.fails(&["apply", "-f", &k.file("bad.yaml", &db(5, "postgres"))]);
    assert!(
        err.contains("spec: Invalid value: \"object\": minReplicas must not exceed maxReplicas"),
        "{err}"
    );
    k.ok(&["apply", "-f", &k.file("db.yaml", &db(1, "postgres"))]);
    let err = k.fails(&["apply", "-f", &k.file("db2.yaml", &db(1, "mysql"))]);
    assert!(err.contains("spec.engine: Invalid value: \"string\": Value is immutable"), "{err}");
    k.ok(&["apply", "-f", &k.file("db3.yaml", &db(2, "postgres"))]);
}

// `kubectl create token`: a token for an existing account, with the duration asked for; the
// real refusals for a missing account and a duration under ten minutes.
#[test]
fn kubectl_create_token_issues_a_token_for_an_existing_account() {
    let k = Kubectl::start();
    k.ok(&["create", "serviceaccount", "op"]);
    let token = k.ok(&["create", "token", "op", "--duration=20m", "--audience=vault"]);
    let parts: Vec<&str> = token.trim().split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    // What kubectl sent (in protobuf) is in the claims: the audience and the 20 minutes.
    use base64::Engine;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(parts[1]).expect("base64url claims");
    let claims: serde_json::Value = serde_json::from_slice(&claims).expect("JSON claims");
    assert_eq!(claims["aud"], json!(["vault"]));
    assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 1200);
    assert_eq!(claims["sub"], "system:serviceaccount:default:op");
    let err = k.fails(&["create", "token", "ghost"]);
    assert!(err.contains("serviceaccounts \"ghost\" not found"), "{err}");
    let err = k.fails(&["create", "token", "op", "--duration=5m"]);
    assert!(err.contains("may not specify a duration less than 10 minutes"), "{err}");
}

const REPLICA_LIMIT: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replica-limit}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  validations:
  - {expression: 'object.spec.replicas <= 5', message: at most 5 replicas}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replica-limit}
spec: {policyName: replica-limit, validationActions: [Deny]}
";

// A cluster's ValidatingAdmissionPolicy applied with kubectl refuses what it refuses on a
// cluster, in the plugin's words.
#[test]
fn kubectl_meets_a_validating_admission_policy() {
    let k = Kubectl::start();
    k.ok(&["apply", "-f", &k.file("policy.yaml", REPLICA_LIMIT)]);
    let err = k.fails(&["create", "deployment", "web", "--image=nginx", "--replicas=6"]);
    assert!(
        err.contains(
            "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding \
             'replica-limit' denied request: at most 5 replicas"
        ),
        "{err}"
    );
    k.ok(&["create", "deployment", "web", "--image=nginx", "--replicas=5"]);
}
