//! `kube-sim serve --with-builtins` through the real kubectl and helm (issue 19): rollouts of
//! Deployments, StatefulSets and DaemonSets (`set image`, `rollout status`, `history`, `undo`,
//! `pause`, `resume`), CronJobs on the cluster's clock, the built-ins' Events in `kubectl events`
//! and `describe`, and a helm chart installed, upgraded, rolled back and uninstalled.
//!
//! Each test starts its own server in-process, its clock sped up [`TIME_SCALE`] times (so a
//! minute of the cluster's time, a CronJob's period, passes in a second), and polls with a
//! bounded number of tries ([`TRIES_MAX`] × [`TRY_PAUSE`], a generous bound, never an assertion
//! on time). kubectl and helm come from the PATH (`.ci/install-kubectl`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use kube_sim::serve::{ServeConfig, Served, spawn};
use serde_json::Value;

/// How many times as fast as the wall clock the served cluster's clock runs.
const TIME_SCALE: u32 = 60;
/// How many times a test polls for what the controllers should bring about.
const TRIES_MAX: usize = 240;
/// The pause between two polls (so the bound is about a minute of wall time).
const TRY_PAUSE: Duration = Duration::from_millis(250);
/// How long `kubectl rollout status` and `helm --wait` may wait (wall time).
const WAIT: &str = "90s";

/// A served model with the built-ins, and kubectl and helm configured for it.
struct Cluster {
    _served: Served,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Cluster {
    fn start() -> Cluster {
        let config = ServeConfig { time_scale: TIME_SCALE, ..ServeConfig::default() };
        let served = spawn(config, true).expect("the server starts");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster: {{server: '{}'}}\n\
             users:\n- name: sim\n  user: {{}}\ncontexts:\n- name: sim\n  context: {{cluster: sim, user: sim, namespace: default}}\n\
             current-context: sim\n",
            served.url()
        );
        std::fs::write(&kubeconfig, config).expect("writing the kubeconfig");
        Cluster { _served: served, dir, kubeconfig }
    }

    fn tool(&self, tool: &str, args: &[&str]) -> Output {
        let mut command = Command::new(tool);
        command.arg("--kubeconfig").arg(&self.kubeconfig);
        if tool == "kubectl" {
            command.arg("--cache-dir").arg(self.dir.path().join("cache"));
        } else {
            // helm keeps its caches and configuration under these; not the user's.
            for (var, sub) in [("HELM_CACHE_HOME", "helm-cache"), ("HELM_CONFIG_HOME", "helm-config")] {
                command.env(var, self.dir.path().join(sub));
            }
            command.env("HELM_DATA_HOME", self.dir.path().join("helm-data"));
        }
        match command.args(args).output() {
            Ok(output) => output,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                panic!("{tool} is not installed: these tests run the real {tool} (`.ci/install-kubectl`)")
            }
            Err(e) => panic!("running {tool} {args:?}: {e}"),
        }
    }

    /// Run kubectl, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        succeeded("kubectl", args, &self.tool("kubectl", args))
    }

    /// Run helm, which must succeed; its stdout.
    fn helm(&self, args: &[&str]) -> String {
        succeeded("helm", args, &self.tool("helm", args))
    }

    /// `kubectl get <args> -o json`, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&args)).expect("kubectl prints JSON")
    }

    /// Poll `kubectl args` until `done` holds for its stdout; fails with the last answer.
    fn until(&self, args: &[&str], what: &str, done: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..TRIES_MAX {
            let output = self.tool("kubectl", args);
            last = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            if output.status.success() && done(&String::from_utf8_lossy(&output.stdout)) {
                return String::from_utf8_lossy(&output.stdout).into_owned();
            }
            std::thread::sleep(TRY_PAUSE);
        }
        panic!("kubectl {args:?} never showed {what}; last answer: {last:?}");
    }

    /// Poll `kubectl args` until its stdout is `expected`.
    fn eventually(&self, args: &[&str], expected: &str) {
        self.until(args, &format!("{expected:?}"), |out| out == expected);
    }

    /// `kubectl apply -f` of `yaml`.
    fn apply(&self, name: &str, yaml: &str) -> String {
        let path = self.file(name, yaml);
        self.ok(&["apply", "-f", &path])
    }

    /// Write `text` to `name` in the temporary directory (creating its parents); its path.
    fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("creating a directory");
        }
        std::fs::write(&path, text).expect("writing a file");
        path.to_string_lossy().into_owned()
    }

    /// `kubectl rollout status <what>`, which must succeed; its last line.
    fn rollout_status(&self, what: &str) -> String {
        let out = self.ok(&["rollout", "status", what, &format!("--timeout={WAIT}")]);
        out.lines().last().unwrap_or_default().to_owned()
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }
}

fn succeeded(tool: &str, args: &[&str], output: &Output) -> String {
    assert!(
        output.status.success(),
        "{tool} {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The items of a list, as JSON.
fn items(list: &Value) -> Vec<&Value> {
    list["items"].as_array().map(|a| a.iter().collect()).unwrap_or_default()
}

fn name(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or_default()
}

fn image(pod: &Value) -> &str {
    pod["spec"]["containers"][0]["image"].as_str().unwrap_or_default()
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn is_terminating(object: &Value) -> bool {
    !object["metadata"]["deletionTimestamp"].is_null()
}

/// A Deployment `web` of `replicas` Pods running `image`, with `extra` lines under `spec`.
fn deployment(replicas: u32, image: &str, extra: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
{extra}  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: {image}
"
    )
}

/// The Deployment's Pods that are not being deleted: (name, image, ready).
fn live_pods(k: &Cluster, selector: &str) -> Vec<(String, String, bool)> {
    let pods = k.json(&["get", "pods", "-l", selector]);
    items(&pods)
        .into_iter()
        .filter(|p| !is_terminating(p))
        .map(|p| (name(p).to_owned(), image(p).to_owned(), is_ready(p)))
        .collect()
}

/// The ReplicaSets of `web`: (name, revision annotation, spec.replicas, image).
fn replica_sets(k: &Cluster) -> Vec<(String, String, i64, String)> {
    let list = k.json(&["get", "replicasets", "-l", "app=web"]);
    let mut sets: Vec<(String, String, i64, String)> = items(&list)
        .into_iter()
        .map(|rs| {
            let revision = rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"].as_str();
            (
                name(rs).to_owned(),
                revision.unwrap_or_default().to_owned(),
                rs["spec"]["replicas"].as_i64().unwrap_or(-1),
                rs["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    sets.sort_by_key(|(_, revision, _, _)| revision.parse::<u64>().unwrap_or(0));
    sets
}

/// The revisions `kubectl rollout history` lists.
fn history(k: &Cluster, what: &str) -> Vec<String> {
    let out = k.ok(&["rollout", "history", what]);
    out.lines()
        .skip_while(|l| !l.starts_with("REVISION"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

const WEB: &str = "deployment/web";
const WEB_IMAGE: &str = "-o=jsonpath={.spec.template.spec.containers[0].image}";
const POD_IMAGE: &str = "-o=jsonpath={.spec.containers[0].image}";

#[test]
fn kubectl_set_image_rolls_a_deployment_out_and_rollout_undo_brings_back_the_previous_image() {
    let k = Cluster::start();
    k.apply("web.yaml", &deployment(3, "nginx:1", ""));
    assert_eq!(k.rollout_status(WEB), "deployment \"web\" successfully rolled out");
    assert_eq!(k.ok(&["set", "image", WEB, "app=nginx:2"]), "deployment.apps/web image updated\n");
    assert_eq!(k.rollout_status(WEB), "deployment \"web\" successfully rolled out");
    // `rollout status` returned: every Pod that is not being deleted is a new one, and ready.
    let pods = live_pods(&k, "app=web");
    assert_eq!(pods.len(), 3, "{pods:?}");
    assert!(pods.iter().all(|(_, image, ready)| image == "nginx:2" && *ready), "{pods:?}");
    let sets = replica_sets(&k);
    let summary: Vec<(&str, i64, &str)> =
        sets.iter().map(|(_, r, n, i)| (r.as_str(), *n, i.as_str())).collect();
    assert_eq!(summary, [("1", 0, "nginx:1"), ("2", 3, "nginx:2")]);
    assert_eq!(
        k.ok(&["get", WEB, "-o=jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}"]),
        "2"
    );
    assert_eq!(history(&k, WEB), ["1", "2"]);
    let revision_2 = k.ok(&["rollout", "history", WEB, "--revision=2"]);
    assert!(revision_2.contains("Image:\tnginx:2"), "{revision_2}");

    assert_eq!(k.ok(&["rollout", "undo", WEB]), "deployment.apps/web rolled back\n");
    assert_eq!(k.rollout_status(WEB), "deployment \"web\" successfully rolled out");
    assert_eq!(k.ok(&["get", WEB, WEB_IMAGE]), "nginx:1");
    let pods = live_pods(&k, "app=web");
    assert!(pods.iter().all(|(_, image, ready)| image == "nginx:1" && *ready), "{pods:?}");
    // The old ReplicaSet came back as revision 3; revision 1 is gone from the history.
    assert_eq!(history(&k, WEB), ["2", "3"]);
    assert_eq!(replica_sets(&k).len(), 2);

    k.ok(&["rollout", "undo", WEB, "--to-revision=2"]);
    assert_eq!(k.rollout_status(WEB), "deployment \"web\" successfully rolled out");
    assert_eq!(k.ok(&["get", WEB, WEB_IMAGE]), "nginx:2");
    assert_eq!(history(&k, WEB), ["3", "4"]);
    let undo = k.tool("kubectl", &["rollout", "undo", WEB, "--to-revision=9"]);
    assert!(!undo.status.success());
    assert!(String::from_utf8_lossy(&undo.stderr).contains("unable to find specified revision 9 in history"));
}

#[test]
fn a_paused_deployment_does_not_roll_out_a_new_image_until_resumed() {
    let k = Cluster::start();
    k.apply("web.yaml", &deployment(2, "nginx:1", ""));
    k.rollout_status(WEB);
    assert_eq!(k.ok(&["rollout", "pause", WEB]), "deployment.apps/web paused\n");
    k.ok(&["set", "image", WEB, "app=nginx:2"]);
    let progressing = "-o=jsonpath={.status.conditions[?(@.type==\"Progressing\")].reason}";
    k.eventually(&["get", WEB, progressing], "DeploymentPaused");
    // Many rollout steps' worth of the cluster's time (each poll is 15 s of it): nothing moves.
    for _ in 0..12 {
        let sets = replica_sets(&k);
        assert_eq!(sets.len(), 1, "a paused Deployment made a new ReplicaSet: {sets:?}");
        let pods = live_pods(&k, "app=web");
        assert!(pods.iter().all(|(_, image, _)| image == "nginx:1"), "{pods:?}");
        std::thread::sleep(TRY_PAUSE);
    }
    assert_eq!(k.ok(&["rollout", "resume", WEB]), "deployment.apps/web resumed\n");
    assert_eq!(k.rollout_status(WEB), "deployment \"web\" successfully rolled out");
    let pods = live_pods(&k, "app=web");
    assert_eq!(pods.len(), 2, "{pods:?}");
    assert!(pods.iter().all(|(_, image, ready)| image == "nginx:2" && *ready), "{pods:?}");
    k.eventually(&["get", WEB, progressing], "NewReplicaSetAvailable");
}

#[test]
fn revision_history_limit_keeps_only_that_many_old_replica_sets() {
    let k = Cluster::start();
    k.apply("web.yaml", &deployment(1, "nginx:1", "  revisionHistoryLimit: 1\n"));
    k.rollout_status(WEB);
    for image in ["nginx:2", "nginx:3", "nginx:4"] {
        k.ok(&["set", "image", WEB, &format!("app={image}")]);
        k.rollout_status(WEB);
    }
    k.until(&["get", "replicasets", "-l", "app=web", "-o", "name"], "two ReplicaSets", |out| {
        out.lines().count() == 2
    });
    let sets = replica_sets(&k);
    let summary: Vec<(&str, i64, &str)> =
        sets.iter().map(|(_, r, n, i)| (r.as_str(), *n, i.as_str())).collect();
    assert_eq!(summary, [("3", 0, "nginx:3"), ("4", 1, "nginx:4")]);
    assert_eq!(history(&k, WEB), ["3", "4"]);
}

#[test]
fn a_rollout_whose_pods_never_become_ready_exceeds_its_progress_deadline_and_rollout_status_fails() {
    let k = Cluster::start();
    k.apply("web.yaml", &deployment(2, "nginx:1", "  progressDeadlineSeconds: 60\n"));
    k.rollout_status(WEB);
    // The kubelet-lite makes the containers of a Pod with this annotation fail (CrashLoopBackOff);
    // the readiness probe keeps a restarted one unready for the moment it runs, as on a node.
    let failing = r#"{"spec":{"template":{"metadata":{"annotations":{"kube-sim.io/fail":"true"}},
        "spec":{"containers":[{"name":"app","readinessProbe":{"tcpSocket":{"port":80}}}]}}}}"#;
    k.ok(&["patch", WEB, "-p", failing]);
    let status = k.tool("kubectl", &["rollout", "status", WEB, &format!("--timeout={WAIT}")]);
    assert!(!status.status.success(), "{}", String::from_utf8_lossy(&status.stdout));
    assert_eq!(
        String::from_utf8_lossy(&status.stderr),
        "error: deployment \"web\" exceeded its progress deadline\n"
    );
    let condition = k.ok(&[
        "get",
        WEB,
        "-o=jsonpath={.status.conditions[?(@.type==\"Progressing\")]['status','reason','message']}",
    ]);
    let new_rs = replica_sets(&k).last().map(|(name, ..)| name.clone()).unwrap_or_default();
    assert_eq!(
        condition,
        format!("False ProgressDeadlineExceeded ReplicaSet \"{new_rs}\" has timed out progressing.")
    );
    // maxUnavailable 25 % of 2 rounds down to 0: both old Pods still serve.
    let old = live_pods(&k, "app=web").into_iter().filter(|(_, _, ready)| *ready).count();
    assert_eq!(old, 2);
}

/// A StatefulSet `db` of three Pods running `image`, with `extra` lines under `spec`.
fn statefulset(image: &str, extra: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db}}
spec:
  replicas: 3
  serviceName: db
  selector: {{matchLabels: {{app: db}}}}
{extra}  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      terminationGracePeriodSeconds: 2
      containers: [{{name: db, image: '{image}'}}]
"
    )
}

const DB: &str = "statefulset/db";

/// The set's Pods by name: (name, image, revision label, creation time).
fn db_pods(k: &Cluster) -> Vec<(String, String, String, String)> {
    let pods = k.json(&["get", "pods", "-l", "app=db"]);
    let mut pods: Vec<(String, String, String, String)> = items(&pods)
        .into_iter()
        .filter(|p| !is_terminating(p))
        .map(|p| {
            let revision = p["metadata"]["labels"]["controller-revision-hash"].as_str().unwrap_or_default();
            let created = p["metadata"]["creationTimestamp"].as_str().unwrap_or_default();
            (name(p).to_owned(), image(p).to_owned(), revision.to_owned(), created.to_owned())
        })
        .collect();
    pods.sort();
    pods
}

fn revisions(k: &Cluster) -> (String, String) {
    let out = k.ok(&["get", DB, "-o=jsonpath={.status.currentRevision} {.status.updateRevision}"]);
    let (current, update) = out.split_once(' ').unwrap_or_default();
    (current.to_owned(), update.to_owned())
}

#[test]
fn a_statefulset_rolls_out_a_new_image_highest_ordinal_first_and_rollout_undo_rolls_it_back() {
    let k = Cluster::start();
    k.apply("db.yaml", &statefulset("postgres:16", ""));
    assert_eq!(k.rollout_status(DB), "partitioned roll out complete: 3 new pods have been updated...");
    let (first, _) = revisions(&k);
    k.ok(&["set", "image", DB, "db=postgres:17"]);
    assert_eq!(k.rollout_status(DB), "partitioned roll out complete: 3 new pods have been updated...");
    let (current, update) = revisions(&k);
    assert_eq!(current, update);
    assert_ne!(update, first);
    let pods = db_pods(&k);
    let images: Vec<(&str, &str, &str)> =
        pods.iter().map(|(n, i, r, _)| (n.as_str(), i.as_str(), r.as_str())).collect();
    assert_eq!(
        images,
        [
            ("db-0", "postgres:17", update.as_str()),
            ("db-1", "postgres:17", update.as_str()),
            ("db-2", "postgres:17", update.as_str())
        ]
    );
    // Replaced one at a time from the highest ordinal down (each waits out a 2 s grace period
    // of the one before, so the creation times, in seconds, are strictly ordered).
    assert!(pods[2].3 < pods[1].3 && pods[1].3 < pods[0].3, "{pods:?}");
    assert_eq!(
        k.ok(&[
            "get",
            DB,
            "-o=jsonpath={.status.updatedReplicas} {.status.currentReplicas} {.status.readyReplicas}"
        ]),
        "3 3 3"
    );
    assert_eq!(history(&k, DB), ["1", "2"]);

    assert_eq!(k.ok(&["rollout", "undo", DB]), "statefulset.apps/db rolled back\n");
    k.rollout_status(DB);
    let (current, update) = revisions(&k);
    assert_eq!((current.as_str(), update.as_str()), (first.as_str(), first.as_str()));
    let pods = db_pods(&k);
    assert!(
        pods.iter().all(|(_, image, revision, _)| image == "postgres:16" && *revision == first),
        "{pods:?}"
    );
    assert_eq!(history(&k, DB), ["2", "3"]);
}

#[test]
fn a_statefulset_partition_leaves_the_lower_ordinals_on_the_current_revision() {
    let k = Cluster::start();
    let partition = "  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 2}}\n";
    k.apply("db.yaml", &statefulset("postgres:16", partition));
    k.rollout_status(DB);
    k.ok(&["set", "image", DB, "db=postgres:17"]);
    assert_eq!(k.rollout_status(DB), "partitioned roll out complete: 1 new pods have been updated...");
    let (current, update) = revisions(&k);
    assert_ne!(current, update);
    let pods = db_pods(&k);
    let images: Vec<(&str, &str, &str)> =
        pods.iter().map(|(n, i, r, _)| (n.as_str(), i.as_str(), r.as_str())).collect();
    assert_eq!(
        images,
        [
            ("db-0", "postgres:16", current.as_str()),
            ("db-1", "postgres:16", current.as_str()),
            ("db-2", "postgres:17", update.as_str())
        ]
    );
    // Lowering the partition rolls the rest.
    k.ok(&["patch", DB, "-p", r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}"#]);
    assert_eq!(k.rollout_status(DB), "partitioned roll out complete: 3 new pods have been updated...");
    k.until(&["get", DB, "-o=jsonpath={.status.currentRevision}"], "the update revision as current", |c| {
        c == update
    });
    assert!(db_pods(&k).iter().all(|(_, image, ..)| image == "postgres:17"));
}

#[test]
fn an_on_delete_statefulset_replaces_a_pod_only_when_it_is_deleted() {
    let k = Cluster::start();
    k.apply("db.yaml", &statefulset("postgres:16", "  updateStrategy: {type: OnDelete}\n"));
    k.until(&["get", DB, "-o=jsonpath={.status.readyReplicas}"], "3 ready", |r| r == "3");
    k.ok(&["set", "image", DB, "db=postgres:17"]);
    let (_, update) = {
        k.until(&["get", DB, "-o=jsonpath={.status.observedGeneration}"], "generation 2", |g| g == "2");
        revisions(&k)
    };
    for _ in 0..12 {
        assert!(db_pods(&k).iter().all(|(_, image, ..)| image == "postgres:16"));
        std::thread::sleep(TRY_PAUSE);
    }
    let status = k.tool("kubectl", &["rollout", "status", DB]);
    assert_eq!(
        String::from_utf8_lossy(&status.stderr),
        "error: rollout status is only available for RollingUpdate strategy type\n"
    );
    k.ok(&["delete", "pod", "db-1"]);
    k.until(&["get", "pod", "db-1", POD_IMAGE], "postgres:17", |i| i == "postgres:17");
    k.until(&["get", DB, "-o=jsonpath={.status.readyReplicas}"], "3 ready", |r| r == "3");
    let pods = db_pods(&k);
    let images: Vec<(&str, &str)> = pods.iter().map(|(n, i, ..)| (n.as_str(), i.as_str())).collect();
    assert_eq!(images, [("db-0", "postgres:16"), ("db-1", "postgres:17"), ("db-2", "postgres:16")]);
    assert_eq!(pods[1].2, update);
}

#[test]
fn a_parallel_statefulset_creates_every_pod_without_waiting_for_the_previous_to_be_ready() {
    let k = Cluster::start();
    // Pods that never become ready (crash-looping, with a readiness probe that keeps a restarted
    // container unready while it runs): OrderedReady would stop at db-0.
    let failing = |policy: &str| {
        statefulset("postgres:16", &format!("  podManagementPolicy: {policy}\n"))
            .replace(
                "metadata: {labels: {app: db}}",
                "metadata: {labels: {app: db}, annotations: {kube-sim.io/fail: 'true'}}",
            )
            .replace(
                "containers: [{name: db, image: 'postgres:16'}]",
                "containers: [{name: db, image: 'postgres:16', readinessProbe: {tcpSocket: {port: 5432}}}]",
            )
    };
    k.apply("db.yaml", &failing("Parallel"));
    k.eventually(&["get", "pods", "-l", "app=db", "-o=jsonpath={.items[*].metadata.name}"], "db-0 db-1 db-2");
    // No Pod ready: `readyReplicas` is 0, which Go's `omitempty` leaves out.
    assert_eq!(k.ok(&["get", DB, "-o=jsonpath={.status.replicas} {.status.readyReplicas}"]), "3 ");

    k.ok(&["delete", DB, "--wait=false"]);
    k.eventually(&["get", "pods", "-o", "name"], "");
    k.apply("db.yaml", &failing("OrderedReady"));
    k.eventually(&["get", "pods", "-l", "app=db", "-o=jsonpath={.items[*].metadata.name}"], "db-0");
    for _ in 0..8 {
        assert_eq!(k.ok(&["get", "pods", "-l", "app=db", "-o=jsonpath={.items[*].metadata.name}"]), "db-0");
        std::thread::sleep(TRY_PAUSE);
    }
}

fn node(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}\n"
    )
}

const AGENT: &str = "daemonset/agent";

/// The DaemonSet's Pods that are not being deleted: (node, image), by node.
fn agents(k: &Cluster) -> Vec<(String, String)> {
    let pods = k.json(&["get", "pods", "-l", "app=agent"]);
    let mut pods: Vec<(String, String)> = items(&pods)
        .into_iter()
        .filter(|p| !is_terminating(p))
        .map(|p| (p["spec"]["nodeName"].as_str().unwrap_or_default().to_owned(), image(p).to_owned()))
        .collect();
    pods.sort();
    pods
}

#[test]
fn a_daemonset_runs_one_pod_per_node_a_new_node_gets_one_and_an_image_change_rolls_out() {
    let k = Cluster::start();
    let nodes: String = ["node-a", "node-b", "node-c"].map(node).join("---\n");
    assert_eq!(
        k.apply("nodes.yaml", &nodes),
        "node/node-a created\nnode/node-b created\nnode/node-c created\n"
    );
    k.apply(
        "agent.yaml",
        "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      terminationGracePeriodSeconds: 2
      containers: [{name: agent, image: 'agent:1'}]
",
    );
    assert_eq!(k.rollout_status(AGENT), "daemon set \"agent\" successfully rolled out");
    let on = |nodes: &[&str], image: &str| -> Vec<(String, String)> {
        nodes.iter().map(|n| ((*n).to_owned(), image.to_owned())).collect()
    };
    // node-1 is the kubelet-lite's own Node, registered at start.
    assert_eq!(agents(&k), on(&["node-1", "node-a", "node-b", "node-c"], "agent:1"));
    k.apply("node-d.yaml", &node("node-d"));
    k.until(&["get", AGENT, "-o=jsonpath={.status.numberReady}"], "5 ready", |n| n == "5");
    assert_eq!(agents(&k), on(&["node-1", "node-a", "node-b", "node-c", "node-d"], "agent:1"));
    k.ok(&["set", "image", AGENT, "agent=agent:2"]);
    assert_eq!(k.rollout_status(AGENT), "daemon set \"agent\" successfully rolled out");
    assert_eq!(agents(&k), on(&["node-1", "node-a", "node-b", "node-c", "node-d"], "agent:2"));
    assert_eq!(
        k.ok(&["get", AGENT, "-o=jsonpath={.status.desiredNumberScheduled} {.status.updatedNumberScheduled} {.status.numberAvailable}"]),
        "5 5 5"
    );
    assert_eq!(history(&k, AGENT), ["1", "2"]);
    let table = k.ok(&["get", AGENT]);
    let header: Vec<&str> = table.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR", "AGE"]
    );
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..7], ["agent", "5", "5", "5", "5", "5", "<none>"]);
    k.ok(&["delete", "node", "node-b"]);
    k.until(&["get", AGENT, "-o=jsonpath={.status.desiredNumberScheduled}"], "4 desired", |n| n == "4");
}

/// A CronJob `tick` due every minute with `policy`; its Pods fail (and so stay active) when
/// `hang`.
fn cronjob(policy: &str, hang: bool) -> String {
    let annotations = if hang { "annotations: {kube-sim.io/fail: 'true'}" } else { "annotations: {}" };
    format!(
        "apiVersion: batch/v1
kind: CronJob
metadata: {{name: tick}}
spec:
  schedule: '* * * * *'
  concurrencyPolicy: {policy}
  jobTemplate:
    spec:
      template:
        metadata: {{{annotations}}}
        spec:
          restartPolicy: OnFailure
          terminationGracePeriodSeconds: 1
          containers: [{{name: tick, image: busybox, command: [date]}}]
"
    )
}

/// The names of the Jobs that are not being deleted, sorted.
fn jobs(k: &Cluster) -> Vec<String> {
    let list = k.json(&["get", "jobs"]);
    let mut names: Vec<String> =
        items(&list).into_iter().filter(|j| !is_terminating(j)).map(|j| name(j).to_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_cronjob_fires_each_minute_of_the_clusters_clock_and_its_jobs_complete() {
    let k = Cluster::start();
    k.apply("tick.yaml", &cronjob("Allow", false));
    // Two runs, each done: `lastSuccessfulTime` is set and the Pods completed.
    k.until(&["get", "jobs", "-o=jsonpath={.items[*].status.succeeded}"], "two succeeded Jobs", |s| {
        s.split(' ').filter(|n| *n == "1").count() >= 2
    });
    let status = k.json(&["get", "cronjob", "tick"]);
    assert!(status["status"]["lastScheduleTime"].as_str().is_some_and(|t| t.ends_with(":00Z")), "{status}");
    assert!(status["status"]["lastSuccessfulTime"].is_string(), "{status}");
    let owners = k.ok(&["get", "jobs", "-o=jsonpath={.items[*].metadata.ownerReferences[0].name}"]);
    assert!(owners.split(' ').all(|o| o == "tick"), "{owners}");
    let pods = k.ok(&["get", "pods", "-o=jsonpath={.items[*].status.phase}"]);
    assert!(pods.split(' ').any(|p| p == "Succeeded"), "{pods}");
    // The Jobs are named after their due minute.
    assert!(jobs(&k).iter().all(|j| j.strip_prefix("tick-").is_some_and(|m| m.parse::<u64>().is_ok())));

    let table = k.ok(&["get", "cronjob", "tick"]);
    let header: Vec<&str> = table.lines().next().unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]);
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(
        row.starts_with("tick")
            && row.contains("* * * * *")
            && row.contains("<none>")
            && row.contains("False"),
        "{table}"
    );
    // Suspended, it runs no more Jobs, so the manual one stays within the history limit (3
    // finished Jobs, the oldest deleted first; a Job made from the CronJob counts too).
    k.ok(&["patch", "cronjob", "tick", "-p", r#"{"spec":{"suspend":true}}"#]);
    k.until(&["get", "cronjob", "tick"], "SUSPEND True", |t| t.contains("True"));
    assert_eq!(k.ok(&["create", "job", "now", "--from=cronjob/tick"]), "job.batch/now created\n");
    k.eventually(&["get", "job", "now", "-o=jsonpath={.status.succeeded}"], "1");
    assert_eq!(k.ok(&["get", "job", "now", "-o=jsonpath={.metadata.ownerReferences[0].kind}"]), "CronJob");
}

#[test]
fn a_forbid_cronjob_skips_its_runs_while_one_is_active() {
    let k = Cluster::start();
    k.apply("tick.yaml", &cronjob("Forbid", true));
    k.until(&["get", "jobs", "-o", "name"], "a Job", |out| out.lines().count() == 1);
    let first = jobs(&k);
    k.until(
        &["get", "events", "--field-selector", "reason=JobAlreadyActive", "-o=jsonpath={.items[*].message}"],
        "a JobAlreadyActive event",
        |m| {
            m.contains("Not starting job because prior execution is running and concurrency policy is Forbid")
        },
    );
    assert_eq!(jobs(&k), first);
    let active = k.ok(&["get", "cronjob", "tick", "-o=jsonpath={.status.active[*].name}"]);
    assert_eq!(active, first[0]);
}

#[test]
fn a_replace_cronjob_deletes_the_active_job_for_the_next_run() {
    let k = Cluster::start();
    k.apply("tick.yaml", &cronjob("Replace", true));
    k.until(&["get", "jobs", "-o", "name"], "a Job", |out| out.lines().count() == 1);
    let first = jobs(&k);
    k.until(&["get", "cronjob", "tick", "-o=jsonpath={.status.active[*].name}"], "another active Job", |a| {
        !a.is_empty() && a != first[0]
    });
    k.until(&["get", "jobs", "-o=jsonpath={.items[*].metadata.name}"], "the first Job gone", |names| {
        !names.split(' ').any(|n| n == first[0])
    });
    let deleted = k.ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=SuccessfulDelete",
        "-o=jsonpath={.items[*].message}",
    ]);
    assert!(deleted.contains(&format!("Deleted job {}", first[0])), "{deleted}");
    assert_eq!(
        k.ok(&["get", "cronjob", "tick", "-o=jsonpath={.status.active[*].name}"]).split(' ').count(),
        1
    );
}

#[test]
fn kubectl_events_and_describe_show_the_builtins_events_with_their_reasons_and_sources() {
    let k = Cluster::start();
    k.apply("web.yaml", &deployment(2, "nginx:1", ""));
    k.rollout_status(WEB);
    k.ok(&["set", "image", WEB, "app=nginx:2"]);
    k.rollout_status(WEB);
    let sets = replica_sets(&k);
    let (old, new) = (&sets[0].0, &sets[1].0);
    let scaled = k.until(&["events", "--for", WEB], "the scale-down of the old ReplicaSet", |out| {
        out.contains(&format!("Scaled down replica set {old} from 1 to 0"))
    });
    for message in [
        format!("Scaled up replica set {old} from 0 to 2"),
        format!("Scaled up replica set {new} from 0 to 1"),
        format!("Scaled down replica set {old} from 2 to 1"),
    ] {
        assert!(scaled.contains(&message), "{message:?} missing from\n{scaled}");
    }
    assert!(
        scaled.lines().skip(1).all(|l| l.contains("Normal") && l.contains("ScalingReplicaSet")),
        "{scaled}"
    );
    let described = k.ok(&["describe", WEB]);
    let events = described.split("Events:").nth(1).unwrap_or_default();
    assert!(events.contains("deployment-controller"), "{described}");
    assert!(events.contains("ScalingReplicaSet"), "{events}");
    assert!(events.contains(&format!("Scaled up replica set {new} from 0 to 1")), "{events}");

    let rs = k.ok(&["describe", "replicaset", new]);
    let pod = live_pods(&k, "app=web").into_iter().next().map(|(name, ..)| name).unwrap_or_default();
    assert!(rs.contains("replicaset-controller") && rs.contains("SuccessfulCreate"), "{rs}");
    assert!(rs.contains(&format!("Created pod: {pod}")), "{rs}");
    let described = k.ok(&["describe", "pod", &pod]);
    let events = described.split("Events:").nth(1).unwrap_or_default();
    for (reason, from, message) in [
        ("Scheduled", "default-scheduler", format!("Successfully assigned default/{pod} to node-1")),
        ("Pulled", "kubelet", "Container image \"nginx:2\" already present on machine".to_owned()),
        ("Created", "kubelet", "Created container: app".to_owned()),
        ("Started", "kubelet", "Started container app".to_owned()),
    ] {
        let line = events.lines().find(|l| l.contains(reason)).unwrap_or_default();
        assert!(
            line.contains("Normal") && line.contains(from) && line.contains(&message),
            "{reason}: {events}"
        );
    }
    // The old Pods were stopped by the kubelet.
    let killing = k.ok(&["get", "events", "--field-selector", "reason=Killing", "-o", "json"]);
    let killing: Value = serde_json::from_str(&killing).expect("JSON");
    let killed = items(&killing);
    assert_eq!(killed.len(), 2, "{killing}");
    for event in killed {
        assert_eq!(event["message"], "Stopping container app");
        assert_eq!(event["type"], "Normal");
        assert_eq!(event["source"]["component"], "kubelet");
        assert_eq!(event["source"]["host"], "node-1");
        assert_eq!(event["reportingComponent"], "kubelet");
        assert_eq!(event["involvedObject"]["kind"], "Pod");
        assert_eq!(event["involvedObject"]["fieldPath"], "spec.containers{app}");
        assert_eq!(event["count"], 1);
    }
}

/// A chart `web`: a Deployment, a Service and a ConfigMap, with `image` and `replicas` values.
fn chart(k: &Cluster) -> String {
    let files = [
        ("Chart.yaml", "apiVersion: v2\nname: web\nversion: 0.1.0\n"),
        ("values.yaml", "image: nginx:1\nreplicas: 2\ngreeting: hello\n"),
        (
            "templates/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
        ),
        (
            "templates/service.yaml",
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  selector: {app: {{ .Release.Name }}}\n  ports: [{port: 80, targetPort: 8080}]\n",
        ),
        (
            "templates/deployment.yaml",
            "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: {{ .Release.Name }}}}
  template:
    metadata: {labels: {app: {{ .Release.Name }}}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: app
        image: {{ .Values.image }}
        envFrom: [{configMapRef: {name: {{ .Release.Name }}-settings}}]
",
        ),
    ];
    for (path, text) in files {
        k.file(&format!("chart/{path}"), text);
    }
    k.dir().join("chart").to_string_lossy().into_owned()
}

/// `helm history web`: (revision, status) of each release.
fn releases(k: &Cluster) -> Vec<(u64, String)> {
    let out = k.helm(&["history", "web", "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("helm prints JSON");
    list.as_array()
        .into_iter()
        .flatten()
        .map(|r| (r["revision"].as_u64().unwrap_or(0), r["status"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

#[test]
fn helm_installs_upgrades_rolls_back_and_uninstalls_a_chart_as_on_a_cluster() {
    let k = Cluster::start();
    let chart = chart(&k);
    let installed = k.helm(&["install", "web", &chart, "--wait", "--timeout", WAIT]);
    assert!(installed.contains("STATUS: deployed") && installed.contains("REVISION: 1"), "{installed}");
    // --wait returned: the Deployment is ready.
    assert_eq!(k.ok(&["get", WEB, "-o=jsonpath={.status.readyReplicas} {.status.updatedReplicas}"]), "2 2");
    let objects = k.ok(&["get", "deployment,service,configmap", "-o", "name"]);
    // Besides the chart's: what every cluster's `default` namespace holds (the API server's
    // `kubernetes` Service, kube-controller-manager's CA bundle).
    let objects: Vec<&str> =
        objects.lines().filter(|l| !l.ends_with("kube-root-ca.crt") && *l != "service/kubernetes").collect();
    assert_eq!(objects, ["deployment.apps/web", "service/web", "configmap/web-settings"]);
    assert_eq!(k.ok(&["get", "configmap", "web-settings", "-o=jsonpath={.data.greeting}"]), "hello");

    let upgraded = k.helm(&[
        "upgrade",
        "web",
        &chart,
        "--set",
        "image=nginx:2,replicas=3,greeting=hi",
        "--wait",
        "--timeout",
        WAIT,
    ]);
    assert!(upgraded.contains("REVISION: 2"), "{upgraded}");
    assert_eq!(k.ok(&["get", WEB, WEB_IMAGE]), "nginx:2");
    assert_eq!(k.ok(&["get", WEB, "-o=jsonpath={.status.readyReplicas} {.status.updatedReplicas}"]), "3 3");
    assert_eq!(k.ok(&["get", "configmap", "web-settings", "-o=jsonpath={.data.greeting}"]), "hi");
    let pods = live_pods(&k, "app=web");
    assert!(pods.len() == 3 && pods.iter().all(|(_, image, _)| image == "nginx:2"), "{pods:?}");
    assert_eq!(releases(&k), [(1, "superseded".to_owned()), (2, "deployed".to_owned())]);

    let rolled = k.helm(&["rollback", "web", "1", "--wait", "--timeout", WAIT]);
    assert!(rolled.contains("Rollback was a success"), "{rolled}");
    assert_eq!(k.ok(&["get", WEB, WEB_IMAGE]), "nginx:1");
    assert_eq!(k.ok(&["get", "configmap", "web-settings", "-o=jsonpath={.data.greeting}"]), "hello");
    k.until(
        &["get", WEB, "-o=jsonpath={.status.replicas} {.status.readyReplicas}"],
        "two ready replicas",
        |r| r == "2 2",
    );
    assert_eq!(
        releases(&k),
        [(1, "superseded".to_owned()), (2, "superseded".to_owned()), (3, "deployed".to_owned())]
    );
    let status = k.helm(&["status", "web"]);
    assert!(status.contains("STATUS: deployed") && status.contains("REVISION: 3"), "{status}");

    let uninstalled = k.helm(&["uninstall", "web", "--wait", "--timeout", WAIT]);
    assert!(uninstalled.contains("release \"web\" uninstalled"), "{uninstalled}");
    assert_eq!(
        k.ok(&[
            "get",
            "deployment/web",
            "service/web",
            "configmap/web-settings",
            "--ignore-not-found",
            "-o",
            "name"
        ]),
        ""
    );
    // The garbage collector removes what the Deployment owned.
    k.eventually(&["get", "replicasets,pods", "-o", "name"], "");
    assert_eq!(k.ok(&["get", "secrets", "-l", "owner=helm", "-o", "name"]), "");
}

/// `kube-sim serve` as a child process; killed on drop.
struct Binary(std::process::Child);

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn kube_sim_serve_time_scale_makes_a_cronjob_due_each_minute_fire_within_seconds() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["serve", "--addr", "127.0.0.1:0", "--with-builtins", "--time-scale", "60"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kube-sim runs");
    let stdout = child.stdout.take().expect("piped stdout");
    let _process = Binary(child);
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    let url = first.rsplit(' ').next().unwrap_or_default().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "unexpected first line: {first:?}");
    let kubectl = |args: &[&str]| {
        let output =
            Command::new("kubectl").arg("--server").arg(&url).args(args).output().expect("kubectl runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    kubectl(&["create", "cronjob", "tick", "--image=busybox", "--schedule=* * * * *", "--", "date"]);
    // A minute of the cluster's clock is a second of wall time: the bound is many minutes' worth.
    let mut fired = String::new();
    for _ in 0..TRIES_MAX {
        fired = kubectl(&["get", "jobs", "-o=jsonpath={.items[*].metadata.ownerReferences[0].name}"]);
        if fired.split(' ').filter(|o| *o == "tick").count() >= 2 {
            break;
        }
        std::thread::sleep(TRY_PAUSE);
    }
    assert!(fired.split(' ').filter(|o| *o == "tick").count() >= 2, "jobs of tick: {fired:?}");
    drop(lines);
}

#[test]
fn kube_sim_serve_refuses_a_time_scale_of_zero_naming_the_flag() {
    let output = Command::new(env!("CARGO_BIN_EXE_kube-sim"))
        .args(["serve", "--addr", "127.0.0.1:0", "--time-scale", "0"])
        .output()
        .expect("kube-sim runs");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--time-scale") && stderr.contains("0 is not in 1..=3600"), "{stderr}");
}

// Helm runs a hook Pod and waits for it to succeed, and `helm test` runs the test Pod: both
// have `restartPolicy: Never`, so the kubelet-lite ends them Succeeded (before, they ran until
// deleted and helm timed out).
#[test]
fn helm_runs_a_post_install_hook_pod_and_a_test_pod_to_completion() {
    let k = Cluster::start();
    let hook_pod = |name: &str, hook: &str| {
        format!(
            "apiVersion: v1
kind: Pod
metadata:
  name: {{{{ .Release.Name }}}}-{name}
  annotations:
    helm.sh/hook: {hook}
spec:
  restartPolicy: Never
  containers: [{{name: {name}, image: busybox, command: [wget, 'web:80']}}]
"
        )
    };
    let files = [
        ("Chart.yaml", "apiVersion: v2\nname: hooks\nversion: 0.1.0\n".to_owned()),
        ("templates/migrate.yaml", hook_pod("migrate", "post-install")),
        ("templates/tests/connection.yaml", hook_pod("connection", "test")),
    ];
    for (path, text) in &files {
        k.file(&format!("hooks/{path}"), text);
    }
    let chart = k.dir().join("hooks").to_string_lossy().into_owned();
    let installed = k.helm(&["install", "h", &chart, "--wait", "--timeout", WAIT]);
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    assert_eq!(k.ok(&["get", "pod", "h-migrate", "-o=jsonpath={.status.phase}"]), "Succeeded");
    let tested = k.helm(&["test", "h", "--timeout", WAIT]);
    assert!(
        tested.contains("TEST SUITE:     h-connection") && tested.contains("Phase:          Succeeded"),
        "{tested}"
    );
}
