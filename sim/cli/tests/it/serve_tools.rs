//! `kubectl logs` against `kube-sim serve --with-builtins` (issue 19): the kubelet-lite's
//! container statuses are the synthetic logs, read with the real kubectl (plain, `-c`, `--tail`,
//! `--previous` after a restart, `-f` until the container exits).
//!
//! Each test starts its own server in-process with the built-ins; controllers act in wall-clock
//! time, so the tests poll with a bounded number of tries ([`TRIES_MAX`] × [`TRY_PAUSE`]), never
//! an assertion on time. kubectl must be installed (`.ci/install-kubectl`).

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Command, Output, Stdio},
    time::Duration,
};

use kube_sim::serve::{ServeConfig, Served, spawn};

const TRIES_MAX: usize = 240;
const TRY_PAUSE: Duration = Duration::from_millis(250);

struct Kubectl {
    _served: Served,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Kubectl {
    fn start() -> Kubectl {
        let served = spawn(ServeConfig::default(), true).expect("the server starts");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster: {{server: '{}'}}\n\
             users:\n- name: sim\n  user: {{}}\ncontexts:\n- name: sim\n  context: {{cluster: sim, user: sim, namespace: default}}\n\
             current-context: sim\n",
            served.url()
        );
        std::fs::write(&kubeconfig, config).expect("writing the kubeconfig");
        Kubectl { _served: served, dir, kubeconfig }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"));
        command.args(args);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        match self.command(args).output() {
            Ok(output) => output,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                panic!("kubectl is not installed: these tests run the real kubectl (`.ci/install-kubectl`)")
            }
            Err(e) => panic!("running kubectl {args:?}: {e}"),
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            !output.status.success(),
            "kubectl {args:?} succeeded: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Poll `kubectl args` until its stdout is `expected`.
    fn eventually(&self, args: &[&str], expected: &str) {
        let mut last = String::new();
        for _ in 0..TRIES_MAX {
            let output = self.run(args);
            last = String::from_utf8_lossy(&output.stdout).into_owned();
            if output.status.success() && last == expected {
                return;
            }
            std::thread::sleep(TRY_PAUSE);
        }
        panic!("kubectl {args:?} never answered {expected:?}; last answer: {last:?}");
    }

    fn apply(&self, name: &str, yaml: &str) {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).expect("writing a manifest");
        self.ok(&["apply", "-f", &path.to_string_lossy()]);
    }
}

/// A Pod `name` with `containers` (each `name=image`), `annotations` as YAML flow, and a
/// one-second grace period.
fn pod(name: &str, containers: &[(&str, &str)], annotations: &str) -> String {
    let containers: String =
        containers.iter().map(|(c, image)| format!("  - name: {c}\n    image: {image}\n")).collect();
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations: {annotations}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n{containers}"
    )
}

const PHASE: &str = "-o=jsonpath={.status.phase}";

#[test]
fn kubectl_logs_shows_a_running_containers_start_and_image_with_tail_and_container() {
    let k = Kubectl::start();
    k.apply("web.yaml", &pod("web", &[("app", "nginx:1.25")], "{}"));
    k.eventually(&["get", "pod", "web", PHASE], "Running");
    let log = k.ok(&["logs", "web"]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert_eq!(lines[1], "kube-sim: container \"app\" started from image \"nginx:1.25\" (restart 0)");
    assert_eq!(k.ok(&["logs", "web", "--tail=1"]), format!("{}\n", lines[1]));
    let stamped = k.ok(&["logs", "web", "--timestamps", "--tail=1"]);
    let (at, text) = stamped.trim_end().split_once(' ').expect("a timestamp first");
    assert!(at.parse::<jiff::Timestamp>().is_ok(), "{stamped}");
    assert_eq!(text, lines[1]);

    k.apply("duo.yaml", &pod("duo", &[("app", "nginx:1.25"), ("sidecar", "busybox:1.36")], "{}"));
    k.eventually(&["get", "pod", "duo", PHASE], "Running");
    let sidecar = k.ok(&["logs", "duo", "-c", "sidecar"]);
    assert!(sidecar.contains("container \"sidecar\" started from image \"busybox:1.36\""), "{sidecar}");
    // kubectl itself picks the first container when none is named (the server's own answer to
    // a request without one is checked on the wire, in model-apiserver/http's serve_tools).
    let defaulted = k.ok(&["logs", "duo"]);
    assert!(defaulted.contains("container \"app\" started from image \"nginx:1.25\""), "{defaulted}");
    let previous = k.fails(&["logs", "web", "--previous"]);
    assert!(
        previous.contains("previous terminated container \"app\" in pod \"web\" not found"),
        "{previous}"
    );
}

#[test]
fn kubectl_logs_previous_shows_the_exit_of_the_instance_before_a_restart() {
    let k = Kubectl::start();
    k.apply("crash.yaml", &pod("crash", &[("app", "example/crasher:1")], "{kube-sim.io/fail: \"true\"}"));
    k.eventually(&["get", "pod", "crash", "-o=jsonpath={.status.containerStatuses[0].restartCount}"], "1");
    let previous = k.ok(&["logs", "crash", "--previous"]);
    assert!(
        previous.contains("container \"app\" started from image \"example/crasher:1\" (restart 0)"),
        "{previous}"
    );
    assert!(previous.trim_end().ends_with("container \"app\" exited with code 1 (Error)"), "{previous}");
    // In back-off, the current log is the last instance's, as the kubelet serves it.
    assert_eq!(k.ok(&["logs", "crash"]), previous);
}

#[test]
fn kubectl_logs_follow_streams_until_the_container_is_stopped() {
    let k = Kubectl::start();
    k.apply("web.yaml", &pod("web", &[("app", "nginx:1.25")], "{}"));
    k.eventually(&["get", "pod", "web", PHASE], "Running");
    let mut follow = k.command(&["logs", "-f", "web"]).stdout(Stdio::piped()).spawn().expect("kubectl runs");
    let mut lines = BufReader::new(follow.stdout.take().expect("piped stdout")).lines();
    let mut seen = Vec::new();
    // The lines so far arrive while the container still runs.
    while !seen.last().is_some_and(|l: &String| l.contains("started from image")) {
        seen.push(lines.next().and_then(Result::ok).expect("a line before the container stops"));
    }
    k.ok(&["delete", "pod", "web", "--wait=false"]);
    seen.extend(lines.map_while(Result::ok));
    assert_eq!(
        seen.last().map(String::as_str),
        Some("kube-sim: stopping container \"app\": its Pod is being deleted"),
        "{seen:?}"
    );
    let mut status = None;
    for _ in 0..TRIES_MAX {
        status = follow.try_wait().expect("waiting for kubectl");
        if status.is_some() {
            break;
        }
        std::thread::sleep(TRY_PAUSE);
    }
    assert!(
        status.is_some_and(|s| s.success()),
        "kubectl logs -f did not end once the Pod was gone: {status:?}"
    );
}
