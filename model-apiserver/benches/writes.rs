//! Cost of the model's write path, per operation: what one simulated seed of a controller such
//! as kube-rs's ConfigMap generator asks of the server, applied directly (no simulator).
//!
//! Run with `cargo bench -p model-apiserver --bench writes`. Each round starts a fresh server
//! with the default namespaces, installs a CRD, creates three custom resources and the three
//! ConfigMaps a controller owning them would write (with ownerReferences), updates and patches
//! them, and creates a Pod and a Deployment; the same ConfigMap create and update with a
//! `fieldManager` (as every request over HTTP names one) show what managedFields tracking adds.
//! It prints microseconds per operation of each kind, each the best of a few repeats (the
//! machines are shared and noisy), and the sum of one configmapgen-like seed's operations. It
//! asserts nothing about time. `BENCH_ROUNDS=N` sets the rounds per repeat (default 2000) and
//! `BENCH_REPEATS=N` the repeats (default 3): `BENCH_ROUNDS=100 BENCH_REPEATS=1` under
//! callgrind counts instructions.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kube_core::{
    ApiResource, DynamicObject,
    params::{Patch, PatchParams, PostParams},
};
use model_apiserver::{ApiServer, Context, Request, Response, SeqIds};
use serde_json::{Value, json};

const ROUNDS_DEFAULT: usize = 2_000;
const REPEATS_DEFAULT: usize = 3;
/// Custom resources (and their ConfigMaps) per round, as the configmapgen workload creates.
const GENERATORS: usize = 3;

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let api_version = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version,
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

fn object(v: Value) -> DynamicObject {
    serde_json::from_value(v).expect("a valid object")
}

/// The CRD kube's `#[derive(CustomResource)]` makes for the configmapgen example.
fn generator_crd() -> DynamicObject {
    object(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "configmapgenerators.nullable.se"},
        "spec": {
            "group": "nullable.se",
            "names": {
                "categories": [], "kind": "ConfigMapGenerator", "plural": "configmapgenerators",
                "shortNames": ["cmg"], "singular": "configmapgenerator"
            },
            "scope": "Namespaced",
            "versions": [{
                "additionalPrinterColumns": [],
                "name": "v1",
                "schema": {"openAPIV3Schema": {
                    "description": "Auto-generated derived type for ConfigMapGeneratorSpec via `CustomResource`",
                    "properties": {"spec": {
                        "description": "The custom resource: \"make a ConfigMap with this content\".",
                        "properties": {"content": {
                            "description": "What the generated ConfigMap's `content` key holds.",
                            "type": "string"
                        }},
                        "required": ["content"],
                        "type": "object"
                    }},
                    "required": ["spec"],
                    "title": "ConfigMapGenerator",
                    "type": "object"
                }},
                "served": true,
                "storage": true,
                "subresources": {}
            }]
        }
    }))
}

fn generator(i: usize) -> DynamicObject {
    object(json!({
        "apiVersion": "nullable.se/v1", "kind": "ConfigMapGenerator",
        "metadata": {"name": format!("gen-{i}"), "namespace": "default"},
        "spec": {"content": format!("content {i}")}
    }))
}

/// The ConfigMap the controller writes for generator `owner`.
fn config_map(owner: &DynamicObject, content: &str, rv: Option<&str>) -> DynamicObject {
    let name = owner.metadata.name.clone().unwrap_or_default();
    let mut v = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": name, "namespace": "default",
            "ownerReferences": [{
                "apiVersion": "nullable.se/v1", "kind": "ConfigMapGenerator", "name": name,
                "uid": owner.metadata.uid.clone().unwrap_or_default(),
                "controller": true, "blockOwnerDeletion": true
            }]
        },
        "data": {"content": content}
    });
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = json!(rv);
    }
    object(v)
}

fn container(name: &str) -> Value {
    json!({
        "name": name, "image": "registry.k8s.io/nginx:1.27",
        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
        "env": [{"name": "MODE", "value": "bench"}, {"name": "LEVEL", "value": "3"}],
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5}
    })
}

fn pod(i: usize) -> DynamicObject {
    object(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i}"), "namespace": "default", "labels": {"app": "bench"}},
        "spec": {"containers": [container("app"), container("sidecar")]}
    }))
}

fn deployment(i: usize) -> DynamicObject {
    object(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("deploy-{i}"), "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {"containers": [container("app")]}
            }
        }
    }))
}

/// The kinds of operation timed, in the order printed.
#[derive(Clone, Copy)]
enum Op {
    NewServer,
    CreateCrd,
    CreateCustom,
    CreateConfigMap,
    UpdateConfigMap,
    PatchCustom,
    CreatePod,
    CreateDeployment,
    CreateConfigMapTracked,
    UpdateConfigMapTracked,
}

const OPS: [(Op, &str); 10] = [
    (Op::NewServer, "new server + default namespaces"),
    (Op::CreateCrd, "create CRD"),
    (Op::CreateCustom, "create custom resource"),
    (Op::CreateConfigMap, "create ConfigMap (ownerReference)"),
    (Op::UpdateConfigMap, "update ConfigMap"),
    (Op::PatchCustom, "merge patch custom resource"),
    (Op::CreatePod, "create Pod (2 containers)"),
    (Op::CreateDeployment, "create Deployment"),
    (Op::CreateConfigMapTracked, "create ConfigMap, fieldManager"),
    (Op::UpdateConfigMapTracked, "update ConfigMap, fieldManager"),
];

/// Time spent and operations done, per kind.
#[derive(Clone, Copy, Default)]
struct Tally {
    time: [Duration; OPS.len()],
    count: [usize; OPS.len()],
}

impl Tally {
    fn add(&mut self, op: Op, time: Duration) {
        self.time[op as usize] += time;
        self.count[op as usize] += 1;
    }
    fn micros(&self, op: Op) -> f64 {
        let i = op as usize;
        self.time[i].as_secs_f64() * 1e6 / self.count[i].max(1) as f64
    }
}

struct Resources {
    crd: ApiResource,
    generators: ApiResource,
    config_maps: ApiResource,
    pods: ApiResource,
    deployments: ApiResource,
}

fn expect_object(result: Result<Response, kube_core::Status>) -> std::sync::Arc<DynamicObject> {
    match result {
        Ok(r) => r.object().cloned().expect("a written object"),
        Err(e) => panic!("benchmark request failed: {} {}: {}", e.code, e.reason, e.message),
    }
}

/// Time one request.
fn timed(
    tally: &mut Tally,
    op: Op,
    server: &mut ApiServer,
    request: Request,
    ctx: &mut Context<'_>,
) -> std::sync::Arc<DynamicObject> {
    let start = Instant::now();
    let result = server.handle(request, ctx);
    tally.add(op, start.elapsed());
    expect_object(result)
}

/// One round: a fresh server and one seed's writes.
fn round(r: &Resources, tally: &mut Tally, ids: &mut SeqIds) {
    let now = jiff::Timestamp::from_second(1_767_225_600).expect("valid time");
    let mut ctx = Context::new(now, ids);
    let start = Instant::now();
    let mut server = ApiServer::new().with_default_namespaces(&mut ctx);
    tally.add(Op::NewServer, start.elapsed());
    let post = PostParams::default;
    let tracked = || PostParams { field_manager: Some("bench".to_owned()), ..PostParams::default() };
    timed(
        tally,
        Op::CreateCrd,
        &mut server,
        Request::create(&r.crd, None, generator_crd(), post()),
        &mut ctx,
    );
    let mut owners = Vec::new();
    for i in 0..GENERATORS {
        let request = Request::create(&r.generators, Some("default"), generator(i), post());
        owners.push(timed(tally, Op::CreateCustom, &mut server, request, &mut ctx));
    }
    let mut stored = Vec::new();
    for owner in &owners {
        let request = Request::create(&r.config_maps, Some("default"), config_map(owner, "v1", None), post());
        stored.push(timed(tally, Op::CreateConfigMap, &mut server, request, &mut ctx));
    }
    for (owner, cm) in owners.iter().zip(&stored) {
        let name = cm.metadata.name.clone().unwrap_or_default();
        let body = config_map(owner, "v2", cm.metadata.resource_version.as_deref());
        let request = Request::update(&r.config_maps, Some("default"), &name, body, post());
        timed(tally, Op::UpdateConfigMap, &mut server, request, &mut ctx);
    }
    for owner in &owners {
        let name = owner.metadata.name.clone().unwrap_or_default();
        let patch = Patch::Merge(json!({"spec": {"content": "edited"}}));
        let request = Request::patch(&r.generators, Some("default"), &name, patch, PatchParams::default());
        timed(tally, Op::PatchCustom, &mut server, request, &mut ctx);
    }
    timed(tally, Op::CreatePod, &mut server, Request::create(&r.pods, None, pod(0), post()), &mut ctx);
    let request = Request::create(&r.deployments, None, deployment(0), post());
    timed(tally, Op::CreateDeployment, &mut server, request, &mut ctx);
    let mut tracked_cms = Vec::new();
    for owner in &owners {
        let mut body = config_map(owner, "v1", None);
        body.metadata.name = Some(format!("tracked-{}", owner.metadata.name.clone().unwrap_or_default()));
        let request = Request::create(&r.config_maps, Some("default"), body, tracked());
        tracked_cms.push(timed(tally, Op::CreateConfigMapTracked, &mut server, request, &mut ctx));
    }
    for (owner, cm) in owners.iter().zip(&tracked_cms) {
        let name = cm.metadata.name.clone().unwrap_or_default();
        let mut body = config_map(owner, "v2", cm.metadata.resource_version.as_deref());
        body.metadata.name = Some(name.clone());
        let request = Request::update(&r.config_maps, Some("default"), &name, body, tracked());
        timed(tally, Op::UpdateConfigMapTracked, &mut server, request, &mut ctx);
    }
    black_box(server);
}

fn main() {
    let rounds = env_count("BENCH_ROUNDS", ROUNDS_DEFAULT);
    let repeats = env_count("BENCH_REPEATS", REPEATS_DEFAULT).max(1);
    let r = Resources {
        crd: resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions"),
        generators: resource("nullable.se", "v1", "ConfigMapGenerator", "configmapgenerators"),
        config_maps: resource("", "v1", "ConfigMap", "configmaps"),
        pods: resource("", "v1", "Pod", "pods"),
        deployments: resource("apps", "v1", "Deployment", "deployments"),
    };
    let mut best: Option<Tally> = None;
    for _ in 0..repeats {
        let mut tally = Tally::default();
        let mut ids = SeqIds::default();
        for _ in 0..rounds {
            round(&r, &mut tally, &mut ids);
        }
        best = Some(match best {
            None => tally,
            Some(mut b) => {
                for (op, _) in OPS {
                    let i = op as usize;
                    if tally.micros(op) < b.micros(op) {
                        b.time[i] = tally.time[i];
                        b.count[i] = tally.count[i];
                    }
                }
                b
            }
        });
    }
    let best = best.expect("at least one repeat");
    println!("model-apiserver: the write path, µs per operation (best of {repeats} × {rounds} rounds)");
    for (op, name) in OPS {
        println!("  {name:<40} {:>8.2}", best.micros(op));
    }
    // One configmapgen seed's writes: a server, the CRD, three generators, their ConfigMaps, one
    // ConfigMap update and one generator patch.
    let seed = best.micros(Op::NewServer)
        + best.micros(Op::CreateCrd)
        + GENERATORS as f64 * (best.micros(Op::CreateCustom) + best.micros(Op::CreateConfigMap))
        + best.micros(Op::UpdateConfigMap)
        + best.micros(Op::PatchCustom);
    println!("  {:<40} {:>8.2}", "one configmapgen-like seed's writes", seed);
}
