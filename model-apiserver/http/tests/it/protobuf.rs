//! The tests of `model_apiserver_http::protobuf` (its former unit tests: the library has no test harness).

use model_apiserver_http::protobuf::*;
use prost_reflect::prost::Message;
use prost_reflect::{DynamicMessage, MapKey, Value as PbValue};

/// A message of the descriptor set, with `fields` set.
fn message(name: &str, fields: Vec<(&str, PbValue)>) -> PbValue {
    let pool = POOL.as_ref().expect("the descriptor set decodes");
    let mut message = DynamicMessage::new(pool.get_message_by_name(name).expect("a known message"));
    for (field, value) in fields {
        message.set_field_by_name(field, value);
    }
    PbValue::Message(message)
}

fn string(s: &str) -> PbValue {
    PbValue::String(s.to_owned())
}

/// `object` in the envelope kubectl sends.
fn envelope(api_version: &str, kind: &str, object: PbValue) -> Vec<u8> {
    let PbValue::Message(object) = object else { panic!("a message") };
    let type_meta = message(
        "apimachinery.pkg.runtime.TypeMeta",
        vec![("apiVersion", string(api_version)), ("kind", string(kind))],
    );
    let PbValue::Message(unknown) = message(
        names::UNKNOWN,
        vec![("typeMeta", type_meta), ("raw", PbValue::Bytes(object.encode_to_vec().into()))],
    ) else {
        panic!("a message")
    };
    [MAGIC, &unknown.encode_to_vec()].concat()
}

#[test]
fn special_wire_types_decode_to_their_json_forms() {
    let time = |seconds: i64| message(names::TIME, vec![("seconds", PbValue::I64(seconds))]);
    let int_or_string = |fields| message(names::INT_OR_STRING, fields);
    let quantity = message(names::QUANTITY, vec![("string", string("500m"))]);
    let limits = PbValue::Map([(MapKey::String("cpu".to_owned()), quantity)].into_iter().collect());
    let container = message(
        "api.core.v1.Container",
        vec![
            ("name", string("app")),
            ("stdin", PbValue::Bool(false)),
            ("resources", message("api.core.v1.ResourceRequirements", vec![("limits", limits)])),
        ],
    );
    let template = message(
        "api.core.v1.PodTemplateSpec",
        vec![
            (
                "metadata",
                message(
                    "apimachinery.pkg.apis.meta.v1.ObjectMeta",
                    vec![("creationTimestamp", message(names::TIME, vec![]))],
                ),
            ),
            ("spec", message("api.core.v1.PodSpec", vec![("containers", PbValue::List(vec![container]))])),
        ],
    );
    let rolling = message(
        "api.apps.v1.RollingUpdateDeployment",
        vec![
            ("maxSurge", int_or_string(vec![("type", PbValue::I64(1)), ("strVal", string("25%"))])),
            ("maxUnavailable", int_or_string(vec![("type", PbValue::I64(0)), ("intVal", PbValue::I32(1))])),
        ],
    );
    let deployment = message(
        "api.apps.v1.Deployment",
        vec![
            (
                "metadata",
                message(
                    "apimachinery.pkg.apis.meta.v1.ObjectMeta",
                    vec![
                        ("name", string("web")),
                        ("namespace", string("")),
                        ("generation", PbValue::I64(0)),
                        ("creationTimestamp", time(1_767_225_600)),
                    ],
                ),
            ),
            (
                "spec",
                message(
                    "api.apps.v1.DeploymentSpec",
                    vec![
                        ("replicas", PbValue::I32(0)),
                        ("paused", PbValue::Bool(false)),
                        (
                            "strategy",
                            message("api.apps.v1.DeploymentStrategy", vec![("rollingUpdate", rolling)]),
                        ),
                        ("template", template),
                    ],
                ),
            ),
        ],
    );
    let json = decode(&envelope("apps/v1", "Deployment", deployment)).expect("a Deployment");
    // Empty strings and the zero time are left out; zero numbers and false stay, as the wire
    // cannot tell a pointer's 0 (`replicas`) from a non-pointer's: the model's decoding drops the
    // latter (`paused`, `stdin`, `generation`), as it does from a JSON body.
    assert_eq!(
        json,
        serde_json::json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "generation": 0, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {
                "replicas": 0,
                "paused": false,
                "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {
                    "metadata": {},
                    "spec": {"containers": [
                        {"name": "app", "stdin": false, "resources": {"limits": {"cpu": "500m"}}}
                    ]}
                }
            }
        })
    );
}

#[test]
fn secret_bytes_become_base64_and_raw_extensions_their_json() {
    let data = PbValue::Map(
        [(MapKey::String("pass".to_owned()), PbValue::Bytes(b"s3cr3t".to_vec().into()))]
            .into_iter()
            .collect(),
    );
    let secret = message("api.core.v1.Secret", vec![("data", data), ("type", string("Opaque"))]);
    let json = decode(&envelope("v1", "Secret", secret)).expect("a Secret");
    assert_eq!(json["data"], serde_json::json!({"pass": "czNjcjN0"}));
    let raw = message(names::RAW_EXTENSION, vec![("raw", PbValue::Bytes(br#"{"a":[1]}"#.to_vec().into()))]);
    assert_eq!(to_json(&unwrap_message(raw), 0).expect("JSON"), serde_json::json!({"a": [1]}));
}

#[test]
fn an_empty_label_value_is_kept_and_an_empty_string_field_left_out() {
    let labels = PbValue::Map([(MapKey::String("canary".to_owned()), string(""))].into_iter().collect());
    let metadata = message(
        "apimachinery.pkg.apis.meta.v1.ObjectMeta",
        vec![("name", string("c")), ("generateName", string("")), ("labels", labels)],
    );
    let configmap = message("api.core.v1.ConfigMap", vec![("metadata", metadata)]);
    let json = decode(&envelope("v1", "ConfigMap", configmap)).expect("a ConfigMap");
    assert_eq!(json["metadata"], serde_json::json!({"name": "c", "labels": {"canary": ""}}));
}

fn unwrap_message(value: PbValue) -> DynamicMessage {
    match value {
        PbValue::Message(m) => m,
        _ => panic!("a message"),
    }
}

#[test]
fn go_durations_are_written_as_go_writes_them() {
    assert_eq!(go_duration(0), "0s");
    assert_eq!(go_duration(1_500_000), "1.5ms");
    assert_eq!(go_duration(3_723_500_000_000), "1h2m3.5s");
    assert_eq!(go_duration(-90_000_000_000), "-1m30s");
    assert_eq!(go_duration(999), "999ns");
}

#[test]
fn every_inline_field_is_a_message_field_of_the_descriptor_set() {
    let pool = POOL.as_ref().expect("the descriptor set decodes");
    for (message, field) in INLINE_FIELDS {
        let descriptor = pool.get_message_by_name(message).unwrap_or_else(|| panic!("no message {message}"));
        let field =
            descriptor.get_field_by_name(field).unwrap_or_else(|| panic!("no field {message}.{field}"));
        assert!(
            matches!(field.kind(), prost_reflect::Kind::Message(_)),
            "{message}.{} embeds a struct",
            field.name()
        );
    }
}

#[test]
fn inline_structs_lend_their_fields_to_the_enclosing_object() {
    let volume = message(
        "api.core.v1.Volume",
        vec![
            ("name", string("config")),
            (
                "volumeSource",
                message(
                    "api.core.v1.VolumeSource",
                    vec![(
                        "configMap",
                        message(
                            "api.core.v1.ConfigMapVolumeSource",
                            vec![(
                                "localObjectReference",
                                message("api.core.v1.LocalObjectReference", vec![("name", string("app"))]),
                            )],
                        ),
                    )],
                ),
            ),
        ],
    );
    assert_eq!(
        to_json(&unwrap_message(volume), 0).expect("decodes"),
        serde_json::json!({"name": "config", "configMap": {"name": "app"}})
    );
}

#[test]
fn every_group_of_the_table_has_messages_in_the_descriptor_set() {
    let pool = POOL.as_ref().expect("the descriptor set decodes");
    assert!(message_for(pool, "apps/v1", "Deployment").is_some());
    assert!(message_for(pool, "v1", "ConfigMap").is_some());
    assert!(message_for(pool, "rbac.authorization.k8s.io/v1", "ClusterRoleBinding").is_some());
    assert!(message_for(pool, "scheduling.k8s.io/v1", "PriorityClass").is_some());
    assert!(message_for(pool, "example.com/v1", "Deployment").is_none());
    assert!(message_for(pool, "v1", "Config.Map").is_none());
}
