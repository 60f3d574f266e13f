//! `kube-sim serve --with-builtins`: the built-in controllers run live behind the served model,
//! driven by the real kubectl and the real kube-rs client (issue 8).
//!
//! Each test starts its own server in-process (127.0.0.1, a free port) with the built-ins on
//! their own thread. Controllers act in wall-clock time here, so the tests poll with a bounded
//! number of tries ([`TRIES_MAX`] × [`TRY_PAUSE`], a generous bound, never an assertion on time).
//! kubectl must be installed (`.ci/install-kubectl`); these tests fail without it.

use std::{
    io::{BufRead, BufReader, Lines},
    path::PathBuf,
    process::{Child, ChildStdout, Command, Output, Stdio},
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::Pod};
use kube::{
    Api, Client, ResourceExt,
    api::PostParams,
    runtime::watcher::{self, Event},
};
use kube_sim::serve::{ServeConfig, Served, builtins::Builtins, spawn};
use sim::Verdict;

/// How many times a test polls for what the controllers should bring about.
const TRIES_MAX: usize = 240;
/// The pause between two polls (so the bound is about a minute).
const TRY_PAUSE: Duration = Duration::from_millis(250);

/// `kube-sim serve` as a child process; killed on drop.
struct Binary {
    child: Child,
    /// The server's stdout, kept open: a closed pipe would kill it at its next line.
    _stdout: Lines<BufReader<ChildStdout>>,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server a test talks to.
enum Server {
    InProcess(Served),
    /// Held only to be killed on drop.
    Binary {
        _process: Binary,
    },
}

/// A served model, optionally with the built-ins, and a kubectl configured for it.
struct Kubectl {
    server: Server,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Kubectl {
    fn start(with_builtins: bool) -> Kubectl {
        let served = spawn(ServeConfig::default(), with_builtins).expect("the server starts");
        let url = served.url();
        Kubectl::connect(Server::InProcess(served), &url)
    }

    /// Run `kube-sim serve --addr 127.0.0.1:0` with `args`, and connect once it prints its address.
    fn start_binary(args: &[&str]) -> Kubectl {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("kube-sim runs");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let first = stdout.next().and_then(Result::ok).unwrap_or_default();
        let url = first.rsplit(' ').next().unwrap_or_default().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "unexpected first line: {first:?}");
        Kubectl::connect(Server::Binary { _process: Binary { child, _stdout: stdout } }, &url)
    }

    fn connect(server: Server, url: &str) -> Kubectl {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster: {{server: '{url}'}}\n\
             users:\n- name: sim\n  user: {{}}\ncontexts:\n- name: sim\n  context: {{cluster: sim, user: sim, namespace: default}}\n\
             current-context: sim\n"
        );
        std::fs::write(&kubeconfig, config).expect("writing the kubeconfig");
        Kubectl { server, dir, kubeconfig }
    }

    /// The in-process server's model.
    fn live(&self) -> &kube_sim::serve::Live {
        match &self.server {
            Server::InProcess(served) => served.live(),
            Server::Binary { .. } => panic!("the model of a kube-sim process is out of reach"),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        let output = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .output();
        match output {
            Ok(output) => output,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                panic!("kubectl is not installed: these tests run the real kubectl (`.ci/install-kubectl`)")
            }
            Err(e) => panic!("running kubectl {args:?}: {e}"),
        }
    }

    /// Run kubectl, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        stdout
    }

    /// Poll `kubectl args` until its stdout is `expected`; fails with the last answer after
    /// [`TRIES_MAX`] tries.
    fn eventually(&self, args: &[&str], expected: &str) {
        let mut last = String::new();
        for _ in 0..TRIES_MAX {
            let output = self.run(args);
            last = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            if output.status.success() && String::from_utf8_lossy(&output.stdout) == expected {
                return;
            }
            std::thread::sleep(TRY_PAUSE);
        }
        panic!("kubectl {args:?} never answered {expected:?}; last answer: {last:?}");
    }

    /// Write `yaml` to a file in the temporary directory and return its path.
    fn file(&self, name: &str, yaml: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).expect("writing a manifest");
        path.to_string_lossy().into_owned()
    }
}

/// A Deployment `web` of two replicas in `namespace`; a one-second grace period keeps deletions
/// short (the default is 30 s, as on a real cluster).
fn deployment(namespace: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {namespace}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: nginx:1
"
    )
}

const PHASES: &str = "-o=jsonpath={.items[*].status.phase}";

#[test]
fn a_deployment_applied_with_kubectl_gets_a_replicaset_and_two_pods_that_become_running() {
    let k = Kubectl::start(true);
    assert_eq!(
        k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("default"))]),
        "deployment.apps/web created\n"
    );
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
    let replicasets =
        k.ok(&["get", "replicasets", "-o=jsonpath={.items[*].metadata.ownerReferences[0].name}"]);
    assert_eq!(replicasets, "web");
    let rs = k.ok(&["get", "replicasets", "-o=jsonpath={.items[0].metadata.name}"]);
    assert!(rs.starts_with("web-"), "{rs}");
    let owners = k.ok(&["get", "pods", "-o=jsonpath={.items[*].metadata.ownerReferences[0].name}"]);
    assert_eq!(owners, format!("{rs} {rs}"));
    let node = k.ok(&["get", "pods", "-o=jsonpath={.items[*].spec.nodeName}"]);
    assert_eq!(node, "node-1 node-1");
    let waited = k.ok(&["wait", "--for=condition=Available", "deployment/web", "--timeout=60s"]);
    assert_eq!(waited, "deployment.apps/web condition met\n");
    k.eventually(&["get", "deployment", "web", "-o=jsonpath={.status.readyReplicas}"], "2");
    // The controllers' clock is the wall clock, as the HTTP side's: nothing they stamp (the
    // Pods' creation by the ReplicaSet controller, the kubelet's startTime) predates the
    // Deployment's creation over HTTP. RFC 3339 UTC stamps compare as strings.
    let created = k.ok(&["get", "deployment", "web", "-o=jsonpath={.metadata.creationTimestamp}"]);
    let stamps = k.ok(&[
        "get",
        "pods",
        "-o=jsonpath={.items[*].metadata.creationTimestamp} {.items[*].status.startTime}",
    ]);
    let stamps: Vec<&str> = stamps.split(' ').collect();
    assert_eq!(stamps.len(), 4, "{stamps:?}");
    assert!(stamps.iter().all(|stamp| **stamp >= *created), "{stamps:?} before {created}");
}

#[test]
fn kube_sim_serve_with_builtins_runs_the_pods_of_kubectl_create_deployment() {
    let k = Kubectl::start_binary(&["--with-builtins"]);
    let created = k.ok(&["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"]);
    assert_eq!(created, "deployment.apps/web created\n");
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
    let waited = k.ok(&["wait", "--for=condition=Available", "deployment/web", "--timeout=60s"]);
    assert_eq!(waited, "deployment.apps/web condition met\n");
}

#[test]
fn kube_sim_serve_without_the_flag_leaves_a_created_deployment_without_pods() {
    let k = Kubectl::start_binary(&[]);
    k.ok(&["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"]);
    for _ in 0..8 {
        std::thread::sleep(TRY_PAUSE);
        assert_eq!(k.ok(&["get", "replicasets,pods", "-o", "name"]), "");
    }
}

#[test]
fn deleting_the_deployment_garbage_collects_its_replicaset_and_pods() {
    let k = Kubectl::start(true);
    k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("default"))]);
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
    // kubectl 1.37 adds " from default namespace"; older ones end at "deleted".
    let deleted = k.ok(&["delete", "deployment", "web", "--wait=false"]);
    assert!(deleted.starts_with("deployment.apps \"web\" deleted"), "{deleted}");
    k.eventually(&["get", "deployments,replicasets,pods", "-o", "name"], "");
}

#[test]
fn an_exposed_deployment_gets_endpoints_and_an_endpoint_slice_of_its_running_pods() {
    let k = Kubectl::start(true);
    k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("default"))]);
    assert_eq!(
        k.ok(&["expose", "deployment", "web", "--port=80", "--target-port=8080"]),
        "service/web exposed\n"
    );
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
    // The Endpoints lists the addresses in IP order.
    let ips = k.ok(&["get", "pods", "-l", "app=web", "-o=jsonpath={.items[*].status.podIP}"]);
    let mut ips: Vec<&str> = ips.split(' ').collect();
    ips.sort_unstable();
    let subset = "-o=jsonpath={.subsets[*].addresses[*].ip} {.subsets[*].ports[*].port}";
    k.eventually(&["get", "endpoints", "web", subset], &format!("{} 8080", ips.join(" ")));
    let slice = "-o=jsonpath={.items[*].endpoints[*].conditions.ready} {.items[*].ports[*].port}";
    k.eventually(&["get", "endpointslices", "-l", "kubernetes.io/service-name=web", slice], "true true 8080");
    // Deleting the Service takes its Endpoints and (through the garbage collector) its slice.
    k.ok(&["delete", "service", "web"]);
    // What is left is the API server's own, for its `kubernetes` Service.
    k.eventually(
        &["get", "endpoints,endpointslices", "-o", "name"],
        "endpoints/kubernetes\nendpointslice.discovery.k8s.io/kubernetes\n",
    );
}

#[test]
fn deleting_a_namespace_removes_its_objects_and_then_the_namespace() {
    let k = Kubectl::start(true);
    assert_eq!(k.ok(&["create", "namespace", "team"]), "namespace/team created\n");
    k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("team"))]);
    k.ok(&["create", "configmap", "settings", "-n", "team", "--from-literal=a=1"]);
    k.eventually(&["get", "pods", "-n", "team", PHASES], "Running Running");
    assert_eq!(k.ok(&["delete", "namespace", "team", "--wait=false"]), "namespace \"team\" deleted\n");
    k.eventually(
        &["get", "namespaces", "-o=jsonpath={.items[*].metadata.name}"],
        "default kube-node-lease kube-public kube-system",
    );
    let left = k.ok(&["get", "deployments,replicasets,pods", "-A", "-o", "name"]);
    assert_eq!(left, "");
    // Only the root CA publisher's ConfigMap of each namespace left, as on a real cluster: team's
    // went with it.
    let maps = k.ok(&[
        "get",
        "configmaps",
        "-A",
        "-o=jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name} {end}",
    ]);
    let want: String = ["default", "kube-node-lease", "kube-public", "kube-system"]
        .map(|ns| format!("{ns}/kube-root-ca.crt "))
        .concat();
    assert_eq!(maps, want);
}

#[test]
fn a_new_namespace_gets_a_default_service_account_and_the_root_ca_config_map() {
    let k = Kubectl::start(true);
    k.ok(&["create", "namespace", "team"]);
    k.eventually(&["get", "serviceaccounts", "-n", "team", "-o", "name"], "serviceaccount/default\n");
    k.eventually(&["get", "configmaps", "-n", "team", "-o", "name"], "configmap/kube-root-ca.crt\n");
    let description = k.ok(&[
        "get",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "team",
        "-o=jsonpath={.metadata.annotations.kubernetes\\.io/description}",
    ]);
    assert!(
        description.starts_with("Contains a CA bundle that can be used to verify the kube-apiserver"),
        "{description}"
    );
    let bundle =
        k.ok(&["get", "configmap", "kube-root-ca.crt", "-n", "team", "-o=jsonpath={.data.ca\\.crt}"]);
    assert!(bundle.starts_with("-----BEGIN CERTIFICATE-----\n"), "{bundle}");
    // Deleted, it comes back.
    k.ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "team"]);
    k.eventually(&["get", "configmaps", "-n", "team", "-o", "name"], "configmap/kube-root-ca.crt\n");
}

/// A claim and a Pod that mounts it; a one-second grace period keeps the Pod's deletion short.
const CLAIM_AND_POD: &str = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: app}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: app, image: "app:1"}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
"#;

#[test]
fn a_claim_deleted_with_kubectl_while_a_pod_mounts_it_stays_terminating_until_the_pod_goes() {
    let k = Kubectl::start(true);
    k.ok(&["apply", "-f", &k.file("claim.yaml", CLAIM_AND_POD)]);
    assert_eq!(
        k.ok(&["get", "pvc", "data", "-o=jsonpath={.metadata.finalizers}"]),
        "[\"kubernetes.io/pvc-protection\"]"
    );
    k.eventually(&["get", "pod", "app", "-o=jsonpath={.status.phase}"], "Running");
    k.eventually(&["get", "pvc", "data", "-o=jsonpath={.status.phase}"], "Bound");
    let volume = k.ok(&["get", "pvc", "data", "-o=jsonpath={.spec.volumeName}"]);
    assert_eq!(
        k.ok(&["get", "pv", &volume, "-o=jsonpath={.metadata.finalizers}"]),
        "[\"kubernetes.io/pv-protection\"]"
    );
    assert_eq!(k.ok(&["delete", "pvc", "data", "--wait=false"]), "persistentvolumeclaim \"data\" deleted\n");
    // `kubectl get` shows it Terminating, for as long as the Pod is there.
    std::thread::sleep(Duration::from_secs(2));
    let row = k.ok(&["get", "pvc", "data", "--no-headers"]);
    assert!(row.starts_with("data   Terminating"), "{row:?}");
    k.ok(&["delete", "pod", "app"]);
    k.eventually(&["get", "pvc,pv", "-o", "name"], "");
}

#[test]
fn without_the_flag_nothing_creates_pods_or_endpoints() {
    let k = Kubectl::start(false);
    k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("default"))]);
    k.ok(&["expose", "deployment", "web", "--port=80"]);
    // With the built-ins a ReplicaSet appears within a few ticks; give it many times as long.
    for _ in 0..8 {
        std::thread::sleep(TRY_PAUSE);
        assert_eq!(
            k.ok(&["get", "replicasets,pods,endpoints,endpointslices", "-o", "name"]),
            "endpoints/kubernetes\nendpointslice.discovery.k8s.io/kubernetes\n",
            "only the API server's own endpoints, for its `kubernetes` Service"
        );
    }
    // No controller wrote a status: it is the empty struct kube-apiserver answers.
    assert_eq!(k.ok(&["get", "deployment", "web", "-o=jsonpath={.status}"]), "{}");
    // Nor does any namespace get kube-controller-manager's ServiceAccount and ConfigMap.
    assert_eq!(k.ok(&["get", "serviceaccounts,configmaps", "-A", "-o", "name"]), "");
}

/// A StatefulSet `db` of three replicas (`OrderedReady`, the default).
fn statefulset() -> StatefulSet {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}
            }
        }
    }))
    .expect("a valid StatefulSet")
}

#[tokio::test]
async fn a_statefulset_created_with_kube_rs_gets_its_pods_in_order_each_after_the_previous_runs() {
    let served = spawn(ServeConfig::default(), true).expect("the server starts");
    let client = Client::try_from(kube::Config::new(served.url().parse().expect("a URL"))).expect("a client");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let events = watcher::watcher(pods, watcher::Config::default().labels("app=db"));
    let sets: Api<StatefulSet> = Api::default_namespaced(client);
    sets.create(&PostParams::default(), &statefulset()).await.expect("the StatefulSet is created");

    // Every Pod as first seen, and which Pods were already Running at that moment.
    let mut created: Vec<(String, Vec<String>)> = Vec::new();
    let mut running: Vec<String> = Vec::new();
    let mut events = std::pin::pin!(events);
    let deadline = TRY_PAUSE * u32::try_from(TRIES_MAX).expect("a small bound");
    let watched = tokio::time::timeout(deadline, async {
        while running.len() < 3 {
            let Some(event) = events.next().await else { break };
            let (Ok(Event::Apply(pod)) | Ok(Event::InitApply(pod))) = event else { continue };
            let name = pod.name_any();
            if !created.iter().any(|(seen, _)| *seen == name) {
                created.push((name.clone(), running.clone()));
            }
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if phase == Some("Running") && !running.contains(&name) {
                running.push(name);
            }
        }
    })
    .await;
    assert!(watched.is_ok(), "the Pods did not all run; created {created:?}, running {running:?}");
    let expected: Vec<(String, Vec<String>)> = vec![
        ("db-0".to_owned(), vec![]),
        ("db-1".to_owned(), vec!["db-0".to_owned()]),
        ("db-2".to_owned(), vec!["db-0".to_owned(), "db-1".to_owned()]),
    ];
    assert_eq!(created, expected);
    assert_eq!(running, ["db-0", "db-1", "db-2"]);
    drop(served);
}

#[test]
fn builtins_started_on_a_served_model_reconcile_until_stopped_and_then_no_more() {
    let k = Kubectl::start(false);
    let builtins = Builtins::start(k.live()).expect("the built-ins start");
    k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("default"))]);
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
    assert_eq!(builtins.stop(), Verdict::Pass);
    k.ok(&["scale", "deployment", "web", "--replicas=3"]);
    for _ in 0..8 {
        std::thread::sleep(TRY_PAUSE);
        assert_eq!(k.ok(&["get", "pods", "-l", "app=web", PHASES]), "Running Running");
    }
}

// The kubelet-lite registers node-1 as a kubelet does, so `kubectl get nodes`, `cordon`,
// `drain` and `uncordon` work: a cordoned node takes no new Pod (the scheduler's message says
// why), drain evicts the Deployment's Pods and their replacements wait, uncordon runs them.
#[test]
fn the_kubelets_node_is_listed_and_cordon_drain_and_uncordon_move_pods_as_on_a_cluster() {
    let k = Kubectl::start(true);
    k.eventually(&["get", "nodes", "-o=jsonpath={.items[*].metadata.name}"], "node-1");
    let ready = "-o=jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
    assert_eq!(k.ok(&["get", "node", "node-1", ready]), "True");
    k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("default"))]);
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
    let output = k.ok(&["drain", "node-1", "--ignore-daemonsets", "--timeout=60s"]);
    assert!(output.contains("node/node-1 drained"), "{output}");
    assert!(k.ok(&["get", "node", "node-1"]).contains("Ready,SchedulingDisabled"));
    // The replacements wait: the only node is cordoned.
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Pending Pending");
    let scheduled = "-o=jsonpath={.items[*].status.conditions[?(@.type==\"PodScheduled\")].message}";
    let waiting = "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 \
                   Preemption is not helpful for scheduling.";
    k.eventually(&["get", "pods", "-l", "app=web", scheduled], &format!("{waiting} {waiting}"));
    k.ok(&["uncordon", "node-1"]);
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
}

// `kubectl taint ... :NoExecute` evicts the Pods that do not tolerate the taint, as the taint
// eviction controller does on a cluster, and their replacements wait; untainted, they run.
// Cordoned, the node carries the `unschedulable` taint the node lifecycle controller adds.
#[test]
fn a_no_execute_taint_set_with_kubectl_evicts_the_pods_and_a_cordon_is_a_taint() {
    let k = Kubectl::start(true);
    k.eventually(&["get", "nodes", "-o=jsonpath={.items[*].metadata.name}"], "node-1");
    k.ok(&["apply", "-f", &k.file("web.yaml", &deployment("default"))]);
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
    let taints = "-o=jsonpath={.spec.taints[*].key}";
    k.ok(&["cordon", "node-1"]);
    k.eventually(&["get", "node", "node-1", taints], "node.kubernetes.io/unschedulable");
    k.ok(&["uncordon", "node-1"]);
    k.eventually(&["get", "node", "node-1", taints], "");
    k.ok(&["taint", "nodes", "node-1", "maintenance=now:NoExecute"]);
    let scheduled = "-o=jsonpath={.items[*].status.conditions[?(@.type==\"PodScheduled\")].message}";
    let waiting = "0/1 nodes are available: 1 node(s) had untolerated taint {maintenance: now}. preemption: 0/1 \
                   nodes are available: 1 Preemption is not helpful for scheduling.";
    k.eventually(&["get", "pods", "-l", "app=web", scheduled], &format!("{waiting} {waiting}"));
    let reasons = "-o=jsonpath={.items[*].reason}";
    let evictions = k.ok(&["get", "events", "--field-selector=reason=TaintManagerEviction", reasons]);
    assert_eq!(evictions, "TaintManagerEviction TaintManagerEviction");
    k.ok(&["taint", "nodes", "node-1", "maintenance-"]);
    k.eventually(&["get", "pods", "-l", "app=web", PHASES], "Running Running");
}

// `kubectl run --restart=Never` and a Helm test Pod end Succeeded (kube-sim runs no command; a
// Pod that would not be restarted is taken to finish), where before they ran until deleted and
// `helm test` timed out.
#[test]
fn a_pod_run_with_restart_never_completes() {
    let k = Kubectl::start(true);
    k.ok(&["run", "once", "--image=busybox", "--restart=Never", "--", "true"]);
    k.eventually(&["get", "pod", "once", "-o=jsonpath={.status.phase}"], "Succeeded");
    let output = k.ok(&["wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/once", "--timeout=5s"]);
    assert_eq!(output, "pod/once condition met\n");
}

#[test]
fn a_pod_resized_in_place_through_kube_rs_reports_its_new_resources_and_a_refusal_is_upstreams() {
    // `pods/resize` through the HTTP server and a real client: listed in discovery, taken by a
    // patch, made by the kubelet-lite, and refused in kube-apiserver's words.
    let k = Kubectl::start(true);
    let manifest = k.file(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - name: app\n    image: nginx\n    \
         resources:\n      requests: {cpu: 100m, memory: 64Mi}\n      limits: {cpu: 200m, memory: 128Mi}\n",
    );
    k.ok(&["apply", "-f", &manifest]);
    k.eventually(
        &["get", "pod", "web", "-o=jsonpath={.status.containerStatuses[0].allocatedResources.cpu}"],
        "100m",
    );
    assert!(
        k.ok(&["get", "--raw", "/api/v1"]).contains(r#""name":"pods/resize""#),
        "pods/resize is discovered"
    );
    let Server::InProcess(served) = &k.server else { panic!("an in-process server") };
    let url = served.url();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let refused = runtime.block_on(async {
        let client = Client::try_from(kube::Config::new(url.parse().expect("a URL"))).expect("a client");
        let pods: Api<Pod> = Api::default_namespaced(client);
        let params = kube::api::PatchParams::default();
        let up = serde_json::json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "150m"}}}]}});
        pods.patch_subresource("resize", "web", &params, &kube::api::Patch::Strategic(&up)).await.expect("resized");
        let down = serde_json::json!({"spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "96Mi"}}}]}});
        pods.patch_subresource("resize", "web", &params, &kube::api::Patch::Strategic(&down)).await
    });
    let Err(kube::Error::Api(status)) = refused else {
        panic!("a memory limit lowered without a restart policy")
    };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains(
            "spec.containers[0].resources.limits[memory]: Forbidden: memory limits cannot be decreased unless resizePolicy is RestartContainer"
        ),
        "{}",
        status.message
    );
    k.eventually(
        &["get", "pod", "web", "-o=jsonpath={.status.containerStatuses[0].resources.requests.cpu}"],
        "150m",
    );
}
