//! The ClusterRoles kube-apiserver's RBAC post-start hook creates that namespaced users are bound
//! to: `cluster-admin`, the user-facing `admin`, `edit` and `view`, and the
//! `system:aggregate-to-{admin,edit,view}` roles whose rules they aggregate. As
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go` defines them (as its golden file
//! `testdata/cluster-roles.yaml` lists them in a 1.31+ tree): `view` aggregates
//! `system:aggregate-to-view`; `edit` aggregates `system:aggregate-to-edit` and `view` (labelled
//! `aggregate-to-edit`); `admin` aggregates `system:aggregate-to-admin` and `edit` (labelled
//! `aggregate-to-admin`). Like the post-start hook, the aggregating roles are created without
//! rules: [`crate::rbac`] gathers them on each decision.

use serde_json::{Value, json};

/// kube-apiserver's verb sets (`Read`, `Write`, `ReadWrite`).
const READ: [&str; 3] = ["get", "list", "watch"];
const WRITE: [&str; 5] = ["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: [&str; 8] =
    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// A bootstrap ClusterRole's body: the `rbac-defaults` label and the `autoupdate` annotation
/// (the post-start hook reconciles a role so annotated), plus `labels`.
fn cluster_role(name: &str, labels: &[&str], rules: Option<Value>, aggregate: Option<&str>) -> Value {
    let mut all_labels = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    for label in labels {
        all_labels[*label] = json!("true");
    }
    let mut role = json!({
        "metadata": {"name": name, "labels": all_labels,
                     "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
    });
    if let Some(rules) = rules {
        role["rules"] = rules;
    }
    if let Some(label) = aggregate {
        role["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
    }
    role
}

const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The bodies of the bootstrap ClusterRoles, `cluster-admin` first.
pub(crate) fn cluster_roles() -> Vec<Value> {
    let cluster_admin = json!([
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]);
    vec![
        cluster_role("cluster-admin", &[], Some(cluster_admin), None),
        cluster_role("admin", &[], None, Some(TO_ADMIN)),
        cluster_role("edit", &[TO_ADMIN], None, Some(TO_EDIT)),
        cluster_role("view", &[TO_EDIT], None, Some(TO_VIEW)),
        cluster_role("system:aggregate-to-admin", &[TO_ADMIN], Some(aggregate_to_admin()), None),
        cluster_role("system:aggregate-to-edit", &[TO_EDIT], Some(aggregate_to_edit()), None),
        cluster_role("system:aggregate-to-view", &[TO_VIEW], Some(aggregate_to_view()), None),
    ]
}

/// What `admin` adds to `edit`: granting roles in its namespace.
fn aggregate_to_admin() -> Value {
    json!([
        rule(&["authorization.k8s.io"], &["localsubjectaccessreviews"], &["create"]),
        rule(&["rbac.authorization.k8s.io"], &["rolebindings", "roles"], &READ_WRITE),
    ])
}

/// What `edit` adds to `view`: writes of the workload kinds, reads of secrets and the escalating
/// pod subresources (no `/status` writes, no quota or limits).
fn aggregate_to_edit() -> Value {
    json!([
        rule(
            &[""],
            &["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"],
            &READ,
        ),
        rule(&[""], &["serviceaccounts"], &["impersonate"]),
        rule(&[""], &["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], &WRITE),
        rule(&[""], &["pods/eviction"], &["create"]),
        rule(
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
            &WRITE,
        ),
        rule(&[""], &["serviceaccounts/token"], &["create"]),
        rule(
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
            &WRITE,
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers"], &WRITE),
        rule(&["batch"], &["cronjobs", "jobs"], &WRITE),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ],
            &WRITE,
        ),
        rule(&["policy"], &["poddisruptionbudgets"], &WRITE),
        rule(&["networking.k8s.io"], &["ingresses", "networkpolicies"], &WRITE),
        rule(&["coordination.k8s.io"], &["leases"], &READ_WRITE),
    ])
}

/// `view`: reads of what does not escalate (no secrets, no pod exec or attach).
fn aggregate_to_view() -> Value {
    json!([
        rule(
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
            &READ,
        ),
        rule(
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
            &READ,
        ),
        rule(&[""], &["namespaces"], &READ),
        rule(&["discovery.k8s.io"], &["endpointslices"], &READ),
        rule(
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
            &READ,
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers", "horizontalpodautoscalers/status"], &READ),
        rule(&["batch"], &["cronjobs", "cronjobs/status", "jobs", "jobs/status"], &READ),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ],
            &READ,
        ),
        rule(&["policy"], &["poddisruptionbudgets", "poddisruptionbudgets/status"], &READ),
        rule(&["networking.k8s.io"], &["ingresses", "ingresses/status", "networkpolicies"], &READ),
    ])
}
