//! `Api<K>` and `Controller` over a custom resource declared with kube's
//! `#[derive(CustomResource)]`, its CRD installed from YAML: a ConfigMap generator in the spirit
//! of kube-rs's `configmapgen_controller` example.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{CustomResource, CustomResourceExt};
use kube_core::{ObjectMeta, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sim::api::{Api, Patch, PatchParams, PostParams};
use sim::runtime::controller::Action;
use sim::runtime::{Controller, watcher};
use sim::{Clients, FnProperty, Sim, Verdict};

/// A generator of one ConfigMap holding `content`.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "nullable.se", version = "v1", kind = "ConfigMapGenerator", namespaced)]
struct ConfigMapGeneratorSpec {
    content: String,
}

async fn reconcile(
    generator: Arc<ConfigMapGenerator>,
    cms: Arc<Api<ConfigMap>>,
) -> Result<Action, sim::Error> {
    let owner = generator.controller_owner_ref(&()).expect("generators have a name and uid");
    let name = format!("{}-gen", generator.name_any());
    let desired = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("content".to_owned(), generator.spec.content.clone())])),
        ..ConfigMap::default()
    };
    match cms.get_opt(&name).await? {
        None => {
            cms.create(&PostParams::default(), &desired).await?;
        }
        Some(existing) if existing.data == desired.data => {}
        Some(_) => {
            let data = serde_json::json!({ "data": desired.data });
            cms.patch(&name, &PatchParams::default(), &Patch::Merge(&data)).await?;
        }
    }
    Ok(Action::requeue(Duration::from_secs(300)))
}

fn world() -> sim::SimBuilder {
    let crd = serde_yaml_ng::to_string(&ConfigMapGenerator::crd()).expect("the CRD serializes");
    Sim::builder()
        .crds_yaml("default", &crd)
        .expect("the CRD loads")
        .controller("cmgen", |clients: Clients| async move {
            let client = clients.default_cluster();
            let generators: Api<ConfigMapGenerator> = Api::namespaced(client.clone(), "default");
            let cms: Api<ConfigMap> = Api::namespaced(client, "default");
            Controller::new(generators, watcher::Config::default())
                .owns(cms.clone(), watcher::Config::default())
                .run(reconcile, |_, _, _| Action::requeue(Duration::from_secs(1)), Arc::new(cms))
                .for_each(|_| async {})
                .await;
        })
        .workload(|w| async move {
            let generators: Api<ConfigMapGenerator> = Api::namespaced(w.client(), "default");
            let mut generator =
                ConfigMapGenerator::new("g", ConfigMapGeneratorSpec { content: "one".to_owned() });
            generator.metadata.namespace = Some("default".to_owned());
            w.apply(&generators, &generator).await?;
            w.patch(&generators, "g", &Patch::Merge(serde_json::json!({ "spec": { "content": "two" } })))
                .await?;
            let cms: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            let generated = |cm: Option<&ConfigMap>| {
                cm.and_then(|cm| cm.data.as_ref()).and_then(|d| d.get("content")).is_some_and(|c| c == "two")
            };
            w.wait_for(&cms, "g-gen", generated, Duration::from_secs(30)).await?;
            Ok(())
        })
        .property(FnProperty::at_end("the generated ConfigMap holds the generator's content", |view| {
            let cluster = view.cluster("default").expect("default cluster");
            let found: Vec<_> = cluster
                .iter_resource("configmaps", Some("default"))
                .filter(|(key, _)| key.name.ends_with("-gen"))
                .map(|(key, o)| (key.name.to_string(), o.data["data"]["content"].clone()))
                .collect();
            if found == [("g-gen".to_owned(), serde_json::json!("two"))] {
                Ok(())
            } else {
                Err(format!("found {found:?}"))
            }
        }))
}

#[test]
fn a_custom_resource_controller_converges_on_twenty_seeds() {
    let world = world();
    for seed in 0..20 {
        let report = world.run(seed);
        assert_eq!(report.verdict, Verdict::Pass, "seed {seed}");
    }
}

#[test]
fn the_same_seed_gives_the_same_digest() {
    let world = world();
    let first = world.run(17);
    let second = world.run(17);
    assert_eq!(first.verdict, Verdict::Pass);
    assert_eq!(first.digest, second.digest);
    assert_eq!(first.stats, second.stats);
    assert_ne!(world.run(18).digest, first.digest);
}
