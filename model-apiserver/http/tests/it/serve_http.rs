//! `kube-sim serve` on the wire: discovery documents, Status errors for bad requests, and watch
//! streams, checked with raw HTTP/1.1 requests.

use std::{
    io::{Read, Write},
    net::TcpStream,
};

use model_apiserver_http::{ServeConfig, Served, spawn};
use serde_json::{Value, json};

/// One HTTP answer: status code and body.
struct Answer {
    code: u16,
    /// The header block, as sent.
    head: String,
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
    request_with(served, method, path, &format!("Content-Type: {content_type}\r\n"), body)
}

/// [`request`] with header lines of its own (each ending in CRLF).
fn request_with(served: &Served, method: &str, path: &str, headers: &str, body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(served.addr()).expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n",
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
    Answer { code, head: head.to_owned(), body: if chunked { dechunk(body) } else { body.to_owned() } }
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

/// The media type of Kubernetes protobuf bodies.
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// One length-delimited protobuf field (wire type 2) with a short payload.
fn pb_field(number: u8, payload: &[u8]) -> Vec<u8> {
    let length = u8::try_from(payload.len()).ok().filter(|l| *l < 0x80).expect("a short payload");
    [&[(number << 3) | 2, length][..], payload].concat()
}

/// A Kubernetes protobuf body: the magic, then `runtime.Unknown{typeMeta, raw}`.
fn pb_envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [pb_field(1, api_version.as_bytes()), pb_field(2, kind.as_bytes())].concat();
    [b"k8s\x00".to_vec(), pb_field(1, &type_meta), pb_field(2, raw)].concat()
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
    assert_eq!(
        names,
        [
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "apps",
            "authorization.k8s.io",
            "autoscaling",
            "batch",
            "coordination.k8s.io",
            "discovery.k8s.io",
            "events.k8s.io",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "scheduling.k8s.io",
            "storage.k8s.io"
        ]
    );
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
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
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
               "message": "the server could not find the requested resource", "reason": "NotFound", "code": 404,
               "details": {}})
    );
}

#[test]
fn a_path_of_a_group_or_version_nothing_serves_gets_the_plain_404_page() {
    let served = serve();
    for path in
        ["/apis/nosuch.example.com/v1/namespaces/default/things", "/apis/apps/v9/deployments", "/nothing"]
    {
        let answer = get(&served, path);
        assert_eq!((answer.code, answer.body.as_str()), (404, "404 page not found\n"), "{path}");
    }
    // A served group version still answers for an unknown resource with a Status.
    assert_eq!(get(&served, "/apis/apps/v1/nothings").json()["reason"], json!("NotFound"));
}

#[test]
fn a_missing_object_gets_404_with_the_real_message() {
    let served = serve();
    let answer = get(&served, "/api/v1/namespaces/default/configmaps/absent");
    assert_eq!(answer.code, 404);
    assert_eq!(answer.json()["message"], json!("configmaps \"absent\" not found"));
}

#[test]
fn malformed_bodies_and_parameters_get_400_without_hurting_the_server() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    let garbage = request(&served, "POST", path, "application/json", b"{not json");
    assert_eq!((garbage.code, garbage.json()["reason"].clone()), (400, json!("BadRequest")));
    assert_eq!(
        garbage.json()["message"],
        json!(
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({not json)"
        )
    );
    // A protobuf envelope cut off in its first field.
    let protobuf = request(&served, "POST", path, PROTOBUF, b"k8s\x00\x0a\x0b");
    assert_eq!((protobuf.code, protobuf.json()["reason"].clone()), (400, json!("BadRequest")));
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
    // default, kube-node-lease, kube-public and kube-system, then the bookmark.
    assert_eq!(types, ["ADDED", "ADDED", "ADDED", "ADDED", "BOOKMARK"]);
    assert_eq!(lines[4]["object"]["metadata"]["annotations"], json!({"k8s.io/initial-events-end": "true"}));
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
    // The first page held default and kube-node-lease.
    assert_eq!(names, ["kube-public", "kube-system"]);
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
    // An unstructured list's items keep their apiVersion and kind, and its metadata always has
    // `continue`, empty on the last page.
    let list = get(&served, path).json();
    let item = &list["items"][0];
    assert_eq!((&item["apiVersion"], &item["kind"]), (&json!("example.com/v1"), &json!("Widget")));
    assert_eq!(list["metadata"]["continue"], json!(""));
    // The custom resource handler words a patch type it does not take as the patch handler does.
    let smp =
        request(&served, "PATCH", &format!("{path}/w"), "application/strategic-merge-patch+json", b"{}");
    assert_eq!(smp.code, 415);
    assert_eq!(
        smp.json()["message"],
        json!(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        )
    );
    // A subresource the CRD does not enable is a NotFound of the object, whether it exists or not.
    for name in ["w", "absent"] {
        let status = request(&served, "PATCH", &format!("{path}/{name}/status"), MERGE, b"{}");
        assert_eq!(status.code, 404, "{name}");
        assert_eq!(
            status.json()["details"],
            json!({"name": name, "group": "example.com", "kind": "widgets"}),
            "{name}"
        );
    }
}

/// The merge patch media type.
const MERGE: &str = "application/merge-patch+json";

#[test]
fn a_built_in_kinds_list_items_carry_no_api_version_or_kind() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}});
    assert_eq!(request(&served, "POST", path, "application/json", cm.to_string().as_bytes()).code, 201);
    let list = get(&served, path).json();
    assert_eq!((&list["apiVersion"], &list["kind"]), (&json!("v1"), &json!("ConfigMapList")));
    let item = &list["items"][0];
    assert_eq!((item.get("apiVersion"), item.get("kind")), (None, None), "{item}");
    assert_eq!(list["metadata"].get("continue"), None);
    assert_eq!((&item["metadata"]["name"], &item["data"]), (&json!("a"), &json!({"k": "v"})));
    // A single object does carry them.
    assert_eq!(get(&served, &format!("{path}/a")).json()["kind"], json!("ConfigMap"));
}

#[test]
fn delete_answers_200_with_a_success_status_that_has_no_code() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let created = request(&served, "POST", path, "application/json", cm.to_string().as_bytes()).json();
    let answer = request(&served, "DELETE", &format!("{path}/a"), "application/json", b"");
    assert_eq!(answer.code, 200);
    assert_eq!(
        answer.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]}})
    );
}

#[test]
fn a_built_in_kinds_unknown_patch_type_or_subresource_gets_the_routers_answer() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    assert_eq!(request(&served, "POST", path, "application/json", cm.to_string().as_bytes()).code, 201);
    let bad = request(&served, "PATCH", &format!("{path}/a"), "text/plain", b"{}");
    assert_eq!(bad.code, 415);
    assert_eq!(
        (&bad.json()["reason"], &bad.json()["message"]),
        (&json!("UnsupportedMediaType"), &json!("415: Unsupported Media Type"))
    );
    // A ConfigMap has no /status route: the generic 404, whether the object exists or not.
    for name in ["a", "absent"] {
        let answer = get(&served, &format!("{path}/{name}/status"));
        assert_eq!(answer.code, 404, "{name}");
        assert_eq!(
            answer.json()["message"],
            json!("the server could not find the requested resource"),
            "{name}"
        );
        assert_eq!(answer.json()["details"], json!({}), "{name}");
    }
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

#[test]
fn a_protobuf_configmap_is_created_with_its_name_labels_and_data() {
    let served = serve();
    let label = pb_field(11, &[pb_field(1, b"tier"), pb_field(2, b"web")].concat());
    let metadata = [pb_field(1, b"app"), label].concat();
    let entries = [pb_field(2, &[pb_field(1, b"a"), pb_field(2, b"1")].concat())].concat();
    let configmap = [pb_field(1, &metadata), entries].concat();
    let body = pb_envelope("v1", "ConfigMap", &configmap);
    let created = request(&served, "POST", "/api/v1/namespaces/default/configmaps", PROTOBUF, &body);
    assert_eq!(created.code, 201, "{}", created.body);
    let stored = get(&served, "/api/v1/namespaces/default/configmaps/app").json();
    assert_eq!(
        (&stored["metadata"]["name"], &stored["metadata"]["labels"], &stored["data"]),
        (&json!("app"), &json!({"tier": "web"}), &json!({"a": "1"}))
    );
}

#[test]
fn a_protobuf_body_of_a_kind_without_protobuf_gets_415_naming_the_kind() {
    let served = serve();
    let crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let body = pb_envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", b"");
    let answer = request(&served, "POST", crd, PROTOBUF, &body);
    assert_eq!(
        (answer.code, answer.json()["reason"].clone(), answer.json()["message"].clone()),
        (
            415,
            json!("UnsupportedMediaType"),
            json!(
                "kube-sim serve cannot decode CustomResourceDefinition (apiextensions.k8s.io/v1) from \
                 protobuf; send it as application/json"
            )
        )
    );
}

#[test]
fn a_protobuf_object_whose_raw_message_is_corrupt_gets_400_and_the_server_still_answers() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    // Field 1 (metadata) claims 100 bytes and has 2.
    let body = pb_envelope("v1", "ConfigMap", &[0x0a, 100, 1, 2]);
    let answer = request(&served, "POST", path, PROTOBUF, &body);
    assert_eq!((answer.code, answer.json()["reason"].clone()), (400, json!("BadRequest")));
    let no_magic = request(&served, "POST", path, PROTOBUF, b"\x0a\x02\x0a\x00");
    assert_eq!((no_magic.code, no_magic.json()["reason"].clone()), (400, json!("BadRequest")));
    assert_eq!(get(&served, path).code, 200);
}

#[test]
fn a_protobuf_delete_options_body_is_read_so_a_wrong_uid_precondition_gets_409() {
    let served = serve();
    let path = "/api/v1/namespaces/default/configmaps";
    let created = request(&served, "POST", path, "application/json", br#"{"metadata":{"name":"app"}}"#);
    assert_eq!(created.code, 201);
    let preconditions = pb_field(2, &pb_field(1, b"not-the-uid"));
    let options = pb_envelope("v1", "DeleteOptions", &preconditions);
    let refused = request(&served, "DELETE", &format!("{path}/app"), PROTOBUF, &options);
    assert_eq!((refused.code, refused.json()["reason"].clone()), (409, json!("Conflict")));
    let background = pb_envelope("v1", "DeleteOptions", &pb_field(4, b"Background"));
    let deleted = request(&served, "DELETE", &format!("{path}/app"), PROTOBUF, &background);
    assert_eq!(deleted.code, 200, "{}", deleted.body);
    assert_eq!(get(&served, &format!("{path}/app")).code, 404);
}

#[test]
fn an_unknown_field_is_dropped_with_a_warning_header_by_default() {
    let served = serve();
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w"},"data":{"k":"v"},"foo":1}"#;
    let answer = request(&served, "POST", "/api/v1/namespaces/default/configmaps", "application/json", body);
    assert_eq!(answer.code, 201, "{}", answer.body);
    assert!(answer.json().get("foo").is_none());
    assert!(
        answer.head.lines().any(|l| l.eq_ignore_ascii_case(r#"warning: 299 - "unknown field \"foo\"""#)),
        "{}",
        answer.head
    );
}

#[test]
fn field_validation_strict_refuses_unknown_fields_and_a_bad_directive_gets_422() {
    let served = serve();
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"foo":1}"#;
    let path = "/api/v1/namespaces/default/configmaps?fieldValidation=Strict";
    let answer = request(&served, "POST", path, "application/json", body);
    assert_eq!(answer.code, 400, "{}", answer.body);
    assert_eq!(
        answer.json()["message"],
        json!(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"foo\""
        )
    );
    let bad = request(
        &served,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Loose",
        "application/json",
        body,
    );
    assert_eq!(bad.code, 422, "{}", bad.body);
    assert_eq!(bad.json()["details"]["kind"], json!("CreateOptions"));
    assert_eq!(get(&served, "/api/v1/namespaces/default/configmaps/s").code, 404);
}

#[test]
fn invalid_delete_options_get_422_and_delete_nothing() {
    let served = serve();
    let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"}}"#;
    assert_eq!(
        request(&served, "POST", "/api/v1/namespaces/default/configmaps", "application/json", body).code,
        201
    );
    let both = br#"{"kind":"DeleteOptions","apiVersion":"v1","orphanDependents":true,"propagationPolicy":"Background"}"#;
    let answer =
        request(&served, "DELETE", "/api/v1/namespaces/default/configmaps/d", "application/json", both);
    assert_eq!(answer.code, 422, "{}", answer.body);
    assert_eq!(answer.json()["details"]["kind"], json!("DeleteOptions"));
    assert_eq!(answer.json()["details"]["causes"][0]["field"], json!("propagationPolicy"));
    let unknown = request(
        &served,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/d?propagationPolicy=Sometimes",
        "application/json",
        b"",
    );
    assert_eq!(unknown.code, 422, "{}", unknown.body);
    assert_eq!(unknown.json()["details"]["causes"][0]["reason"], json!("FieldValueNotSupported"));
    assert_eq!(get(&served, "/api/v1/namespaces/default/configmaps/d").code, 200);
}

/// POST `pods/{name}/eviction` as kubectl drain and client-go send it: the real answers and
/// codes, and `pods/eviction` in discovery.
#[test]
fn an_eviction_answers_201_success_or_the_budgets_refusal_with_its_code() {
    let served = serve();
    let post = |path: &str, body: Value| {
        request(&served, "POST", path, "application/json", body.to_string().as_bytes())
    };
    let merge = |path: &str, body: Value| {
        let answer =
            request(&served, "PATCH", path, "application/merge-patch+json", body.to_string().as_bytes());
        assert_eq!(answer.code, 200, "{}", answer.body);
    };
    let running_pod = |name: &str| {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]}});
        assert_eq!(post("/api/v1/namespaces/default/pods", pod).code, 201);
        merge(
            &format!("/api/v1/namespaces/default/pods/{name}/status"),
            json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
        );
    };
    let budget = |name: &str, status: Value| {
        let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
        assert_eq!(post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb).code, 201);
        merge(
            &format!("/apis/policy/v1/namespaces/default/poddisruptionbudgets/{name}/status"),
            json!({"status": status}),
        );
    };
    let evict = |name: &str| {
        let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});
        post(&format!("/api/v1/namespaces/default/pods/{name}/eviction"), eviction)
    };

    let core = get(&served, "/api/v1").json();
    let eviction =
        core["resources"].as_array().unwrap().iter().find(|r| r["name"] == "pods/eviction").unwrap();
    assert_eq!(
        (&eviction["kind"], &eviction["group"], &eviction["version"], &eviction["verbs"]),
        (&json!("Eviction"), &json!("policy"), &json!("v1"), &json!(["create"]))
    );

    running_pod("a");
    let answer = evict("a");
    assert_eq!(answer.code, 201, "{}", answer.body);
    assert_eq!(
        answer.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    assert!(
        get(&served, "/api/v1/namespaces/default/pods/a").json()["metadata"]["deletionTimestamp"].is_string()
    );

    running_pod("b");
    budget(
        "web",
        json!({"observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1}),
    );
    let refused = evict("b");
    assert_eq!(refused.code, 429, "{}", refused.body);
    let status = refused.json();
    assert_eq!(
        (&status["reason"], &status["message"]),
        (
            &json!("TooManyRequests"),
            &json!("Cannot evict pod as it would violate the pod's disruption budget.")
        )
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "DisruptionBudget", "message": "The disruption budget web needs 1 healthy pods and has 1 currently"}])
    );
    assert!(
        !refused.head.to_ascii_lowercase().contains("retry-after"),
        "no delay is suggested: {}",
        refused.head
    );

    // A budget whose status is behind: 429 with a Retry-After, which client-go honours.
    merge(
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web",
        json!({"spec": {"minAvailable": 2}}),
    );
    let processing = evict("b");
    assert_eq!(processing.code, 429);
    assert!(processing.head.to_ascii_lowercase().contains("retry-after: 10"), "{}", processing.head);

    budget("web-too", json!({"observedGeneration": 1, "disruptionsAllowed": 1}));
    let two = evict("b");
    assert_eq!(two.code, 500, "{}", two.body);
    assert_eq!(
        two.json()["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );

    let mismatch = post("/api/v1/namespaces/default/pods/b/eviction", json!({"metadata": {"name": "a"}}));
    assert_eq!(
        (mismatch.code, mismatch.json()["message"].clone()),
        (400, json!("name in URL does not match name in Eviction object"))
    );
    assert_eq!(evict("missing").code, 404);
    assert_eq!(get(&served, "/api/v1/namespaces/default/pods/b/eviction").code, 405);
    assert_eq!(
        get(&served, "/api/v1/namespaces/default/pods/b").json()["metadata"]["deletionTimestamp"],
        Value::Null
    );
}

/// The causes (field and message) of a 422 on ListOptions.
fn list_option_causes(answer: &Answer) -> Vec<String> {
    assert_eq!(answer.code, 422, "{}", answer.body);
    let status = answer.json();
    assert_eq!(status["details"]["kind"], json!("ListOptions"));
    let causes = status["details"]["causes"].as_array().unwrap();
    causes
        .iter()
        .map(|c| format!("{}: {}", c["field"].as_str().unwrap(), c["message"].as_str().unwrap()))
        .collect()
}

// ValidateListOptions and validateWatchOptions
// (staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion/validation/validation.go):
// every cause at once, in upstream's order; a watch takes resourceVersionMatch only with
// sendInitialEvents, and only NotOlderThan; a list never takes sendInitialEvents.
#[test]
fn list_and_watch_options_are_validated_as_the_real_server_does() {
    let served = serve();
    let answer = get(&served, "/api/v1/namespaces?resourceVersionMatch=Bogus");
    assert_eq!(
        list_option_causes(&answer),
        [
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            "resourceVersionMatch: Unsupported value: \"Bogus\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ]
    );
    let answer =
        get(&served, "/api/v1/namespaces?resourceVersionMatch=NotOlderThan&resourceVersion=1&continue=x");
    assert_eq!(
        list_option_causes(&answer),
        ["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"]
    );
    let answer = get(&served, "/api/v1/namespaces?sendInitialEvents=true");
    assert_eq!(
        list_option_causes(&answer),
        ["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"]
    );
    let answer =
        get(&served, "/api/v1/namespaces?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1");
    assert_eq!(
        list_option_causes(&answer),
        [
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
        ]
    );
    let answer = get(&served, "/api/v1/namespaces?watch=1&sendInitialEvents=true&resourceVersionMatch=Exact");
    assert_eq!(
        list_option_causes(&answer),
        [
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
        ]
    );
}

// The patch handler (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go,
// applyJSPatch) decodes a JSON patch into []jsonPatchOp with encoding/json: a body that is not
// a list of operations is 400 with Go's words; an operation json-patch does not know is an
// apply failure, the generic 422 (NewGenericServerResponse).
#[test]
fn a_json_patch_that_is_not_a_list_of_operations_gets_go_decoding_errors() {
    let served = serve();
    let json_patch = "application/json-patch+json";
    let answer = request(
        &served,
        "PATCH",
        "/api/v1/namespaces/default",
        json_patch,
        br#"{"metadata":{"labels":{"a":"b"}}}"#,
    );
    assert_eq!(answer.code, 400, "{}", answer.body);
    assert_eq!(
        answer.json()["message"],
        json!(
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp"
        )
    );
    let answer =
        request(&served, "PATCH", "/api/v1/namespaces/default", json_patch, br#"[{"op":"add","path":1}]"#);
    assert_eq!(answer.code, 400, "{}", answer.body);
    assert_eq!(
        answer.json()["message"],
        json!(
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string"
        )
    );
    let answer = request(
        &served,
        "PATCH",
        "/api/v1/namespaces/default",
        json_patch,
        br#"[{"op":"bogus","path":"/x"}]"#,
    );
    assert_eq!(answer.code, 422, "{}", answer.body);
    assert_eq!(
        answer.json()["message"],
        json!("the server rejected our request due to an error in our request")
    );
}

// The store's shouldOrphanDependents and shouldDeleteDependents read the deprecated
// `orphanDependents=false` as neither orphaning nor deleting in the foreground: a second delete
// with it drops the orphan finalizer a first delete added (deletionFinalizersForGarbageCollection).
#[test]
fn orphan_dependents_false_on_a_second_delete_drops_the_orphan_finalizer() {
    let served = serve();
    let body =
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gc","finalizers":["example.com/x"]}}"#;
    assert_eq!(
        request(&served, "POST", "/api/v1/namespaces/default/configmaps", "application/json", body).code,
        201
    );
    let path = "/api/v1/namespaces/default/configmaps/gc";
    let first =
        request(&served, "DELETE", &format!("{path}?propagationPolicy=Orphan"), "application/json", b"");
    assert_eq!(first.json()["metadata"]["finalizers"], json!(["example.com/x", "orphan"]));
    let second =
        request(&served, "DELETE", &format!("{path}?orphanDependents=false"), "application/json", b"");
    assert_eq!(second.json()["metadata"]["finalizers"], json!(["example.com/x"]));
}

/// kubectl's `Accept` for `kubectl get`.
const TABLE: &str = "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json\r\n";

fn create_config_maps(served: &Served, names: &[&str]) {
    for name in names {
        let body =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}});
        let path = "/api/v1/namespaces/default/configmaps";
        assert_eq!(request(served, "POST", path, "application/json", body.to_string().as_bytes()).code, 201);
    }
}

// apiserver's `transformObject`: a row carries the PartialObjectMetadata by default, the whole
// object for `includeObject=Object` (what `kubectl get --sort-by` sorts on), nothing for `None`;
// another value is a 400.
#[test]
fn a_table_rows_object_is_what_include_object_asks_for() {
    let served = serve();
    create_config_maps(&served, &["a"]);
    let path = "/api/v1/namespaces/default/configmaps";
    let rows = |query: &str| {
        let answer = request_with(&served, "GET", &format!("{path}{query}"), TABLE, b"");
        assert_eq!(answer.code, 200, "{query}: {}", answer.body);
        let table = answer.json();
        assert_eq!(table["kind"], "Table");
        table["rows"].as_array().unwrap().clone()
    };
    for query in ["", "?includeObject=Metadata"] {
        let object = &rows(query)[0]["object"];
        assert_eq!(
            (&object["kind"], &object["apiVersion"]),
            (&json!("PartialObjectMetadata"), &json!("meta.k8s.io/v1"))
        );
        assert_eq!(object["metadata"]["name"], "a");
        assert!(object.get("data").is_none(), "{object}");
    }
    let object = &rows("?includeObject=Object")[0]["object"];
    assert_eq!((&object["kind"], &object["apiVersion"]), (&json!("ConfigMap"), &json!("v1")));
    assert_eq!((&object["metadata"]["name"], &object["data"]), (&json!("a"), &json!({"k": "v"})));
    let row = &rows("?includeObject=None")[0];
    assert_eq!((&row["object"], &row["cells"][0]), (&Value::Null, &json!("a")));
    // One object by name, too.
    let answer = request_with(&served, "GET", &format!("{path}/a?includeObject=Object"), TABLE, b"");
    assert_eq!(answer.json()["rows"][0]["object"]["data"], json!({"k": "v"}));
    let answer = request_with(&served, "GET", &format!("{path}?includeObject=All"), TABLE, b"");
    assert_eq!(answer.code, 400);
    assert_eq!(answer.json()["message"], r#"unrecognized includeObject value: "All""#);
    // Without a Table the option is not read.
    assert_eq!(get(&served, &format!("{path}?includeObject=All")).code, 200);
}

// `kubectl get -w`: each event's object is a Table of one row, and only the first carries the
// column definitions (the watch handler sets `NoHeaders` after it).
#[test]
fn a_watch_asked_for_a_table_sends_one_row_tables_with_columns_only_first() {
    let served = serve();
    create_config_maps(&served, &["a", "b"]);
    let path = "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1";
    let answer = request_with(&served, "GET", path, TABLE, b"");
    assert_eq!(answer.code, 200);
    let lines = answer.lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for (line, name) in lines.iter().zip(["a", "b"]) {
        let table = &line["object"];
        assert_eq!((&line["type"], &table["kind"]), (&json!("ADDED"), &json!("Table")));
        assert_eq!(table["rows"].as_array().map(Vec::len), Some(1));
        assert_eq!(table["rows"][0]["cells"][0], name);
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert!(table["metadata"]["resourceVersion"].is_string());
    }
    let names: Vec<&str> = lines[0]["object"]["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Name", "Data", "Age"]);
    assert_eq!(lines[1]["object"]["columnDefinitions"], Value::Null);
    let answer = request_with(&served, "GET", &format!("{path}&includeObject=Object"), TABLE, b"");
    assert_eq!(answer.lines()[1]["object"]["rows"][0]["object"]["data"], json!({"k": "v"}));
    let answer = request_with(&served, "GET", &format!("{path}&includeObject=x"), TABLE, b"");
    assert_eq!(answer.code, 400);
    // A plain watch still sends the objects.
    assert_eq!(get(&served, path).lines()[0]["object"]["kind"], "ConfigMap");
}
