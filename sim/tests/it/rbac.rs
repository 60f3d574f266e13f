//! A controller run under RBAC as a ServiceAccount (`SimBuilder::service_account`): its calls
//! are allowed by the Roles and bindings the world holds, and a permission its manifests forget
//! is a 403 Forbidden, as in a cluster.

#[path = "common/mod.rs"]
mod common;

use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, PostParams};
use sim::runtime::{reflector, watcher};
use sim::{Clients, FnProperty, Sim, SimBuilder, TraceEvent, Verdict};

use common::*;

/// Once `trigger` is in its cache, creates `made` (once: an error is not retried).
async fn maker(clients: Clients) {
    let api: Api<ConfigMap> = Api::default_namespaced(clients.default_cluster());
    let cache = reflector::informer(api.clone(), watcher::Config::default());
    let mut changes = cache.subscribe();
    while futures::StreamExt::next(&mut changes).await.is_some() {
        if cache.state().iter().any(|c| c.metadata.name.as_deref() == Some("trigger")) {
            let _ = api.create(&PostParams::default(), &config_map("made", "1")).await;
            break;
        }
    }
    std::future::pending::<()>().await;
}

/// The maker's Role (`verbs` on ConfigMaps in `default`) and its binding to `default/maker`.
fn rbac(verbs: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: maker, namespace: default}}
rules:
- apiGroups: ['']
  resources: [configmaps]
  verbs: [{verbs}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: maker, namespace: default}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: maker}}
subjects:
- {{kind: ServiceAccount, name: maker, namespace: default}}
"
    )
}

fn world(verbs: &'static str) -> SimBuilder {
    Sim::builder()
        .controller("maker", maker)
        .service_account("maker", "default", "maker")
        .keep_trace(true)
        .workload(move |w| async move {
            w.apply_yaml("default", &rbac(verbs)).await?;
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("trigger", "1")).await?;
            Ok(())
        })
}

fn made(view: &sim::EndView<'_>) -> bool {
    view.cluster("default").is_some_and(|snap| {
        snap.iter_resource("configmaps", Some("default")).any(|(k, _)| &*k.name == "made")
    })
}

#[test]
fn a_controller_whose_role_allows_create_makes_its_object() {
    let world = world("get, list, watch, create").property(FnProperty::at_end("made", |view| {
        if made(view) { Ok(()) } else { Err("not made".to_owned()) }
    }));
    for seed in 0..5 {
        assert_eq!(world.run(seed).verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn a_controller_whose_role_lacks_create_gets_403_and_makes_nothing() {
    let world = world("get, list, watch").property(FnProperty::at_end("not made", |view| {
        if made(view) { Err("made".to_owned()) } else { Ok(()) }
    }));
    for seed in 0..5 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let refused = entries(&report).iter().any(|e| {
            matches!(&e.event, TraceEvent::ApiResponse { result: Err((403, reason)), .. } if reason == "Forbidden")
        });
        assert!(refused, "seed {seed}: no 403 in the trace");
    }
}

/// Once `trigger` is in its cache, creates the Role `granted` (`create configmaps`, which the
/// bootstrap `admin` it is bound to holds) and the Role `escalated` (`list nodes`, which it
/// does not).
async fn granter(clients: Clients) {
    use k8s_openapi::api::rbac::v1::{PolicyRule, Role};
    let config_maps: Api<ConfigMap> = Api::default_namespaced(clients.default_cluster());
    let roles: Api<Role> = Api::default_namespaced(clients.default_cluster());
    let cache = reflector::informer(config_maps, watcher::Config::default());
    let mut changes = cache.subscribe();
    while futures::StreamExt::next(&mut changes).await.is_some() {
        if cache.state().iter().any(|c| c.metadata.name.as_deref() == Some("trigger")) {
            for (name, group, resource, verb) in
                [("granted", "", "configmaps", "create"), ("escalated", "", "nodes", "list")]
            {
                let rule = PolicyRule {
                    api_groups: Some(vec![group.to_owned()]),
                    resources: Some(vec![resource.to_owned()]),
                    verbs: vec![verb.to_owned()],
                    ..PolicyRule::default()
                };
                let mut role = Role { rules: Some(vec![rule]), ..Role::default() };
                role.metadata.name = Some(name.to_owned());
                let _ = roles.create(&PostParams::default(), &role).await;
            }
            break;
        }
    }
    std::future::pending::<()>().await;
}

#[test]
fn a_controller_bound_to_the_bootstrap_admin_may_grant_what_it_holds_and_nothing_more() {
    let binding = "apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: granter-admin, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: admin}
subjects:
- {kind: ServiceAccount, name: granter, namespace: default}
";
    let world = Sim::builder()
        .controller("granter", granter)
        .service_account("granter", "default", "granter")
        .keep_trace(true)
        .workload(move |w| async move {
            w.apply_yaml("default", binding).await?;
            let api: Api<ConfigMap> = Api::default_namespaced(w.client());
            w.apply(&api, &config_map("trigger", "1")).await?;
            Ok(())
        })
        .property(FnProperty::at_end("granted only", |view| {
            let roles: Vec<String> = view.cluster("default").map_or_else(Vec::new, |snap| {
                snap.iter_resource("rbac.authorization.k8s.io/roles", Some("default"))
                    .map(|(k, _)| k.name.to_string())
                    .collect()
            });
            if roles == ["granted"] { Ok(()) } else { Err(format!("roles: {roles:?}")) }
        }));
    for seed in 0..3 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
        let refused = entries(&report).iter().any(|e| {
            matches!(&e.event, TraceEvent::ApiResponse { result: Err((403, reason)), .. } if reason == "Forbidden")
        });
        assert!(refused, "seed {seed}: no 403 in the trace");
    }
}
