//! `kube-sim serve` on the wire: discovery documents, Status errors for bad requests, and watch
//! streams, checked with raw HTTP/1.1 requests.

use std::{
    io::{Read, Write},
    net::TcpStream,
};

use controllers::serve::{ServeConfig, Served, spawn};
use serde_json::{Value, json};

/// One HTTP answer: status code and body.
struct Answer {
    code: u16,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    /// The JSON lines of a watch stream.
    fn lines(&self) -> Vec<Value> {
        self.body.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
    }
}

/// Send one request with `Connection: close` and read the whole answer (chunked bodies are
/// decoded).
fn request(served: &Served, method: &str, path: &str, content_type: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(served.addr()).expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("a status line");
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    Answer { code, body: if chunked { dechunk(body) } else { body.to_owned() } }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    out
}

fn get(served: &Served, path: &str) -> Answer {
    request(served, "GET", path, "application/json", b"")
}

fn serve() -> Served {
    spawn(ServeConfig { seed: Some(7), ..ServeConfig::default() }).expect("the server starts")
}

#[test]
fn discovery_lists_the_core_version_the_groups_and_each_resource_with_its_subresources() {
    let served = serve();
    assert_eq!(get(&served, "/api").json()["versions"], json!(["v1"]));
    let groups = get(&served, "/apis").json();
    let names: Vec<&str> =
        groups["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["apiextensions.k8s.io", "apps", "batch", "coordination.k8s.io", "events.k8s.io"]);
    let core = get(&served, "/api/v1").json();
    assert_eq!((&core["kind"], &core["groupVersion"]), (&json!("APIResourceList"), &json!("v1")));
    let pods = core["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods").unwrap();
    assert_eq!(
        (&pods["kind"], &pods["namespaced"], &pods["shortNames"]),
        (&json!("Pod"), &json!(true), &json!(["po"]))
    );
    assert!(core["resources"].as_array().unwrap().iter().any(|r| r["name"] == "pods/status"));
    let apps = get(&served, "/apis/apps/v1").json();
    let scale =
        apps["resources"].as_array().unwrap().iter().find(|r| r["name"] == "deployments/scale").unwrap();
    assert_eq!(
        (&scale["kind"], &scale["group"], &scale["version"]),
        (&json!("Scale"), &json!("autoscaling"), &json!("v1"))
    );
    assert_eq!(get(&served, "/version").json()["major"], json!("1"));
}

#[test]
fn the_default_namespaces_exist_at_start() {
    let served = serve();
    let list = get(&served, "/api/v1/namespaces").json();
    let names: Vec<&str> =
        list["items"].as_array().unwrap().iter().map(|n| n["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["default", "kube-public", "kube-system"]);
    assert_eq!(list["kind"], json!("NamespaceList"));
}

#[test]
fn an_unknown_path_gets_a_404_status() {
    let served = serve();
    let answer = get(&served, "/api/v1/nothings");
    assert_eq!(answer.code, 404);
    assert_eq!(
        answer.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "the server could not find the requested resource", "reason": "NotFound", "code": 404})
    );
}

#[test]
fn a_missing_object_gets_404_with_the_real_message() {
    let served = serve();
    let answer = get(&served, "/api/v1/namespaces/default/configmaps/absent");
    assert_eq!(answer.code, 404);
    assert_eq!(answer.json()["message"], json!("configmaps \"absent\" not found"));
}

#[test]
fn malformed_bodies_and_parameters_get_400_and_protobuf_gets_415_without_hurting_the_server() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    let garbage = request(&served, "POST", path, "application/json", b"{not json");
    assert_eq!((garbage.code, garbage.json()["reason"].clone()), (400, json!("BadRequest")));
    let protobuf = request(&served, "POST", path, "application/vnd.kubernetes.protobuf", b"k8s\x00\x0a\x0b");
    assert_eq!((protobuf.code, protobuf.json()["reason"].clone()), (415, json!("UnsupportedMediaType")));
    let bad_flag = get(&served, &format!("{path}?watch=maybe"));
    assert_eq!(bad_flag.code, 400);
    let bad_limit = get(&served, &format!("{path}?limit=many"));
    assert_eq!(bad_limit.code, 400);
    let bad_patch = request(&served, "PATCH", &format!("{path}/x"), "text/plain", b"{}");
    assert_eq!(bad_patch.code, 415);
    let array = request(&served, "POST", path, "application/json", b"[1,2]");
    assert_eq!(array.code, 400);
    // The server still answers.
    assert_eq!(get(&served, path).code, 200);
}

#[test]
fn a_watch_from_a_compacted_revision_gets_200_with_one_error_event_carrying_410() {
    let served = serve();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let path = "/api/v1/namespaces/default/configmaps";
    for name in ["a", "b", "c"] {
        let mut body = cm.clone();
        body["metadata"]["name"] = json!(name);
        assert_eq!(request(&served, "POST", path, "application/json", body.to_string().as_bytes()).code, 201);
    }
    served.live().with_model(|m| {
        let now = m.server.revision();
        m.server.compact(now);
    });
    let answer = get(&served, &format!("{path}?watch=true&resourceVersion=1&timeoutSeconds=5"));
    assert_eq!(answer.code, 200);
    let lines = answer.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!((&lines[0]["type"], &lines[0]["object"]["code"]), (&json!("ERROR"), &json!(410)));
    assert_eq!(lines[0]["object"]["reason"], json!("Expired"));
}

#[test]
fn a_watch_with_send_initial_events_starts_with_the_state_and_an_initial_events_end_bookmark() {
    let served = serve();
    let answer = get(
        &served,
        "/api/v1/namespaces?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
    );
    assert_eq!(answer.code, 200);
    let lines = answer.lines();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "ADDED", "BOOKMARK"]);
    assert_eq!(lines[3]["object"]["metadata"]["annotations"], json!({"k8s.io/initial-events-end": "true"}));
}

#[test]
fn a_bad_label_selector_on_a_watch_is_an_error_reply_not_a_stream() {
    let served = serve();
    let answer = get(&served, "/api/v1/namespaces?watch=1&labelSelector=a%20in%20(");
    assert_eq!(answer.json()["kind"], json!("Status"));
    assert_eq!(answer.code, answer.json()["code"].as_u64().unwrap() as u16);
    assert!(answer.code >= 400, "a bad selector was accepted: {}", answer.body);
}

#[test]
fn list_pagination_returns_a_continue_token_and_the_rest() {
    let served = serve();
    let first = get(&served, "/api/v1/namespaces?limit=2").json();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let token = first["metadata"]["continue"].as_str().expect("a continue token").to_owned();
    let encoded: String = form_urlencoded::byte_serialize(token.as_bytes()).collect();
    let rest = get(&served, &format!("/api/v1/namespaces?limit=2&continue={encoded}")).json();
    let names: Vec<&str> =
        rest["items"].as_array().unwrap().iter().map(|n| n["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["kube-system"]);
}

#[test]
fn crds_given_at_start_are_served_with_their_custom_resources() {
    let dir = tempfile::tempdir().unwrap();
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";
    std::fs::write(dir.path().join("widgets.yaml"), crd).unwrap();
    let served = spawn(ServeConfig { crds: Some(dir.path().to_owned()), ..ServeConfig::default() }).unwrap();
    let resources = get(&served, "/apis/example.com/v1").json();
    let widgets = &resources["resources"][0];
    assert_eq!(
        (&widgets["name"], &widgets["kind"], &widgets["namespaced"]),
        (&json!("widgets"), &json!("Widget"), &json!(true))
    );
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "size": 3});
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    assert_eq!(request(&served, "POST", path, "application/json", widget.to_string().as_bytes()).code, 201);
    assert_eq!(get(&served, &format!("{path}/w")).json()["size"], json!(3));
}

#[test]
fn a_dry_run_create_answers_the_object_but_stores_nothing() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}});
    let answer = request(
        &served,
        "POST",
        &format!("{path}?dryRun=All"),
        "application/json",
        cm.to_string().as_bytes(),
    );
    assert_eq!((answer.code, answer.json()["metadata"]["name"].clone()), (201, json!("dry")));
    assert_eq!(get(&served, &format!("{path}/dry")).code, 404);
}
