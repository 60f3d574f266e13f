//! The real kubectl's `auth can-i`, `explain` (through OpenAPI v3 and v2) and discovery against
//! `kube-sim serve` (issue 19). kubectl must be installed (`.ci/install-kubectl`, 1.27 or later:
//! `--output plaintext-openapiv2` and aggregated discovery are 1.27's).

#[path = "support/kubectl.rs"]
mod kubectl;
use kubectl::Kubectl;

const WIDGETS_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
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
              size:
                type: integer
                description: How big the widget is, in widget units.
";

#[test]
fn kubectl_auth_can_i_answers_yes_and_lists_every_rule() {
    let kubectl = Kubectl::start();
    assert_eq!(kubectl.ok(&["auth", "can-i", "create", "pods"]).trim(), "yes");
    assert_eq!(
        kubectl.ok(&["auth", "can-i", "delete", "deployments.apps", "--all-namespaces"]).trim(),
        "yes"
    );
    let list = kubectl.ok(&["auth", "can-i", "--list"]);
    let rules: Vec<Vec<&str>> = list.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert!(rules.contains(&vec!["*.*", "[]", "[]", "[*]"]), "{list}");
    assert!(rules.contains(&vec!["[*]", "[]", "[*]"]), "{list}");
}

#[test]
fn kubectl_explain_reads_a_field_through_openapi_v3_and_v2() {
    let kubectl = Kubectl::start();
    let v3 = kubectl.ok(&["explain", "deployment.spec.replicas"]);
    assert!(v3.contains("Number of desired pods"), "{v3}");
    let v2 = kubectl.ok(&["explain", "deployment.spec.replicas", "--output", "plaintext-openapiv2"]);
    assert!(v2.contains("FIELD:    replicas <integer>") || v2.contains("FIELD: replicas <integer>"), "{v2}");
    assert!(v2.contains("Number of desired pods"), "{v2}");
}

#[test]
fn kubectl_explain_reads_a_crd_field_through_openapi_v2() {
    let kubectl = Kubectl::start();
    let crd = kubectl.file("crd.yaml", WIDGETS_CRD);
    kubectl.ok(&["apply", "-f", &crd]);
    let v2 = kubectl.ok(&["explain", "widgets.spec.size", "--output", "plaintext-openapiv2"]);
    assert!(v2.contains("How big the widget is, in widget units."), "{v2}");
    assert!(v2.contains("<integer>"), "{v2}");
}

/// The discovery GETs of a kubectl run at `-v=6`: `/api`, `/apis` and group versions.
fn discovery_gets(log: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains("verb=\"GET\"") || l.contains("GET http"))
        .filter_map(|l| l.split("url=\"").nth(1).or_else(|| l.split("GET ").nth(1)))
        .map(|u| u.split(['"', '?', ' ']).next().unwrap_or_default().to_owned())
        .map(|u| {
            u.split_once("://").map_or(u.clone(), |(_, rest)| {
                rest.split_once('/').map_or(String::new(), |(_, p)| format!("/{p}"))
            })
        })
        .filter(|p| {
            p == "/api"
                || p == "/apis"
                || p.starts_with("/api/v1") && !p.contains("/namespaces/")
                || p.starts_with("/apis/") && p.matches('/').count() <= 3
        })
        .collect()
}

#[test]
fn kubectl_discovers_every_api_through_aggregated_discovery_in_two_requests() {
    let kubectl = Kubectl::start();
    let crd = kubectl.file("crd.yaml", WIDGETS_CRD);
    kubectl.ok(&["apply", "-f", &crd]);
    // A fresh cache, so kubectl discovers everything again.
    let output = kubectl.run(&["get", "widgets", "-v=6", "--cache-dir", &format!("{crd}.cache")]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(discovery_gets(&stderr), vec!["/api".to_owned(), "/apis".to_owned()], "{stderr}");
    let resources = kubectl.ok(&["api-resources", "--cached=false"]);
    for expected in ["pods", "deployments", "widgets", "selfsubjectaccessreviews"] {
        assert!(
            resources.lines().any(|l| l.split_whitespace().next() == Some(expected)),
            "{expected}: {resources}"
        );
    }
}
