//! The CLI under bad input (issue 16): exit 2 with the file or the flag named, never a panic or
//! a silent success. `serve` is only ever started on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Exit code, stdout, stderr of `kube-sim ARGS`.
fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kube-sim")).args(args).output().expect("kube-sim runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().expect("exited, not signalled"), text(&out.stdout), text(&out.stderr))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn serve_with_a_bad_crds_file_exits_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.yaml", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
    let (code, _, stderr) = run(&["serve", "--addr", "127.0.0.1:0", "--crds", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.yaml"), "{stderr}");
    let missing = dir.path().join("missing.yaml");
    let (code, _, stderr) = run(&["serve", "--addr", "127.0.0.1:0", "--crds", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("missing.yaml"), "{stderr}");
}

#[test]
fn serve_with_an_empty_crds_file_exits_2_instead_of_serving_nothing_silently() {
    let dir = tempfile::tempdir().unwrap();
    let empty = write(dir.path(), "empty.yaml", b"");
    let (code, _, stderr) = run(&["serve", "--addr", "127.0.0.1:0", "--crds", empty.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("empty.yaml") && stderr.contains("no CustomResourceDefinition"), "{stderr}");
}

#[test]
fn serve_with_an_invalid_accept_hosts_expression_exits_2_naming_it() {
    let (code, _, stderr) = run(&["serve", "--addr", "127.0.0.1:0", "--accept-hosts", "^local(host$"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--accept-hosts"), "{stderr}");
}

#[test]
fn explore_with_a_duration_too_long_for_the_clock_exits_2_with_a_clear_message() {
    let (code, _, stderr) = run(&["explore", "--duration", "18446744073709551615s"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("too long") && !stderr.contains("panicked"), "{stderr}");
}

#[test]
fn explore_with_zero_seeds_exits_2_instead_of_an_empty_table() {
    let (code, stdout, stderr) = run(&["explore", "--seeds", "0"]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stderr.contains("--seeds"), "{stderr}");
}

/// The committed regression file of a planted bug, with a UTF-8 byte order mark in front.
fn with_bom(dir: &Path) -> PathBuf {
    let folder =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../regressions/cassandra.missed-scale-down");
    let file = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a committed regression file");
    let text = std::fs::read(&file).unwrap();
    write(dir, "bom.json", &[b"\xef\xbb\xbf".as_slice(), &text].concat())
}

#[test]
fn a_regression_file_starting_with_a_utf8_bom_is_read_as_kubectl_reads_manifests() {
    let dir = tempfile::tempdir().unwrap();
    let file = with_bom(dir.path());
    let (code, stdout, stderr) = run(&["replay", file.to_str().unwrap()]);
    // The planted bug still fails (exit 1); a rejected file would be exit 2.
    assert_eq!(code, 1, "{stdout}{stderr}");
}

#[test]
fn a_crd_file_starting_with_a_utf8_bom_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;
    let path = write(dir.path(), "bom.yaml", &[b"\xef\xbb\xbf".as_slice(), crd.as_bytes()].concat());
    let crds = model_apiserver::crd::load_crds_from_path(&path).expect("a BOM is skipped");
    assert_eq!(crds.len(), 1);
}
