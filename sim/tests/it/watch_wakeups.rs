//! A write wakes only the watchers of its type and namespace: a ConfigMap informer pulls its watch
//! as often whether the workload writes two Secrets or forty, or forty ConfigMaps in another
//! namespace, and still sees every ConfigMap write of its own namespace.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube_core::ObjectMeta;
use sim::api::Api;
use sim::runtime::{WatchStreamExt, watcher};
use sim::{Clients, RunReport, Sim, Verdict};

fn meta(name: String, namespace: &str) -> ObjectMeta {
    ObjectMeta { name: Some(name), namespace: Some(namespace.to_owned()), ..ObjectMeta::default() }
}

/// What the workload writes besides its ConfigMaps in `default`.
#[derive(Clone, Copy)]
enum Others {
    Secrets,
    ConfigMapsElsewhere,
}

/// A node watching the ConfigMaps of `default`, while the workload writes `own` of them and
/// `others` objects of another kind or namespace, interleaved.
fn run(own: usize, others: usize, what: Others) -> RunReport {
    Sim::builder()
        .controller("watching", |clients: Clients| async move {
            let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
            watcher(api, watcher::Config::default()).applied_objects().for_each(|_| async {}).await;
        })
        .workload(move |w| async move {
            let cms: Api<ConfigMap> = Api::namespaced(w.client(), "default");
            let secrets: Api<Secret> = Api::namespaced(w.client(), "default");
            let namespaces: Api<Namespace> = Api::all(w.client());
            let elsewhere: Api<ConfigMap> = Api::namespaced(w.client(), "elsewhere");
            let ns = Namespace { metadata: meta("elsewhere".to_owned(), ""), ..Namespace::default() };
            let mut ns = ns;
            ns.metadata.namespace = None;
            w.apply(&namespaces, &ns).await?;
            for i in 0..own.max(others) {
                if i < own {
                    let cm = ConfigMap {
                        metadata: meta(format!("own-{i}"), "default"),
                        data: Some(BTreeMap::from([("v".to_owned(), i.to_string())])),
                        ..ConfigMap::default()
                    };
                    w.apply(&cms, &cm).await?;
                }
                for j in 0..others.div_ceil(own.max(1)) {
                    let n = i * others.div_ceil(own.max(1)) + j;
                    if n >= others {
                        break;
                    }
                    match what {
                        Others::Secrets => {
                            let secret =
                                Secret { metadata: meta(format!("s-{n}"), "default"), ..Secret::default() };
                            w.apply(&secrets, &secret).await?;
                        }
                        Others::ConfigMapsElsewhere => {
                            let cm = ConfigMap {
                                metadata: meta(format!("cm-{n}"), "elsewhere"),
                                ..ConfigMap::default()
                            };
                            w.apply(&elsewhere, &cm).await?;
                        }
                    }
                }
            }
            Ok(())
        })
        .run(3)
}

#[test]
fn writes_to_another_kind_or_namespace_do_not_wake_a_watcher() {
    for what in [Others::Secrets, Others::ConfigMapsElsewhere] {
        let few = run(2, 2, what);
        let many = run(2, 40, what);
        assert_eq!(few.verdict, Verdict::Pass);
        assert_eq!(many.verdict, Verdict::Pass);
        assert!(many.stats.api_calls >= few.stats.api_calls + 38, "{:?} {:?}", few.stats, many.stats);
        // Its two ConfigMaps arrive either way, and the 38 more writes elsewhere cost no pull.
        assert_eq!(few.stats.watch_deliveries, many.stats.watch_deliveries);
        assert!(many.stats.watch_deliveries >= 2, "{:?}", many.stats);
        assert_eq!(few.stats.watch_pulls, many.stats.watch_pulls, "{:?} {:?}", few.stats, many.stats);
    }
}

#[test]
fn writes_to_its_own_kind_and_namespace_wake_it_and_reach_it() {
    let few = run(2, 0, Others::Secrets);
    let many = run(20, 0, Others::Secrets);
    assert_eq!(many.verdict, Verdict::Pass);
    assert!(many.stats.watch_deliveries >= 20, "{:?}", many.stats);
    assert!(many.stats.watch_pulls > few.stats.watch_pulls, "{:?} {:?}", few.stats, many.stats);
}
