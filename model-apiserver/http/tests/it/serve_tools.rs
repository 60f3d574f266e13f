//! What kubectl, helm and client-go ask a cluster for besides objects (issue 19): `pods/log`,
//! the authorization reviews of `kubectl auth can-i`, `/openapi/v2` and aggregated discovery,
//! checked on the wire with raw HTTP/1.1 requests.

use std::{
    collections::BTreeSet,
    io::{Read, Write},
    net::TcpStream,
};

use model_apiserver_http::{ServeConfig, Served, spawn, wire};
use serde_json::{Value, json};

struct Answer {
    code: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (key, value) = l.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    }
}

fn send(served: &Served, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
    let mut stream = TcpStream::connect(served.addr()).expect("connect");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream
}

fn answer(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("a status line");
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    Answer { code, head: head.to_owned(), body: if chunked { dechunk(body) } else { body.to_owned() } }
}

fn request(served: &Served, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut stream = send(served, method, path, headers, body);
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    answer(&raw)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail.get(size + 2..).unwrap_or("");
    }
    out
}

fn get(served: &Served, path: &str) -> Answer {
    request(served, "GET", path, &[], b"")
}

fn post(served: &Served, path: &str, body: &Value) -> Answer {
    request(served, "POST", path, &[("Content-Type", "application/json")], body.to_string().as_bytes())
}

fn patch_status(served: &Served, name: &str, status: &Value) -> Answer {
    let path = format!("/api/v1/namespaces/default/pods/{name}/status");
    let body = json!({"status": status}).to_string();
    request(served, "PATCH", &path, &[("Content-Type", "application/merge-patch+json")], body.as_bytes())
}

fn serve() -> Served {
    spawn(ServeConfig::default()).expect("the server starts")
}

/// A Pod with `containers`, bound to `node-1` when `bound`.
fn create_pod(served: &Served, name: &str, containers: &[&str], bound: bool) {
    let containers: Vec<Value> =
        containers.iter().map(|c| json!({"name": c, "image": format!("example/{c}:1")})).collect();
    let mut spec = json!({"containers": containers});
    if bound {
        spec["nodeName"] = json!("node-1");
    }
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec});
    let created = post(served, "/api/v1/namespaces/default/pods", &pod);
    assert_eq!(created.code, 201, "{}", created.body);
}

const STARTED: &str = "2026-01-02T03:04:05Z";
const CRASHED: &str = "2026-01-02T03:04:09Z";

/// `app` running since [`STARTED`] after one restart, its previous instance exited 1 at [`CRASHED`].
fn restarted_status() -> Value {
    json!({
        "phase": "Running",
        "containerStatuses": [{
            "name": "app", "image": "example/app:1", "imageID": "", "ready": true, "restartCount": 1,
            "containerID": "containerd://b",
            "state": {"running": {"startedAt": STARTED}},
            "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "containerID": "containerd://a",
                "startedAt": "2026-01-02T03:04:00Z", "finishedAt": CRASHED}},
        }],
    })
}

fn log(served: &Served, pod: &str, query: &str) -> Answer {
    get(served, &format!("/api/v1/namespaces/default/pods/{pod}/log{query}"))
}

#[test]
fn pod_log_options_are_validated_as_kube_apiserver_validates_them() {
    let served = serve();
    create_pod(&served, "web", &["app"], true);
    let cases = [
        (
            "?tailLines=-1",
            "PodLogOptions \"web\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            "?limitBytes=0",
            "PodLogOptions \"web\" is invalid: limitBytes: Invalid value: 0: must be greater than 0",
        ),
        (
            "?sinceSeconds=0",
            "PodLogOptions \"web\" is invalid: sinceSeconds: Invalid value: 0: must be greater than 0",
        ),
        (
            "?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z",
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ),
        ("?stream=Both", "stream: Unsupported value: \"Both\""),
    ];
    for (query, message) in cases {
        let answer = log(&served, "web", query);
        assert_eq!(answer.code, 422, "{query}: {}", answer.body);
        let status = answer.json();
        assert_eq!(status["reason"], "Invalid", "{query}");
        assert_eq!(status["details"]["kind"], "PodLogOptions", "{query}");
        let text = status["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{query}: {text}");
    }
    let malformed = log(&served, "web", "?tailLines=ten");
    assert_eq!(malformed.code, 400, "{}", malformed.body);
    assert!(malformed.json()["message"].as_str().unwrap_or_default().contains("tailLines"));
}

#[test]
fn a_missing_pod_is_404_and_a_pod_on_no_node_has_an_empty_log() {
    let served = serve();
    let missing = log(&served, "nothere", "");
    assert_eq!(missing.code, 404, "{}", missing.body);
    assert_eq!(missing.json()["message"], "pods \"nothere\" not found");
    create_pod(&served, "pending", &["app"], false);
    let empty = log(&served, "pending", "");
    assert_eq!((empty.code, empty.body.as_str()), (200, ""));
    assert!(empty.header("content-type").is_some_and(|t| t.starts_with("text/plain")), "{}", empty.head);
}

#[test]
fn a_pod_of_several_containers_needs_a_container_and_it_must_be_the_pods() {
    let served = serve();
    create_pod(&served, "duo", &["app", "sidecar"], true);
    let unnamed = log(&served, "duo", "");
    assert_eq!(unnamed.code, 400, "{}", unnamed.body);
    assert_eq!(
        unnamed.json()["message"],
        "a container name must be specified for pod duo, choose one of: [app sidecar]"
    );
    let wrong = log(&served, "duo", "?container=db");
    assert_eq!(wrong.code, 400, "{}", wrong.body);
    assert_eq!(wrong.json()["message"], "container db is not valid for pod duo");
    // Named, but the kubelet has not started it: its message, as kube-apiserver relays it.
    let waiting = log(&served, "duo", "?container=sidecar");
    assert_eq!(waiting.code, 400, "{}", waiting.body);
    assert_eq!(
        waiting.json()["message"],
        "container \"sidecar\" in pod \"duo\" is waiting to start: ContainerCreating"
    );
}

#[test]
fn the_log_comes_from_the_container_status_with_previous_tail_timestamps_and_limit() {
    let served = serve();
    create_pod(&served, "web", &["app"], true);
    let fresh = json!({"phase": "Running", "containerStatuses": [{"name": "app", "image": "example/app:1",
        "imageID": "", "ready": true, "restartCount": 0, "containerID": "containerd://a",
        "state": {"running": {"startedAt": STARTED}}}]});
    assert_eq!(patch_status(&served, "web", &fresh).code, 200);
    let no_previous = log(&served, "web", "?previous=true");
    assert_eq!(no_previous.code, 400, "{}", no_previous.body);
    assert_eq!(
        no_previous.json()["message"],
        "previous terminated container \"app\" in pod \"web\" not found"
    );

    assert_eq!(patch_status(&served, "web", &restarted_status()).code, 200);
    let current = log(&served, "web", "");
    assert_eq!(current.code, 200, "{}", current.body);
    let lines: Vec<&str> = current.body.lines().collect();
    assert_eq!(lines.len(), 2, "{}", current.body);
    assert!(
        lines[1].contains("container \"app\" started from image \"example/app:1\" (restart 1)"),
        "{lines:?}"
    );
    let previous = log(&served, "web", "?previous=true");
    assert_eq!(previous.code, 200, "{}", previous.body);
    assert!(previous.body.contains("(restart 0)"), "{}", previous.body);
    assert!(
        previous.body.trim_end().ends_with("container \"app\" exited with code 1 (Error)"),
        "{}",
        previous.body
    );

    let tail = log(&served, "web", "?tailLines=1");
    assert_eq!(tail.body.lines().collect::<Vec<_>>(), vec![lines[1]]);
    let none = log(&served, "web", "?tailLines=0");
    assert_eq!((none.code, none.body.as_str()), (200, ""));
    let stamped = log(&served, "web", "?timestamps=true&tailLines=1");
    assert_eq!(stamped.body, format!("2026-01-02T03:04:05.000000000Z {}\n", lines[1]));
    let limited = log(&served, "web", "?limitBytes=10");
    assert_eq!(limited.body, current.body[..10]);
    // Every line of the current instance is older than an hour: sinceSeconds leaves none.
    let since = log(&served, "web", "?sinceSeconds=3600");
    assert_eq!((since.code, since.body.as_str()), (200, ""));
    let since_time = log(&served, "web", "?previous=true&sinceTime=2026-01-02T03:04:08Z");
    assert_eq!(since_time.body.lines().count(), 1, "{}", since_time.body);
}

#[test]
fn a_followed_log_streams_until_the_container_exits() {
    let served = serve();
    create_pod(&served, "job", &["app"], true);
    let running = json!({"phase": "Running", "containerStatuses": [{"name": "app", "image": "example/app:1",
        "imageID": "", "ready": true, "restartCount": 0, "containerID": "containerd://a",
        "state": {"running": {"startedAt": STARTED}}}]});
    assert_eq!(patch_status(&served, "job", &running).code, 200);
    let mut stream = send(&served, "GET", "/api/v1/namespaces/default/pods/job/log?follow=true", &[], b"");
    let mut raw = Vec::new();
    let mut buffer = [0_u8; 4096];
    // The stream is open and has sent the lines so far before the container exits.
    while !String::from_utf8_lossy(&raw).contains("started from image") {
        let n = stream.read(&mut buffer).expect("reading the stream");
        assert!(n > 0, "the stream ended before the container exited: {}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buffer[..n]);
    }
    let done = json!({"phase": "Succeeded", "containerStatuses": [{"name": "app", "image": "example/app:1",
        "imageID": "", "ready": false, "restartCount": 0, "containerID": "containerd://a",
        "state": {"running": null, "terminated": {"exitCode": 0, "reason": "Completed", "containerID": "containerd://a",
            "startedAt": STARTED, "finishedAt": CRASHED}}}]});
    assert_eq!(patch_status(&served, "job", &done).code, 200);
    stream.read_to_end(&mut raw).expect("the stream ends");
    let followed = answer(&raw);
    assert_eq!(followed.code, 200);
    let lines: Vec<&str> = followed.body.lines().collect();
    assert_eq!(lines.len(), 3, "{}", followed.body);
    assert_eq!(lines[2], "kube-sim: container \"app\" exited with code 0 (Completed)");
}

#[test]
fn access_reviews_are_allowed_in_json_and_protobuf_and_need_exactly_one_kind_of_attributes() {
    let served = serve();
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}});
    let answer = post(&served, path, &review);
    assert_eq!(answer.code, 201, "{}", answer.body);
    let body = answer.json();
    assert_eq!(body["status"]["allowed"], true);
    assert_eq!(body["spec"], review["spec"]);

    let empty = post(&served, path, &json!({"kind": "SelfSubjectAccessReview", "spec": {}}));
    assert_eq!(empty.code, 422, "{}", empty.body);
    assert!(
        empty.json()["message"]
            .as_str()
            .unwrap_or_default()
            .contains("exactly one of nonResourceAttributes or resourceAttributes")
    );

    // What kubectl sends: runtime.Unknown { raw: Review { spec: { resourceAttributes: {...} } } }.
    let mut attributes = wire::Writer::new();
    attributes.string(1, "default").string(2, "create").string(5, "pods");
    let mut spec = wire::Writer::new();
    spec.message(1, attributes);
    let mut review = wire::Writer::new();
    review.message(2, spec);
    let mut envelope = wire::Writer::new();
    envelope.bytes(2, &review.finish());
    let body = [b"k8s\x00".to_vec(), envelope.finish()].concat();
    let answer =
        request(&served, "POST", path, &[("Content-Type", "application/vnd.kubernetes.protobuf")], &body);
    assert_eq!(answer.code, 201, "{}", answer.body);
    let answered = answer.json();
    assert_eq!(answered["status"]["allowed"], true);
    assert_eq!(
        answered["spec"]["resourceAttributes"],
        json!({"namespace": "default", "verb": "create", "resource": "pods"})
    );

    let listed = get(&served, path);
    assert_eq!(listed.code, 405, "{}", listed.body);
}

#[test]
fn a_rules_review_answers_every_verb_on_everything() {
    let served = serve();
    let review = json!({"kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}});
    let answer = post(&served, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", &review);
    assert_eq!(answer.code, 201, "{}", answer.body);
    let status = &answer.json()["status"];
    assert_eq!(status["resourceRules"], json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]));
    assert_eq!(status["nonResourceRules"], json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}]));
    assert_eq!(status["incomplete"], false);
}

const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

fn widgets_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "description": "The widget's wishes.", "properties": {
                        "size": {"type": "integer", "description": "How big the widget is."},
                        "mode": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "note": {"type": "string", "nullable": true}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})
}

/// Every resource of a legacy list as comparable facts: (name, kind, namespaced, verbs,
/// singular, short names, categories).
fn legacy_facts(list: &Value) -> BTreeSet<String> {
    list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            let (group, version) = (r["group"].as_str().unwrap_or(""), r["version"].as_str().unwrap_or(""));
            format!(
                "{} {} {}/{} {} {} {} {} {}",
                r["name"].as_str().unwrap(),
                r["kind"],
                group,
                version,
                r["namespaced"],
                r["verbs"],
                if r["name"].as_str().unwrap().contains('/') { json!("") } else { r["singularName"].clone() },
                r.get("shortNames").cloned().unwrap_or(json!([])),
                r.get("categories").cloned().unwrap_or(json!([])),
            )
        })
        .collect()
}

/// The same facts of an aggregated version entry.
fn aggregated_facts(version: &Value) -> BTreeSet<String> {
    let mut facts = BTreeSet::new();
    for r in version["resources"].as_array().expect("resources") {
        let namespaced = r["scope"] == "Namespaced";
        let kind = &r["responseKind"];
        facts.insert(format!(
            "{} {} {}/{} {} {} {} {} {}",
            r["resource"].as_str().unwrap(),
            kind["kind"],
            kind["group"].as_str().unwrap(),
            kind["version"].as_str().unwrap(),
            namespaced,
            r["verbs"],
            r["singularResource"],
            r.get("shortNames").cloned().unwrap_or(json!([])),
            r.get("categories").cloned().unwrap_or(json!([])),
        ));
        for sub in r["subresources"].as_array().into_iter().flatten() {
            let kind = &sub["responseKind"];
            facts.insert(format!(
                "{}/{} {} {}/{} {} {} \"\" [] []",
                r["resource"].as_str().unwrap(),
                sub["subresource"].as_str().unwrap(),
                kind["kind"],
                kind["group"].as_str().unwrap(),
                kind["version"].as_str().unwrap(),
                namespaced,
                sub["verbs"],
            ));
        }
    }
    facts
}

#[test]
fn aggregated_discovery_holds_every_group_version_and_resource_of_the_legacy_documents() {
    let served = serve();
    assert_eq!(
        post(&served, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &widgets_crd()).code,
        201
    );
    let accept = [("Accept", AGGREGATED)];
    for (root, legacy_versions) in [("/api", None), ("/apis", Some(get(&served, "/apis").json()))] {
        let answer = request(&served, "GET", root, &accept, b"");
        assert_eq!(answer.code, 200, "{root}: {}", answer.body);
        assert_eq!(
            answer.header("content-type").as_deref(),
            Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
        );
        assert_eq!(answer.header("vary").as_deref(), Some("Accept"));
        let doc = answer.json();
        assert_eq!(
            (doc["kind"].as_str(), doc["apiVersion"].as_str()),
            (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io/v2"))
        );
        // The groups and versions of the legacy document, in its order.
        let groups: Vec<(String, Vec<String>)> = match &legacy_versions {
            None => vec![(String::new(), vec!["v1".to_owned()])],
            Some(list) => list["groups"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| {
                    let versions = g["versions"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v["version"].as_str().unwrap().to_owned())
                        .collect();
                    (g["name"].as_str().unwrap().to_owned(), versions)
                })
                .collect(),
        };
        let items = doc["items"].as_array().expect("items");
        assert_eq!(items.len(), groups.len(), "{root}");
        for (item, (name, versions)) in items.iter().zip(&groups) {
            assert_eq!(item["metadata"]["name"].as_str().unwrap_or(""), name);
            let served_versions: Vec<&str> =
                item["versions"].as_array().unwrap().iter().map(|v| v["version"].as_str().unwrap()).collect();
            assert_eq!(&served_versions, versions, "{name}");
            for version in item["versions"].as_array().unwrap() {
                let v = version["version"].as_str().unwrap();
                let path = if name.is_empty() { format!("/api/{v}") } else { format!("/apis/{name}/{v}") };
                assert_eq!(aggregated_facts(version), legacy_facts(&get(&served, &path).json()), "{path}");
            }
        }
        assert!(
            root == "/api" || items.iter().any(|i| i["metadata"]["name"] == "example.com"),
            "the CRD's group is listed"
        );
        // A client that has it cached gets 304.
        let etag = answer.header("etag").expect("an ETag");
        let again = request(&served, "GET", root, &[("Accept", AGGREGATED), ("If-None-Match", &etag)], b"");
        assert_eq!(again.code, 304, "{root}");
    }
    let legacy = get(&served, "/apis");
    assert_eq!(legacy.json()["kind"], "APIGroupList");
    let core = get(&served, "/api/v1").json();
    assert!(legacy_facts(&core).iter().any(|f| f.starts_with("pods/log \"Pod\" / true [\"get\"]")), "{core}");
}

/// Every `$ref` in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r.clone());
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn openapi_v2_has_every_kind_and_crd_schema_with_resolvable_references_in_json_and_protobuf() {
    let served = serve();
    assert_eq!(
        post(&served, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &widgets_crd()).code,
        201
    );
    let doc = get(&served, "/openapi/v2").json();
    assert_eq!(doc["swagger"], "2.0");
    let definitions = doc["definitions"].as_object().expect("definitions");
    let deployment = &definitions["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deployment["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "version": "v1", "kind": "Deployment"}])
    );
    assert_eq!(
        definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["selector"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
    );
    let mut all = Vec::new();
    refs(&doc["definitions"], &mut all);
    assert!(!all.is_empty());
    for r in &all {
        let name = r.strip_prefix("#/definitions/").unwrap_or_else(|| panic!("a v3 reference left: {r}"));
        assert!(definitions.contains_key(name), "{r} is not defined");
    }
    let widget = &definitions["com.example.v1.Widget"];
    let spec = &widget["properties"]["spec"]["properties"];
    assert_eq!(spec["size"], json!({"type": "integer", "description": "How big the widget is."}));
    // What Swagger 2.0 cannot say is dropped, as kube-apiserver drops it.
    assert_eq!(spec["mode"], json!({"x-kubernetes-int-or-string": true}));
    assert_eq!(spec["note"], json!({}));
    // The paths carry the patch operation with fieldValidation that kubectl 1.25/1.26 look for.
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Deployment");
    assert!(
        patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
    );

    let pb = request(
        &served,
        "GET",
        "/openapi/v2",
        &[("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")],
        b"",
    );
    assert_eq!(pb.code, 200);
    assert_eq!(
        pb.header("content-type").as_deref(),
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    // The body is binary: read it again as bytes.
    let mut stream = send(
        &served,
        "GET",
        "/openapi/v2",
        &[("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")],
        b"",
    );
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a head") + 4;
    let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
    assert!(!head.contains("chunked"), "a whole body");
    let fields = wire::fields(&raw[split..]).expect("a protobuf Document");
    fn bytes<'a>(f: &wire::Field<'a>) -> &'a [u8] {
        match f {
            wire::Field::Bytes(b) => b,
            other => panic!("not bytes: {other:?}"),
        }
    }
    assert_eq!(bytes(&fields.iter().find(|(n, _)| *n == 1).expect("swagger").1), b"2.0");
    let defs = bytes(&fields.iter().find(|(n, _)| *n == 9).expect("definitions").1);
    let names: BTreeSet<String> = wire::fields(defs)
        .expect("Definitions")
        .iter()
        .map(|(_, named)| {
            let named = wire::fields(bytes(named)).expect("NamedSchema");
            String::from_utf8_lossy(bytes(&named[0].1)).into_owned()
        })
        .collect();
    assert_eq!(names, definitions.keys().cloned().collect::<BTreeSet<_>>());
}
