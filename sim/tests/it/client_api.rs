//! `Api<K>` through the simulated transport: kube-rs's verbs, answers and errors.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_openapi::api::autoscaling::v1::{Scale, ScaleSpec};
use k8s_openapi::api::core::v1::{ConfigMap, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_core::{ApiResource, DynamicObject, ObjectMeta};
use sim::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use sim::{Either, Error, Sim, Verdict, Workload, WorkloadError};

fn cm(name: &str, finalizers: Option<Vec<String>>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.to_owned()), finalizers, ..ObjectMeta::default() },
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..ConfigMap::default()
    }
}

/// Run `script` as the workload of an empty world and return its verdict.
fn run_script<F, Fut>(script: F) -> Verdict
where
    F: Fn(Workload) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), WorkloadError>> + 'static,
{
    Sim::builder().workload(script).run(1).verdict
}

#[test]
fn get_opt_answers_none_for_a_missing_object_and_get_answers_404_not_found() {
    let verdict = run_script(|w| async move {
        let api: Api<ConfigMap> = Api::default_namespaced(w.client());
        assert!(api.get_opt("missing").await.expect("get_opt").is_none());
        match api.get("missing").await {
            Err(Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
                assert_eq!(status.message, "configmaps \"missing\" not found");
            }
            other => panic!("expected 404, got {other:?}"),
        }
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn replace_with_a_stale_resource_version_gets_409_conflict() {
    let verdict = run_script(|w| async move {
        let api: Api<ConfigMap> = Api::default_namespaced(w.client());
        let created = api.create(&PostParams::default(), &cm("a", None)).await.expect("create");
        let mut newer = created.clone();
        newer.data = Some(BTreeMap::from([("k".to_owned(), "w".to_owned())]));
        api.replace("a", &PostParams::default(), &newer).await.expect("first replace");
        match api.replace("a", &PostParams::default(), &created).await {
            Err(Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (409, "Conflict")),
            other => panic!("expected 409, got {other:?}"),
        }
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn delete_answers_right_when_gone_and_left_when_finalizers_hold_the_object() {
    let verdict = run_script(|w| async move {
        let api: Api<ConfigMap> = Api::default_namespaced(w.client());
        api.create(&PostParams::default(), &cm("plain", None)).await.expect("create");
        api.create(&PostParams::default(), &cm("held", Some(vec!["example.com/hold".to_owned()])))
            .await
            .expect("create");
        let gone = api.delete("plain", &DeleteParams::default()).await.expect("delete");
        assert!(matches!(gone, Either::Right(_)), "{gone:?}");
        let held = api.delete("held", &DeleteParams::default()).await.expect("delete");
        match held {
            Either::Left(object) => assert!(object.metadata.deletion_timestamp.is_some()),
            Either::Right(status) => panic!("expected the object, got {status:?}"),
        }
        let names: Vec<String> = api
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect();
        assert_eq!(names, ["held"]);
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_dynamic_object_api_reads_what_a_typed_api_wrote() {
    let verdict = run_script(|w| async move {
        let typed: Api<ConfigMap> = Api::default_namespaced(w.client());
        typed.create(&PostParams::default(), &cm("a", None)).await.expect("create");
        let resource = ApiResource::erase::<ConfigMap>(&());
        let dynamic: Api<DynamicObject> = Api::namespaced_with(w.client(), "default", &resource);
        let object = dynamic.get("a").await.expect("get");
        assert_eq!(object.data["data"]["k"], "v");
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn get_scale_and_patch_scale_read_and_set_a_deployments_replicas() {
    let verdict = run_script(|w| async move {
        let api: Api<Deployment> = Api::default_namespaced(w.client());
        api.create(&PostParams::default(), &web_deployment(2)).await.expect("create");
        let scale: Scale = api.get_scale("web").await.expect("get_scale");
        assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
        let patch = Patch::Merge(serde_json::json!({ "spec": { "replicas": 5 } }));
        api.patch_scale("web", &PatchParams::default(), &patch).await.expect("patch_scale");
        let replicas = api.get("web").await.expect("get").spec.replicas;
        assert_eq!(replicas, Some(5));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

fn web_deployment(replicas: i32) -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
    Deployment {
        metadata: ObjectMeta { name: Some("web".to_owned()), ..ObjectMeta::default() },
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(k8s_openapi::api::core::v1::PodSpec {
                    containers: vec![k8s_openapi::api::core::v1::Container {
                        name: "web".to_owned(),
                        image: Some("nginx:1.25".to_owned()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

/// A typed client reads a new object's status as it does against a cluster: `Some`, with the
/// fields its Go type never omits at zero, so `status.unwrap()` or `status.is_some()` in a
/// controller behaves as in production.
#[test]
fn a_new_object_reads_with_the_status_kube_apiserver_always_answers() {
    let verdict = run_script(|w| async move {
        let api: Api<Deployment> = Api::default_namespaced(w.client());
        let created = api.create(&PostParams::default(), &web_deployment(2)).await.expect("create");
        assert_eq!(created.status, Some(DeploymentStatus::default()));
        let services: Api<k8s_openapi::api::core::v1::Service> = Api::default_namespaced(w.client());
        let service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]},
        }))
        .expect("a Service");
        let created = services.create(&PostParams::default(), &service).await.expect("create");
        let load_balancer = created.status.expect("a status").load_balancer;
        assert_eq!(load_balancer, Some(Default::default()));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// kube 5's signatures: `replace_status` takes the object and `replace_scale` the `Scale` (not
/// JSON bytes), so a controller's calls port unchanged.
#[test]
fn replace_status_takes_the_object_and_replace_scale_the_scale_as_kube_5s() {
    let verdict = run_script(|w| async move {
        let api: Api<Deployment> = Api::default_namespaced(w.client());
        api.create(&PostParams::default(), &web_deployment(2)).await.expect("create");
        let mut read = api.get_status("web").await.expect("get_status");
        read.status = Some(DeploymentStatus { replicas: Some(2), ..DeploymentStatus::default() });
        read.spec.replicas = Some(7);
        let written = api.replace_status("web", &PostParams::default(), &read).await.expect("replace_status");
        assert_eq!(written.status.and_then(|s| s.replicas), Some(2));
        assert_eq!(written.spec.replicas, Some(2), "a status write leaves the spec");
        let mut scale: Scale = api.get_scale("web").await.expect("get_scale");
        scale.spec = Some(ScaleSpec { replicas: Some(4) });
        let scaled = api.replace_scale("web", &PostParams::default(), &scale).await.expect("replace_scale");
        assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
        assert_eq!(api.get("web").await.expect("get").spec.replicas, Some(4));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// kube's methods for a subresource by name: `status` and `scale` as their own methods do, and
/// what the model does not serve as a 404 that says so.
#[test]
fn subresources_by_name_read_and_write_status_and_refuse_what_is_not_served() {
    let verdict = run_script(|w| async move {
        let api: Api<Deployment> = Api::default_namespaced(w.client());
        api.create(&PostParams::default(), &web_deployment(1)).await.expect("create");
        let patch = Patch::Merge(serde_json::json!({ "status": { "readyReplicas": 1 } }));
        let patched =
            api.patch_subresource("status", "web", &PatchParams::default(), &patch).await.expect("patch");
        assert_eq!(patched.status.and_then(|s| s.ready_replicas), Some(1));
        let mut read = api.get_subresource("status", "web").await.expect("get_subresource");
        assert_eq!(read.status.as_ref().and_then(|s| s.ready_replicas), Some(1));
        read.status = Some(DeploymentStatus { replicas: Some(1), ..DeploymentStatus::default() });
        let replaced = api
            .replace_subresource("status", "web", &PostParams::default(), &read)
            .await
            .expect("replace_subresource");
        assert_eq!(replaced.status.and_then(|s| s.replicas), Some(1));

        let scale: Api<DynamicObject> =
            Api::default_namespaced_with(w.client(), &ApiResource::erase::<Deployment>(&()));
        let view = scale.get_subresource("scale", "web").await.expect("scale as a dynamic object");
        assert_eq!(view.types.map(|t| t.kind), Some("Scale".to_owned()));

        let Err(Error::Api(status)) = api.get_subresource("approval", "web").await else {
            panic!("an approval read is not served");
        };
        assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
        assert!(
            status.message.contains("deployments/approval is not a subresource kube-sim serves"),
            "{}",
            status.message
        );
        // `resize` is served, for Pods: the server answers a Deployment's with its 404.
        let Err(Error::Api(status)) = api.get_subresource("resize", "web").await else {
            panic!("a Deployment is not resized in place");
        };
        assert_eq!(status.message, "the server could not find the requested resource");
        // `ephemeralcontainers` is served, for Pods: the server answers a Deployment's with its
        // 404.
        let Err(Error::Api(status)) = api.get_subresource("ephemeralcontainers", "web").await else {
            panic!("a Deployment has no ephemeral containers");
        };
        assert_eq!(status.message, "the server could not find the requested resource");
        // `eviction` is served, for Pods: the server answers a Deployment's with its 404.
        let Err(Error::Api(status)) = api.get_subresource("eviction", "web").await else {
            panic!("a Deployment has no eviction");
        };
        assert_eq!(status.message, "the server could not find the requested resource");
        // So is `binding`, for Pods only.
        let binding = serde_json::json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
            "target": {"kind": "Node", "name": "node-1"}});
        let bound: Result<kube_core::Status, Error> =
            api.create_subresource("binding", "web", &PostParams::default(), &binding).await;
        let Err(Error::Api(status)) = bound else { panic!("a Deployment has no binding") };
        assert_eq!(
            (status.code, status.message.as_str()),
            (404, "the server could not find the requested resource")
        );
        let created: Result<Deployment, Error> =
            api.create_subresource("status", "web", &PostParams::default(), &read).await;
        let Err(Error::Api(status)) = created else { panic!("a POST to status is refused") };
        assert_eq!((status.code, status.reason.as_str()), (405, "MethodNotAllowed"));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// kube 5's `Api::entry`: get-or-create and get-and-modify, committed as one create or one
/// conditional replace, a stale entry refused with 409 and a foreign name refused before sending.
#[test]
fn an_entry_creates_a_missing_object_modifies_an_existing_one_and_refuses_a_stale_or_foreign_commit() {
    use sim::api::entry::{CommitError, CommitValidationError, Entry};
    let verdict = run_script(|w| async move {
        let api: Api<ConfigMap> = Api::default_namespaced(w.client());
        let data = |cm: &ConfigMap, key: &str| cm.data.as_ref().and_then(|d| d.get(key)).cloned();

        let entry = api.entry("slot").await.expect("entry");
        assert!(matches!(entry, Entry::Vacant(_)) && entry.get().is_none());
        let mut created = entry.or_insert(|| cm("ignored-name-unset-below", None)).and_modify(|c| {
            c.metadata.name = None;
            c.data.get_or_insert_with(BTreeMap::new).insert("step".to_owned(), "1".to_owned());
        });
        created.commit(&PostParams::default()).await.expect("create");
        let stored = api.get("slot").await.expect("created");
        assert_eq!(data(&stored, "step").as_deref(), Some("1"));
        assert_eq!(created.get().metadata.resource_version, stored.metadata.resource_version);

        // Unchanged: committing sends nothing, so the object stays at its revision.
        let mut clean = api.entry("slot").await.expect("entry").or_insert(|| unreachable!("it exists"));
        clean.commit(&PostParams::default()).await.expect("nothing to send");
        let same = api.get("slot").await.expect("get");
        assert_eq!(same.metadata.resource_version, stored.metadata.resource_version);

        // Two readers: the first one's change lands, the second one's replace is stale.
        let first = api.entry("slot").await.expect("entry");
        let second = api.entry("slot").await.expect("entry");
        let mut first = first.and_modify(|c| {
            c.data.get_or_insert_with(BTreeMap::new).insert("step".to_owned(), "2".to_owned());
        });
        let Entry::Occupied(mut second) = second.and_modify(|c| {
            c.data.get_or_insert_with(BTreeMap::new).insert("step".to_owned(), "3".to_owned());
        }) else {
            panic!("the object exists");
        };
        let Entry::Occupied(first) = &mut first else { panic!("the object exists") };
        first.commit(&PostParams::default()).await.expect("replace");
        match second.commit(&PostParams::default()).await {
            Err(CommitError::Save(Error::Api(status))) => assert_eq!(status.code, 409),
            other => panic!("a stale replace must be refused: {other:?}"),
        }
        assert_eq!(data(&api.get("slot").await.expect("get"), "step").as_deref(), Some("2"));

        // An object renamed under the entry is refused before anything is sent.
        let mut renamed = api
            .entry("slot")
            .await
            .expect("entry")
            .or_insert(|| unreachable!("it exists"))
            .and_modify(|c| c.metadata.name = Some("other".to_owned()));
        match renamed.commit(&PostParams::default()).await {
            Err(CommitError::Validate(CommitValidationError::NameMismatch { object_name, expected })) => {
                assert_eq!((object_name.as_str(), expected.as_str()), ("other", "slot"));
            }
            other => panic!("a foreign name must be refused: {other:?}"),
        }
        assert!(api.get_opt("other").await.expect("get").is_none());
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// kube's helpers built on patches: `restart` stamps the pod template with the virtual clock
/// (a new template, so a new rollout), `cordon`/`uncordon` flip a Node's `spec.unschedulable`;
/// `create_token_request` gets a token for an existing account, 404 for a missing one.
#[test]
fn restart_cordon_and_uncordon_patch_as_kubes_and_a_token_request_gets_a_token() {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::{Node, ServiceAccount};
    let verdict = run_script(|w| async move {
        let api: Api<Deployment> = Api::default_namespaced(w.client());
        api.create(&PostParams::default(), &web_deployment(1)).await.expect("create");
        madsim::time::sleep(std::time::Duration::from_millis(1500)).await;
        let before = sim::time::now();
        let restarted = api.restart("web").await.expect("restart");
        let after = sim::time::now();
        let stamp = restarted
            .spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get("kube.kubernetes.io/restartedAt"))
            .cloned()
            .expect("the restart annotation");
        let stamp: jiff::Timestamp = stamp.parse().expect("an RFC 3339 time");
        assert!(before <= stamp && stamp <= after, "stamped with the virtual clock: {stamp}");
        assert_eq!(restarted.metadata.generation, Some(2), "a template change is a spec change");

        let nodes: Api<Node> = Api::all(w.client());
        let node = Node {
            metadata: ObjectMeta { name: Some("worker".to_owned()), ..ObjectMeta::default() },
            ..Node::default()
        };
        nodes.create(&PostParams::default(), &node).await.expect("create node");
        let cordoned = nodes.cordon("worker").await.expect("cordon");
        assert_eq!(cordoned.spec.and_then(|s| s.unschedulable), Some(true));
        let uncordoned = nodes.uncordon("worker").await.expect("uncordon");
        // `unschedulable: false` is not on the wire (`omitempty`), as on a cluster.
        assert_eq!(uncordoned.spec.and_then(|s| s.unschedulable), None);

        let accounts: Api<ServiceAccount> = Api::default_namespaced(w.client());
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                audiences: Some(vec!["api".to_owned()]),
                ..TokenRequestSpec::default()
            }),
            ..TokenRequest::default()
        };
        let missing = accounts.create_token_request("ghost", &PostParams::default(), &request).await;
        match missing {
            Err(Error::Api(status)) => assert_eq!(
                (status.code, status.message.as_str()),
                (404, "serviceaccounts \"ghost\" not found")
            ),
            other => panic!("a token for a missing account: {other:?}"),
        }
        let account = ServiceAccount {
            metadata: ObjectMeta { name: Some("op".to_owned()), ..ObjectMeta::default() },
            ..ServiceAccount::default()
        };
        accounts.create(&PostParams::default(), &account).await.expect("create the account");
        let issued =
            accounts.create_token_request("op", &PostParams::default(), &request).await.expect("a token");
        let status = issued.status.expect("a status");
        let token = status.token.expect("a token");
        assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
        let expires = status.expiration_timestamp.expect("an expiry").0;
        // An hour by default, from the virtual clock (the answer took the call's latency).
        let left = expires.as_second() - sim::time::now_k8s().0.as_second();
        assert!((3599..=3600).contains(&left), "{left}");
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// kube-runtime's `Action` constructors are `const fn`: a controller keeps its requeue policy in
/// a `const`, as kube's examples do.
const RECHECK: sim::runtime::controller::Action =
    sim::runtime::controller::Action::requeue(std::time::Duration::from_secs(300));

#[test]
fn kube_runtime_shapes_port_unchanged_const_actions_object_refs_from_objects_and_root_reexports() {
    use sim::{Resource, ResourceExt};
    assert_eq!(RECHECK.requeue_after(), Some(std::time::Duration::from_secs(300)));
    const NEVER: sim::runtime::controller::Action = sim::runtime::controller::Action::await_change();
    assert_eq!(NEVER.requeue_after(), None);
    let cm = k8s_openapi::api::core::v1::ConfigMap {
        metadata: sim::api::ObjectMeta {
            name: Some("a".to_owned()),
            namespace: Some("ns".to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    let reference = sim::runtime::reflector::ObjectRef::from(&cm);
    assert_eq!(reference.key(), "ns/a");
    assert_eq!(cm.name_any(), "a");
    assert_eq!(k8s_openapi::api::core::v1::ConfigMap::kind(&()), "ConfigMap");
}

#[test]
fn a_dynamic_object_with_an_unknown_field_is_created_without_it() {
    let verdict = run_script(|w| async move {
        let resource = ApiResource::erase::<ConfigMap>(&());
        let dynamic: Api<DynamicObject> = Api::namespaced_with(w.client(), "default", &resource);
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
            "data": {"k": "v"}, "extra": {"not": "a field"}
        }))
        .expect("object");
        let created = dynamic.create(&PostParams::default(), &object).await.expect("create");
        assert!(created.data.get("extra").is_none(), "the answer has no unknown field");
        let stored = dynamic.get("a").await.expect("get");
        assert!(stored.data.get("extra").is_none(), "the stored object has no unknown field");
        assert_eq!(stored.data["data"]["k"], "v");
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_strict_patch_with_an_unknown_field_gets_422_and_changes_nothing() {
    let verdict = run_script(|w| async move {
        let typed: Api<ConfigMap> = Api::default_namespaced(w.client());
        typed.create(&PostParams::default(), &cm("a", None)).await.expect("create");
        let resource = ApiResource::erase::<ConfigMap>(&());
        let dynamic: Api<DynamicObject> = Api::namespaced_with(w.client(), "default", &resource);
        let params = PatchParams::default().validation_strict();
        let patch = Patch::Merge(serde_json::json!({"data": {"k": "w"}, "extra": 1}));
        match dynamic.patch("a", &params, &patch).await {
            Err(Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
                assert!(status.message.contains("unknown field \"extra\""), "{}", status.message);
            }
            other => panic!("expected 422, got {other:?}"),
        }
        assert_eq!(typed.get("a").await.expect("get").data.unwrap()["k"], "v");
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_dynamic_object_of_the_wrong_kind_gets_400_bad_request() {
    let verdict = run_script(|w| async move {
        let resource = ApiResource::erase::<ConfigMap>(&());
        let dynamic: Api<DynamicObject> = Api::namespaced_with(w.client(), "default", &resource);
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}
        }))
        .expect("object");
        match dynamic.create(&PostParams::default(), &object).await {
            Err(Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest")),
            other => panic!("expected 400, got {other:?}"),
        }
        assert!(dynamic.get_opt("s").await.expect("get_opt").is_none());
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_typed_deployment_whose_template_misses_its_selector_gets_422_with_the_field() {
    let verdict = run_script(|w| async move {
        let api: Api<Deployment> = Api::default_namespaced(w.client());
        let deployment: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "other"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
        }))
        .expect("deployment");
        match api.create(&PostParams::default(), &deployment).await {
            Err(Error::Api(status)) => {
                assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
                let causes = &status.details.as_ref().expect("details").causes;
                assert_eq!(causes[0].field, "spec.template.metadata.labels");
            }
            other => panic!("expected 422, got {other:?}"),
        }
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

#[test]
fn a_force_apply_takes_a_field_from_its_creator_who_keeps_owning_the_map() {
    // A controller that server-side applies over a ConfigMap another manager created: it takes
    // data.k, and the creator's Update entry stays, owning `data` itself, as kube-apiserver
    // records it. An update of an object that carries no managedFields records none.
    let verdict = run_script(|w| async move {
        let api: Api<ConfigMap> = Api::default_namespaced(w.client());
        let creator = PostParams { field_manager: Some("creator".to_owned()), ..PostParams::default() };
        api.create(&creator, &cm("a", None)).await.expect("create");
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
            "data": {"k": "mine"}});
        match api.patch("a", &PatchParams::apply("ctrl"), &Patch::Apply(&body)).await {
            Err(Error::Api(status)) => assert_eq!((status.code, status.reason.as_str()), (409, "Conflict")),
            other => panic!("expected 409, got {other:?}"),
        }
        let forced =
            api.patch("a", &PatchParams::apply("ctrl").force(), &Patch::Apply(&body)).await.expect("apply");
        let entries: Vec<(String, serde_json::Value)> = forced
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|e| {
                (e.manager.clone().unwrap_or_default(), e.fields_v1.clone().map(|f| f.0).unwrap_or_default())
            })
            .collect();
        assert_eq!(
            entries,
            // In the real field manager's order: the Apply entry before the Update one.
            [
                ("ctrl".to_owned(), serde_json::json!({"f:data": {"f:k": {}}})),
                ("creator".to_owned(), serde_json::json!({"f:data": {}})),
            ]
        );
        // A create that sets no field records no managedFields, and an update of such an
        // object records none either (ownership is tracked from a create or an apply).
        let bare = ConfigMap {
            metadata: ObjectMeta { name: Some("b".to_owned()), ..ObjectMeta::default() },
            ..ConfigMap::default()
        };
        let created = api.create(&creator, &bare).await.expect("create b");
        assert!(created.metadata.managed_fields.is_none_or(|m| m.is_empty()));
        let named = PatchParams { field_manager: Some("editor".to_owned()), ..PatchParams::default() };
        let patched = api
            .patch("b", &named, &Patch::Merge(serde_json::json!({"data": {"k": "w"}})))
            .await
            .expect("patch b");
        assert!(patched.metadata.managed_fields.is_none_or(|m| m.is_empty()));
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// What a typed create sends is the object's JSON, all of it but what the server sets: the
/// conversion leaves the metadata out of the JSON it builds (the typed metadata is sent as it
/// is), and nothing else may go missing or change with it. A Deployment (nested structs, lists,
/// maps, an int-or-string), a ConfigMap with labels, annotations and an owner, and a
/// `DynamicObject` (a map, not a struct) are read back untyped and compared with their JSON.
#[test]
fn a_typed_create_stores_the_objects_json_with_its_metadata() {
    let verdict = run_script(|w| async move {
        let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Secret".to_owned(),
            name: "owner".to_owned(),
            uid: "0b7c7a2e-0000-4000-8000-000000000001".to_owned(),
            controller: Some(true),
            block_owner_deletion: None,
        };
        let mut configmap = cm("labelled", None);
        configmap.metadata.labels = Some(BTreeMap::from([("app".to_owned(), "web".to_owned())]));
        configmap.metadata.annotations = Some(BTreeMap::from([("note".to_owned(), "kept".to_owned())]));
        configmap.metadata.owner_references = Some(vec![owner]);
        configmap.binary_data =
            Some(BTreeMap::from([("blob".to_owned(), k8s_openapi::ByteString(vec![0, 1, 2, 255]))]));
        let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
        let deployment = Deployment {
            metadata: ObjectMeta { name: Some("web".to_owned()), ..ObjectMeta::default() },
            spec: DeploymentSpec {
                replicas: Some(3),
                selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                    spec: Some(
                        serde_json::from_value(serde_json::json!({
                            "containers": [{
                                "name": "web",
                                "image": "nginx:1.27",
                                "ports": [{ "containerPort": 80 }],
                                "env": [{ "name": "MODE", "value": "prod" }],
                            }],
                        }))
                        .expect("a pod spec"),
                    ),
                },
                strategy: Some(
                    serde_json::from_value(serde_json::json!({
                        "type": "RollingUpdate",
                        "rollingUpdate": { "maxSurge": "25%", "maxUnavailable": 1 },
                    }))
                    .expect("a strategy"),
                ),
                ..DeploymentSpec::default()
            },
            ..Deployment::default()
        };
        let untyped_configmaps: Api<DynamicObject> =
            Api::default_namespaced_with(w.client(), &ApiResource::erase::<ConfigMap>(&()));
        let untyped_deployments: Api<DynamicObject> =
            Api::default_namespaced_with(w.client(), &ApiResource::erase::<Deployment>(&()));
        let configmaps: Api<ConfigMap> = Api::default_namespaced(w.client());
        let deployments: Api<Deployment> = Api::default_namespaced(w.client());
        configmaps.create(&PostParams::default(), &configmap).await.expect("create the ConfigMap");
        deployments.create(&PostParams::default(), &deployment).await.expect("create the Deployment");
        let mut dynamic = DynamicObject::new("untyped", &ApiResource::erase::<ConfigMap>(&()));
        dynamic.data = serde_json::json!({ "data": { "k": "v" }, "immutable": false });
        untyped_configmaps.create(&PostParams::default(), &dynamic).await.expect("create the DynamicObject");

        let sent = [
            ("labelled", serde_json::to_value(&configmap).expect("json"), &untyped_configmaps),
            ("web", serde_json::to_value(&deployment).expect("json"), &untyped_deployments),
            ("untyped", serde_json::to_value(&dynamic).expect("json"), &untyped_configmaps),
        ];
        for (name, json, api) in sent {
            let stored = api.get(name).await.expect("read back");
            let meta = &stored.metadata;
            assert_eq!(
                meta.labels,
                serde_json::from_value(json["metadata"]["labels"].clone()).expect("labels")
            );
            let annotations =
                serde_json::from_value(json["metadata"]["annotations"].clone()).expect("annotations");
            assert_eq!(meta.annotations, annotations, "{name}");
            let owners = serde_json::from_value(json["metadata"]["ownerReferences"].clone()).expect("owners");
            assert_eq!(meta.owner_references, owners, "{name}");
            // Everything but the metadata, as sent (the server defaults nothing in these fields
            // but a Deployment's spec and status, compared field by field below).
            let serde_json::Value::Object(mut fields) = json else { panic!("an object") };
            fields.remove("metadata");
            for (field, value) in fields {
                let stored_value = match field.as_str() {
                    "apiVersion" => serde_json::json!(stored.types.as_ref().expect("typed").api_version),
                    "kind" => serde_json::json!(stored.types.as_ref().expect("typed").kind),
                    _ => stored.data[&field].clone(),
                };
                assert_contains(&stored_value, &value, &format!("{name}: {field}"));
            }
        }
        Ok(())
    });
    assert_eq!(verdict, Verdict::Pass);
}

/// `sent` is within `stored`: every field it has is there with the same value (the server may
/// add defaults).
fn assert_contains(stored: &serde_json::Value, sent: &serde_json::Value, at: &str) {
    match (stored, sent) {
        (serde_json::Value::Object(stored), serde_json::Value::Object(sent)) => {
            for (key, value) in sent {
                let inner = stored.get(key).unwrap_or_else(|| panic!("{at}.{key}: missing from {stored:?}"));
                assert_contains(inner, value, &format!("{at}.{key}"));
            }
        }
        (serde_json::Value::Array(stored), serde_json::Value::Array(sent)) => {
            assert_eq!(stored.len(), sent.len(), "{at}: length");
            for (i, (a, b)) in stored.iter().zip(sent).enumerate() {
                assert_contains(a, b, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(stored, sent, "{at}"),
    }
}
