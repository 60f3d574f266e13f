//! `kube-sim serve --replay FILE --at STEP`: the binary reruns a regression file and serves the
//! cluster state at one step, read only, to the real kubectl.
//!
//! The file is the zoo's zookeeper stale-delete regression (whichever one `regressions/` holds):
//! at its first step the ZookeeperCluster exists and none of its PVCs do; by its last step the
//! operator has made them. kubectl must be installed (see serve_kubectl.rs).

use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Output, Stdio},
};

/// The regression file replayed.
fn regression_file() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../regressions/zookeeper.stale-delete");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files.into_iter().next().expect("a zookeeper.stale-delete regression file")
}

fn kube_sim(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kube-sim"));
    command.args(args);
    command
}

/// `kube-sim serve --replay` run to completion (it exits at once when it cannot serve).
fn serve_fails(args: &[&str]) -> (Option<i32>, String) {
    let Output { status, stderr, .. } = kube_sim(args).output().expect("running kube-sim");
    (status.code(), String::from_utf8_lossy(&stderr).into_owned())
}

/// The number of steps of the file's run, from the error `--at` past the end gets.
fn steps_of(file: &str) -> u64 {
    let (code, stderr) = serve_fails(&["serve", "--replay", file, "--at", "1000000000"]);
    assert_eq!(code, Some(2), "{stderr}");
    let after = stderr.split("the run has ").nth(1).unwrap_or_else(|| panic!("no step count: {stderr}"));
    after.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no step count: {stderr}"))
}

/// A replay being served, and a kubectl pointed at it. The server is killed on drop.
struct Replayed {
    child: Child,
    /// The server's stdout, kept open: it prints more lines, and a closed pipe would kill it.
    _stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
    summary: String,
    dir: tempfile::TempDir,
    url: String,
}

impl Replayed {
    fn start(file: &str, at: u64) -> Replayed {
        let mut child =
            kube_sim(&["serve", "--replay", file, "--at", &at.to_string(), "--addr", "127.0.0.1:0"])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("starting kube-sim serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let summary = lines.next().expect("a summary line").expect("UTF-8");
        let listening = lines.next().expect("the listening line").expect("UTF-8");
        let url = listening.split_whitespace().find(|w| w.starts_with("http://")).expect("a URL").to_owned();
        let dir = tempfile::tempdir().expect("a temporary directory");
        Replayed { child, _stdout: lines, summary, dir, url }
    }

    fn kubectl_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--server")
            .arg(&self.url)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(["-n", "default"])
            .args(args);
        command
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command(args).output().expect("kubectl is installed (see serve_kubectl.rs)")
    }

    fn names(&self, kind: &str) -> Vec<String> {
        let output = self.kubectl(&["get", kind, "-o", "name"]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).lines().map(str::to_owned).collect()
    }
}

impl Drop for Replayed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn replay_serves_the_state_of_the_first_and_of_the_last_step_with_different_objects() {
    let file = regression_file();
    let file = file.to_str().expect("a UTF-8 path");
    let steps = steps_of(file);
    assert!(steps > 1, "the run has {steps} steps");

    let first = Replayed::start(file, 1);
    assert!(first.summary.contains(&format!("at step 1 of {steps} on cluster default")), "{}", first.summary);
    // The first write of the run is the workload's create of the cluster object; the line ends
    // with the run's verdict (the recorded failure).
    let expected = "the step's write: workload create zookeeperclusters/default/zk (resourceVersion 13); \
                    the run failed: correctness: property \"data_volumes_kept\"";
    assert!(first.summary.contains(expected), "{}", first.summary);
    assert_eq!(first.names("zookeeperclusters"), ["zookeepercluster.zookeeper.pravega.io/zk"]);
    assert_eq!(first.names("persistentvolumeclaims"), Vec::<String>::new());

    let last = Replayed::start(file, steps);
    assert!(last.summary.contains(&format!("at step {steps} of {steps}")), "{}", last.summary);
    assert_eq!(last.names("zookeeperclusters"), ["zookeepercluster.zookeeper.pravega.io/zk"]);
    assert!(!last.names("persistentvolumeclaims").is_empty(), "the operator made PVCs by the last step");
    // The capture is the run's first property, so the last step is the write at which
    // data_volumes_kept fails: the deletion of the live cluster's data volume, gone from the state.
    assert!(
        last.summary.contains("delete persistentvolumeclaims/default/data-zk-0"),
        "the last step is the violating deletion: {}",
        last.summary
    );
    assert!(
        !last.names("persistentvolumeclaims").contains(&"persistentvolumeclaim/data-zk-0".to_owned()),
        "data-zk-0 is deleted at the last step"
    );
    let before = Replayed::start(file, steps - 1);
    assert!(
        before.names("persistentvolumeclaims").contains(&"persistentvolumeclaim/data-zk-0".to_owned()),
        "data-zk-0 still exists the step before"
    );
}

#[test]
fn a_replay_is_read_only_every_write_gets_405_method_not_allowed() {
    let file = regression_file();
    let replayed = Replayed::start(file.to_str().expect("a UTF-8 path"), 1);
    let delete = replayed.kubectl(&["delete", "zookeepercluster", "zk"]);
    let stderr = String::from_utf8_lossy(&delete.stderr);
    assert!(!delete.status.success());
    assert!(
        stderr.contains("Error from server (MethodNotAllowed)") && stderr.contains("at step 1 of"),
        "{stderr}"
    );
    let create = replayed.kubectl(&["create", "configmap", "new", "--from-literal=a=b"]);
    assert!(String::from_utf8_lossy(&create.stderr).contains("it is read only"));
    assert_eq!(replayed.names("zookeeperclusters"), ["zookeepercluster.zookeeper.pravega.io/zk"]);
}

#[test]
fn a_replay_step_past_the_end_exits_2_with_the_step_count() {
    let file = regression_file();
    let file = file.to_str().expect("a UTF-8 path");
    let steps = steps_of(file);
    let past = (steps + 1).to_string();
    let (code, stderr) = serve_fails(&["serve", "--replay", file, "--at", &past]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains(&format!("the run has {steps} steps; --at {past} is past its end")), "{stderr}");
}

#[test]
fn a_corrupt_regression_file_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("corrupt.json");
    std::fs::write(&path, "{\"format\": 1, \"scenario\": ").expect("writing the file");
    let (code, stderr) = serve_fails(&["serve", "--replay", path.to_str().unwrap(), "--at", "1"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains(&format!("cannot replay {}", path.display())), "{stderr}");
}

#[test]
fn a_watch_on_a_replay_lists_the_objects_then_stays_open() {
    let file = regression_file();
    let replayed = Replayed::start(file.to_str().expect("a UTF-8 path"), 1);
    let mut watch = replayed
        .kubectl_command(&["get", "zookeeperclusters", "-w", "-o", "name"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("kubectl is installed");
    let mut lines = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("UTF-8");
    assert_eq!(first, "zookeepercluster.zookeeper.pravega.io/zk");
    // Nothing changes in a replay, so the watch has nothing more to say and must not end.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let still_running = watch.try_wait().expect("kubectl's status").is_none();
    let _ = watch.kill();
    let _ = watch.wait();
    assert!(still_running, "the watch ended on its own");
}

#[test]
fn replay_with_crds_or_with_builtins_is_a_usage_error_that_exits_2() {
    let file = regression_file();
    let file = file.to_str().expect("a UTF-8 path");
    for extra in [["--with-builtins", ""], ["--crds", "."]] {
        let args: Vec<&str> = ["serve", "--replay", file, "--at", "1"]
            .into_iter()
            .chain(extra)
            .filter(|a| !a.is_empty())
            .collect();
        let (code, stderr) = serve_fails(&args);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("cannot be used with"), "{stderr}");
    }
}
