//! `sim::discovery`, as kube 5's `kube::discovery`: the served groups, versions and kinds, a CRD's
//! versions once it is served, and a discovered resource used through `Api::all_with`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::gvk::{GroupVersion, GroupVersionKind};
use kube_core::{DynamicObject, ObjectMeta, TypeMeta};
use sim::api::{Api, ListParams, PostParams};
use sim::discovery::{ApiGroup, Discovery, DiscoveryError, Scope, oneshot};
use sim::{Error, Sim, Verdict, Workload, WorkloadError};

fn run_script<F, Fut>(script: F) -> Verdict
where
    F: Fn(Workload) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), WorkloadError>> + 'static,
{
    Sim::builder().workload(script).run(1).verdict
}

/// A CRD of `widgets.example.com` serving `v1`, `v1beta1` and `v2` (stored as `v1`): kube-aware
/// priority puts `v2` first, name order would not.
fn widget_crd() -> CustomResourceDefinition {
    let version = |name: &str, storage: bool| {
        serde_json::json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            "subresources": {"status": {}},
        })
    };
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [version("v1", true), version("v1beta1", false), version("v2", false)]},
    }))
    .expect("a CRD")
}

#[test]
fn discovery_lists_the_built_in_groups_with_their_scopes_subresources_and_preferred_versions() {
    let verdict = run_script(|w| async move {
        let discovery = Discovery::new(w.client()).run().await.expect("discovery");
        let names: Vec<&str> = discovery.groups().map(ApiGroup::name).collect();
        assert_eq!(names.first(), Some(&""), "the core group first: {names:?}");
        assert!(names.contains(&"apps") && names.contains(&"batch"), "{names:?}");

        let core = discovery.get(ApiGroup::CORE_GROUP).expect("the core group");
        assert_eq!(core.preferred_version(), Some("v1"));
        let (pods, caps) = core.recommended_kind("Pod").expect("pods");
        assert_eq!((pods.plural.as_str(), pods.api_version.as_str()), ("pods", "v1"));
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(caps.subresources.iter().any(|(r, _)| r.plural == "status"));
        let (eviction, eviction_caps) =
            caps.subresources.iter().find(|(r, _)| r.plural == "eviction").expect("a pod's eviction");
        assert_eq!((eviction.group.as_str(), eviction.kind.as_str()), ("policy", "Eviction"));
        assert_eq!(eviction_caps.operations, ["create"]);
        assert!(caps.operations.iter().any(|v| v == "watch"));
        let (namespaces, caps) = core.recommended_kind("Namespace").expect("namespaces");
        assert_eq!((namespaces.plural.as_str(), caps.scope), ("namespaces", Scope::Cluster));

        let gvk = GroupVersionKind::gvk("apps", "v1", "Deployment");
        let (deployments, caps) = discovery.resolve_gvk(&gvk).expect("deployments");
        assert_eq!(deployments.plural, "deployments");
        let (scale, _) = caps.subresources.iter().find(|(r, _)| r.plural == "scale").expect("scale");
        assert_eq!((scale.group.as_str(), scale.kind.as_str()), ("autoscaling", "Scale"));
        let types = TypeMeta { api_version: "batch/v1".to_owned(), kind: "Job".to_owned() };
        assert_eq!(discovery.resolve_typemeta(&types).map(|(r, _)| r.plural), Some("jobs".to_owned()));

        let only_apps = Discovery::new(w.client()).filter(&["apps"]).run().await.expect("filtered");
        assert_eq!(only_apps.groups().map(ApiGroup::name).collect::<Vec<_>>(), vec!["apps"]);
        let no_core = Discovery::new(w.client()).exclude(&[""]).run().await.expect("excluded");
        assert!(!no_core.has_group("") && no_core.has_group("apps"));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_crd_created_in_the_run_is_discovered_with_its_versions_in_priority_order_and_its_resource_works() {
    let verdict = run_script(|w| async move {
        assert!(!Discovery::new(w.client()).run().await.expect("discovery").has_group("example.com"));
        let crds: Api<CustomResourceDefinition> = Api::all(w.client());
        crds.create(&PostParams::default(), &widget_crd()).await.expect("the CRD");

        let discovery = Discovery::new(w.client()).run().await.expect("discovery");
        let group = discovery.get("example.com").expect("the CRD's group");
        assert_eq!(group.versions().collect::<Vec<_>>(), vec!["v2", "v1", "v1beta1"]);
        assert_eq!(group.preferred_version(), Some("v2"), "the highest priority, as kube-apiserver prefers");
        let stable = group.resources_by_stability();
        assert_eq!(stable.len(), 1);
        assert_eq!(stable[0].0.version, "v2");
        assert_eq!(group.versioned_resources("v1beta1")[0].0.api_version, "example.com/v1beta1");

        let (widgets, caps) =
            oneshot::pinned_kind(&w.client(), &GroupVersionKind::gvk("example.com", "v1", "Widget"))
                .await
                .expect("pinned");
        assert_eq!(caps.scope, Scope::Namespaced);
        let api: Api<DynamicObject> = Api::namespaced_with(w.client(), "default", &widgets);
        let mut widget = DynamicObject::new("w", &widgets);
        widget.metadata = ObjectMeta { name: Some("w".to_owned()), ..ObjectMeta::default() };
        widget.data = serde_json::json!({ "spec": { "size": 1 } });
        api.create(&PostParams::default(), &widget).await.expect("a widget");
        assert_eq!(api.list(&ListParams::default()).await.expect("list").items.len(), 1);

        match oneshot::pinned_kind(&w.client(), &GroupVersionKind::gvk("example.com", "v1", "Gadget")).await {
            Err(Error::Discovery(DiscoveryError::MissingKind(_))) => {}
            other => panic!("no Gadget is served: {other:?}"),
        }
        match oneshot::pinned_group(&w.client(), &GroupVersion::gv("example.com", "v3")).await {
            Err(Error::Api(status)) => assert_eq!(status.code, 404),
            other => panic!("v3 is not served: {:?}", other.map(|g| g.name().to_owned())),
        }
        match oneshot::group(&w.client(), "nothing.example.com").await {
            Err(Error::Discovery(DiscoveryError::MissingApiGroup(name))) => {
                assert_eq!(name, "nothing.example.com")
            }
            other => panic!("no such group: {:?}", other.map(|g| g.name().to_owned())),
        }
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}
