//! CRD validation rules (`x-kubernetes-validations`): the causes apiextensions-apiserver gives
//! for a broken rule, transition rules on updates, ratcheting, and rules refused with their CRD;
//! and the list types' uniqueness, checked in the same pass; rules calling Kubernetes' CEL
//! libraries (quantity, url, ip, cidr, format, semver) and `format: duration` / `date-time`
//! properties bound as CEL durations and timestamps.

#[path = "common/mod.rs"]
mod common;
// Kubernetes' CEL libraries, expression by expression (the rules below call them on objects).
#[path = "cel_libraries.rs"]
mod libraries;

use common::*;
use kube_core::ApiResource;
use serde_json::{Value, json};

fn crds() -> ApiResource {
    builtin("apiextensions.k8s.io", "customresourcedefinitions")
}

fn databases() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Database".into(),
        plural: "databases".into(),
    }
}

/// A CRD whose schema is `spec_schema` under `spec`, with `root_rules` on the root.
fn crd(spec_schema: Value, root_rules: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "databases", "singular": "database", "kind": "Database", "listKind": "DatabaseList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-validations": root_rules,
                    "properties": {"spec": spec_schema}
                }}
            }]
        }
    })
}

/// The schema of the tests' `spec`: replicas within min and max, an immutable engine, a map
/// list of users keyed by name whose passwords may only grow longer.
fn spec_schema() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.maxReplicas", "message": "minReplicas must not exceed maxReplicas"},
            {"rule": "!has(self.backup) || self.backup.schedule != ''", "fieldPath": ".backup.schedule",
             "reason": "FieldValueRequired", "message": "a backup needs a schedule"},
            {"rule": "self.minReplicas <= 10", "messageExpression": "'minReplicas ' + string(self.minReplicas) + ' is above 10'"}
        ],
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "engine": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
            "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+$') && size(self) <= 8"}]},
            "backup": {"type": "object", "properties": {"schedule": {"type": "string"}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "users": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "x-kubernetes-validations": [
                        {"rule": "size(self.password) >= size(oldSelf.password)", "reason": "FieldValueForbidden",
                         "message": "passwords may not get shorter"}
                    ],
                    "properties": {"name": {"type": "string"}, "password": {"type": "string"}}
                }
            }
        }
    })
}

fn world_with(root_rules: Value) -> World {
    let mut w = World::new();
    w.create(&crds(), None, crd(spec_schema(), root_rules));
    w
}

fn world() -> World {
    world_with(json!([{"rule": "self.metadata.name.startsWith('db-')", "message": "names start with db-"}]))
}

fn database(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Database", "metadata": {"name": name}, "spec": spec})
}

fn valid_spec() -> Value {
    json!({"minReplicas": 1, "maxReplicas": 3, "engine": "postgres", "name": "main",
           "users": [{"name": "app", "password": "secret"}]})
}

/// (field, reason, message) of each cause of a refusal.
fn causes(err: &kube_core::Status) -> Vec<(String, String, String)> {
    let details = err.details.as_ref().expect("details");
    details.causes.iter().map(|c| (c.field.clone(), c.reason.clone(), c.message.clone())).collect()
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.to_owned(), reason.to_owned(), message.to_owned())
}

#[test]
fn a_valid_custom_resource_passes_every_rule() {
    let mut w = world();
    let created = w.create(&databases(), Some("default"), database("db-a", valid_spec()));
    assert_eq!(created.data["spec"]["engine"], "postgres");
}

#[test]
fn a_broken_rule_is_an_invalid_cause_at_its_node_with_the_message_or_the_rule() {
    let mut w = world();
    let mut spec = valid_spec();
    spec["minReplicas"] = json!(12);
    spec["name"] = json!("Main");
    let err = w.try_create(&databases(), Some("default"), database("db-a", spec)).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    assert_eq!(
        causes(&err),
        [
            cause(
                "spec",
                "FieldValueInvalid",
                "Invalid value: \"object\": minReplicas must not exceed maxReplicas"
            ),
            cause("spec", "FieldValueInvalid", "Invalid value: \"object\": minReplicas 12 is above 10"),
            cause(
                "spec.name",
                "FieldValueInvalid",
                "Invalid value: \"string\": failed rule: self.matches('^[a-z]+$') && size(self) <= 8"
            ),
        ]
    );
    assert!(
        err.message.starts_with(
            "Database.example.com \"db-a\" is invalid: [spec: Invalid value: \"object\": minReplicas must not exceed"
        ),
        "{}",
        err.message
    );
}

#[test]
fn a_root_rule_reads_the_name_and_fails_at_the_nil_path() {
    let mut w = world();
    let err = w.try_create(&databases(), Some("default"), database("main", valid_spec())).unwrap_err();
    assert_eq!(
        causes(&err),
        [cause("<nil>", "FieldValueInvalid", "Invalid value: \"object\": names start with db-")]
    );
}

#[test]
fn field_path_and_reason_place_and_word_the_cause() {
    let mut w = world();
    let mut spec = valid_spec();
    spec["backup"] = json!({"schedule": ""});
    let err = w.try_create(&databases(), Some("default"), database("db-a", spec)).unwrap_err();
    assert_eq!(
        causes(&err),
        [cause("spec.backup.schedule", "FieldValueRequired", "Required value: a backup needs a schedule")]
    );
}

#[test]
fn a_transition_rule_runs_on_update_and_refuses_a_change_of_an_immutable_field() {
    let mut w = world();
    w.create(&databases(), Some("default"), database("db-a", valid_spec()));
    let err =
        w.try_merge(&databases(), Some("default"), "db-a", json!({"spec": {"engine": "mysql"}})).unwrap_err();
    assert_eq!(
        causes(&err),
        [cause("spec.engine", "FieldValueInvalid", "Invalid value: \"string\": Value is immutable")]
    );
    // Another field may change.
    let updated =
        w.try_merge(&databases(), Some("default"), "db-a", json!({"spec": {"maxReplicas": 5}})).unwrap();
    assert_eq!(updated.data["spec"]["maxReplicas"], 5);
}

#[test]
fn map_list_items_correlate_by_key_for_transition_rules_and_new_items_skip_them() {
    let mut w = world();
    w.create(&databases(), Some("default"), database("db-a", valid_spec()));
    let users = |users: Value| json!({"spec": {"users": users}});
    // A new user (no old item) and the old one, reordered, with a longer password: fine.
    let ok = users(json!([{"name": "ro", "password": "x"}, {"name": "app", "password": "secret2"}]));
    w.try_merge(&databases(), Some("default"), "db-a", ok).unwrap();
    let shorter = users(json!([{"name": "ro", "password": "x"}, {"name": "app", "password": "s"}]));
    let err = w.try_merge(&databases(), Some("default"), "db-a", shorter).unwrap_err();
    assert_eq!(
        causes(&err),
        [cause("spec.users[1]", "FieldValueForbidden", "Forbidden: passwords may not get shorter")]
    );
}

#[test]
fn a_rule_added_later_does_not_block_updates_that_leave_its_value_unchanged() {
    let mut w = world_with(json!([]));
    let mut spec = valid_spec();
    spec["name"] = json!("UPPER");
    // The name rule is on the schema from the start, so build the old value under a CRD without it.
    let mut crd_without = crd(spec_schema(), json!([]));
    crd_without["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["name"] =
        json!({"type": "string"});
    let mut w2 = World::new();
    w2.create(&crds(), None, crd_without);
    w2.create(&databases(), Some("default"), database("db-a", spec.clone()));
    // Now the rule applies: the stored bad name ratchets while another field changes.
    let stored = w2.get(&crds(), None, "databases.example.com");
    let mut with_rule = serde_json::to_value(&*stored).unwrap();
    with_rule["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec_schema();
    w2.try_update(&crds(), None, obj(with_rule)).unwrap();
    w2.try_merge(&databases(), Some("default"), "db-a", json!({"spec": {"maxReplicas": 4}})).unwrap();
    let err = w2
        .try_merge(&databases(), Some("default"), "db-a", json!({"spec": {"name": "STILLBAD"}}))
        .unwrap_err();
    assert_eq!(causes(&err)[0].0, "spec.name");
    // And a fresh object with that name is refused.
    let err = w.try_create(&databases(), Some("default"), database("db-b", spec)).unwrap_err();
    assert_eq!(causes(&err)[0].0, "spec.name");
}

#[test]
fn a_wrong_type_blocks_the_rules_with_one_more_cause() {
    let mut w = world();
    let mut spec = valid_spec();
    spec["minReplicas"] = json!("one");
    let err = w.try_create(&databases(), Some("default"), database("db-a", spec)).unwrap_err();
    let found = causes(&err);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].1.as_str()), ("spec.minReplicas", "FieldValueTypeInvalid"));
    assert_eq!(
        found[1],
        cause(
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: \"null\": some validation rules were not checked because the object was invalid; \
             correct the existing errors to complete validation"
        )
    );
}

#[test]
fn a_rule_that_fails_to_evaluate_is_an_invalid_cause_naming_the_rule() {
    let mut w = world();
    let mut spec = valid_spec();
    spec.as_object_mut().unwrap().remove("maxReplicas");
    let err = w.try_create(&databases(), Some("default"), database("db-a", spec)).unwrap_err();
    let (field, reason, message) = causes(&err).remove(0);
    assert_eq!((field.as_str(), reason.as_str()), ("spec", "FieldValueInvalid"));
    // `ruleErrorString`: the rule is named by its message when it has one.
    assert!(message.ends_with("evaluating rule: minReplicas must not exceed maxReplicas"), "{message}");
    assert!(message.starts_with("Invalid value: \"object\": no such key: maxReplicas"), "{message}");
}

#[test]
fn a_crd_whose_rule_does_not_compile_is_refused_naming_the_rule() {
    let mut w = World::new();
    let broken =
        crd(spec_schema(), json!([{"rule": "self.metadata.name =="}, {"rule": "true", "reason": "Nope"}]));
    let err = w.try_create(&crds(), None, broken).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let found = causes(&err);
    let path = "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations";
    assert_eq!(found[0].0, format!("{path}[0].rule"));
    assert!(
        found[0].2.starts_with("Invalid value: apiextensions.ValidationRule{Rule:\"self.metadata.name ==\"")
            && found[0].2.contains(": compilation failed: ERROR: <input>:1:"),
        "{}",
        found[0].2
    );
    assert_eq!(
        (found[1].0.as_str(), found[1].1.as_str()),
        (format!("{path}[1].reason").as_str(), "FieldValueNotSupported")
    );
    assert!(w.server.types().get("example.com", "v1", "databases").is_none());
}

// `ValidateListSetsAndMaps`: a repeated set item or map-list key is a Duplicate at its second
// index, printed as Go prints the unstructured value; the rules still run beside it.
#[test]
fn a_set_or_map_list_with_a_repeated_item_or_key_gets_duplicate_causes() {
    let mut w = world();
    let mut spec = valid_spec();
    spec["tags"] = json!(["a", "b", "a", "a"]);
    spec["users"] =
        json!([{"name": "app", "password": "x"}, {"name": "ro"}, {"name": "app", "password": "y"}]);
    spec["minReplicas"] = json!(7);
    let err = w.try_create(&databases(), Some("default"), database("db-a", spec)).unwrap_err();
    assert_eq!(
        causes(&err),
        [
            cause("spec.tags[2]", "FieldValueDuplicate", "Duplicate value: \"a\""),
            cause(
                "spec.users[2]",
                "FieldValueDuplicate",
                "Duplicate value: map[string]interface {}{\"name\":\"app\"}"
            ),
            cause(
                "spec",
                "FieldValueInvalid",
                "Invalid value: \"object\": minReplicas must not exceed maxReplicas"
            ),
        ]
    );
}

/// A spec whose rules call each of Kubernetes' libraries, as a real operator's CRD does.
fn library_spec_schema() -> Value {
    let rule = |rule: &str, message: &str| json!([{"rule": rule, "message": message}]);
    json!({
        "type": "object",
        "properties": {
            "memory": {"type": "string", "x-kubernetes-validations":
                rule("quantity(self).isLessThan(quantity('1Gi'))", "memory must be under 1Gi")},
            "endpoint": {"type": "string", "x-kubernetes-validations":
                rule("isURL(self) && url(self).getScheme() == 'https'", "endpoint must be an https URL")},
            "address": {"type": "string", "x-kubernetes-validations":
                rule("ip(self).family() == 4", "address must be an IPv4 address")},
            "subnet": {"type": "string", "x-kubernetes-validations":
                rule("cidr(self).containsIP(ip('10.0.0.1'))", "subnet must contain 10.0.0.1")},
            "serviceName": {"type": "string", "x-kubernetes-validations": [{
                "rule": "!format.dns1123Label().validate(self).hasValue()",
                "messageExpression": "'serviceName: ' + format.dns1123Label().validate(self).value().join(', ')"}]},
            "version": {"type": "string", "x-kubernetes-validations":
                rule("semver(self, true).isGreaterThan(semver('1.0.0'))", "version must be above 1.0.0")},
            "timeout": {"type": "string", "format": "duration", "x-kubernetes-validations":
                rule("self <= duration('1h')", "timeout must be at most an hour")},
            "notAfter": {"type": "string", "format": "date-time", "x-kubernetes-validations":
                rule("self > timestamp('2020-01-01T00:00:00Z')", "notAfter must be after 2020")}
        }
    })
}

fn library_world() -> World {
    let mut w = World::new();
    w.create(&crds(), None, crd(library_spec_schema(), json!([])));
    w
}

fn library_spec() -> Value {
    json!({"memory": "512Mi", "endpoint": "https://db.example.com:5432/main", "address": "10.0.0.7",
           "subnet": "10.0.0.0/24", "serviceName": "db-main", "version": "v1.2",
           "timeout": "30m", "notAfter": "2030-06-01T12:00:00Z"})
}

#[test]
fn rules_calling_kubernetes_libraries_accept_a_valid_object() {
    let mut w = library_world();
    let created = w.create(&databases(), Some("default"), database("db-a", library_spec()));
    assert_eq!(created.data["spec"]["memory"], "512Mi");
    // An update through every rule again (the values changed, so none ratchets).
    let changed = json!({"spec": {"memory": "1G", "endpoint": "https://[::1]:8443/", "address": "192.168.1.1",
        "subnet": "10.0.0.0/8", "serviceName": "db", "version": "2.0.0", "timeout": "1h", "notAfter": "2021-01-01T00:00:00+02:00"}});
    w.try_merge(&databases(), Some("default"), "db-a", changed).unwrap();
}

#[test]
fn rules_calling_kubernetes_libraries_refuse_invalid_values_with_the_rules_messages() {
    let mut w = library_world();
    let spec = json!({"memory": "2Gi", "endpoint": "http://db.example.com/", "address": "::1",
        "subnet": "10.1.0.0/16", "serviceName": "Db_Main", "version": "0.9", "timeout": "90m",
        "notAfter": "2019-12-31T23:59:59Z"});
    let err = w.try_create(&databases(), Some("default"), database("db-a", spec)).unwrap_err();
    assert_eq!(code_reason(&err), (422, "Invalid"));
    let invalid = |field: &str, message: &str| {
        cause(&format!("spec.{field}"), "FieldValueInvalid", &format!("Invalid value: \"string\": {message}"))
    };
    assert_eq!(
        causes(&err),
        [
            invalid("address", "address must be an IPv4 address"),
            invalid("endpoint", "endpoint must be an https URL"),
            invalid("memory", "memory must be under 1Gi"),
            invalid("notAfter", "notAfter must be after 2020"),
            invalid(
                "serviceName",
                "serviceName: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
                 and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
                 validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ),
            invalid("subnet", "subnet must contain 10.0.0.1"),
            invalid("timeout", "timeout must be at most an hour"),
            invalid("version", "version must be above 1.0.0"),
        ]
    );
}

// kube-apiserver prints the function's error, then the rule's message (`ruleErrorString`).
#[test]
fn a_library_call_given_an_invalid_argument_fails_with_upstreams_evaluation_error() {
    let mut w = library_world();
    let mut spec = library_spec();
    spec["memory"] = json!("10Mo");
    spec["address"] = json!("10.0.0.256");
    let err = w.try_create(&databases(), Some("default"), database("db-a", spec)).unwrap_err();
    assert_eq!(
        causes(&err),
        [
            cause(
                "spec.address",
                "FieldValueInvalid",
                "Invalid value: \"string\": IP Address \"10.0.0.256\" parse error during conversion from string: \
                 ParseAddr(\"10.0.0.256\"): IPv4 field has value >255 evaluating rule: address must be an IPv4 address"
            ),
            cause(
                "spec.memory",
                "FieldValueInvalid",
                "Invalid value: \"string\": quantities must match the regular expression \
                 '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: memory must be under 1Gi"
            ),
        ]
    );
}

#[test]
fn duration_and_date_time_strings_are_bound_as_cel_durations_and_timestamps_at_any_depth() {
    let mut schema = library_spec_schema();
    schema["properties"]["windows"] = json!({
        "type": "array",
        "x-kubernetes-validations": [{"rule": "self.all(w, w.end - w.start <= duration('24h'))",
                                      "message": "a window lasts at most a day"}],
        "items": {"type": "object", "properties": {
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"}
        }}
    });
    let mut w = World::new();
    w.create(&crds(), None, crd(schema, json!([])));
    let mut spec = library_spec();
    spec["windows"] = json!([{"start": "2024-01-01T00:00:00Z", "end": "2024-01-01T08:00:00Z"}]);
    w.create(&databases(), Some("default"), database("db-a", spec.clone()));
    spec["windows"] = json!([{"start": "2024-01-01T00:00:00Z", "end": "2024-01-03T00:00:00Z"}]);
    let err = w.try_create(&databases(), Some("default"), database("db-b", spec)).unwrap_err();
    assert_eq!(
        causes(&err),
        [cause(
            "spec.windows",
            "FieldValueInvalid",
            "Invalid value: \"array\": a window lasts at most a day"
        )]
    );
}

// apiserver's `cel.Escape`: a property named by a reserved word or holding `.`, `-`, `/` or `__`
// is read under its escaped name (Gateway API's parentRefs rules read `p.__namespace__`); a map's
// keys stay as written; a property that cannot be escaped is not there.
#[test]
fn properties_named_by_reserved_words_or_symbols_are_read_under_their_escaped_names() {
    let schema = json!({
        "type": "object",
        "properties": {
            "parentRefs": {
                "type": "array",
                "x-kubernetes-validations": [{
                    "rule": "self.all(p1, self.exists_one(p2, p1.name == p2.name && \
                             ((!has(p1.__namespace__) || p1.__namespace__ == '') == \
                             (!has(p2.__namespace__) || p2.__namespace__ == '')) && \
                             (!has(p1.__namespace__) || p1.__namespace__ == '' || p1.__namespace__ == p2.__namespace__)))",
                    "message": "parentRefs must be unique"
                }],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "namespace": {"type": "string"}
                }}
            },
            "settings": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.max__dash__conns > 0 && self.io__dot__k8s__slash__x == 'y' && self.a__underscores__b",
                     "message": "escaped names"},
                    {"rule": "!has(self.__if__)", "message": "if is escaped too"}
                ],
                "properties": {
                    "max-conns": {"type": "integer"}, "io.k8s/x": {"type": "string"},
                    "a__b": {"type": "boolean"}, "if": {"type": "string"}, "9lives": {"type": "string"}
                }
            },
            "labels": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(k, k != 'in-use')", "message": "map keys as written"}]
            }
        }
    });
    let mut w = World::new();
    w.create(&crds(), None, crd(schema, json!([])));
    let spec = |refs: Value, settings: Value, labels: Value| json!({"parentRefs": refs, "settings": settings, "labels": labels});
    let settings = json!({"max-conns": 3, "io.k8s/x": "y", "a__b": true, "9lives": "hidden"});
    // Two Gateways of one name in two namespaces are two parents.
    let refs = json!([{"name": "gw", "namespace": "a"}, {"name": "gw", "namespace": "b"}]);
    w.create(
        &databases(),
        Some("default"),
        database("db-a", spec(refs, settings.clone(), json!({"x": "1"}))),
    );
    let twice = json!([{"name": "gw", "namespace": "a"}, {"name": "gw", "namespace": "a"}]);
    let err = w
        .try_create(&databases(), Some("default"), database("db-b", spec(twice, settings.clone(), json!({}))))
        .unwrap_err();
    assert_eq!(
        causes(&err),
        [cause(
            "spec.parentRefs",
            "FieldValueInvalid",
            "Invalid value: \"array\": parentRefs must be unique"
        )]
    );
    let mut bad = settings;
    bad["if"] = json!("set");
    bad["max-conns"] = json!(0);
    let labels = json!({"in-use": "yes"});
    let err = w
        .try_create(&databases(), Some("default"), database("db-c", spec(json!([]), bad, labels)))
        .unwrap_err();
    assert_eq!(
        causes(&err),
        [
            cause("spec.labels", "FieldValueInvalid", "Invalid value: \"object\": map keys as written"),
            cause("spec.settings", "FieldValueInvalid", "Invalid value: \"object\": escaped names"),
            cause("spec.settings", "FieldValueInvalid", "Invalid value: \"object\": if is escaped too"),
        ]
    );
}

// `hasBlockingErr`: a missing required field, a string past `maxLength` and a list or map past
// `maxItems` / `maxProperties` block the rules as a wrong type does (Karpenter's "requirements
// is greater than 100" answers only the size cause and the note); a `minimum` does not.
#[test]
fn a_missing_required_field_or_a_value_past_its_size_limit_blocks_the_rules() {
    let schema = json!({
        "type": "object",
        "required": ["owner"],
        "x-kubernetes-validations": [
            {"rule": "self.replicas < 5", "message": "at most 4 replicas"},
            {"rule": "self.owner != 'nobody'", "message": "nobody owns it"}
        ],
        "properties": {
            "owner": {"type": "string", "maxLength": 8},
            "replicas": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
            "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}
        }
    });
    let mut w = World::new();
    w.create(&crds(), None, crd(schema, json!([])));
    let note = cause(
        "<nil>",
        "FieldValueInvalid",
        "Invalid value: \"null\": some validation rules were not checked because the object was invalid; \
         correct the existing errors to complete validation",
    );
    let rule = cause("spec", "FieldValueInvalid", "Invalid value: \"object\": at most 4 replicas");
    // Each spec breaks the rule (9 replicas) beside one schema check.
    let blocked = [
        (json!({"replicas": 9}), "spec.owner", "FieldValueRequired"),
        (json!({"replicas": 9, "owner": "a-long-owner"}), "spec.owner", "FieldValueTooLong"),
        (json!({"replicas": 9, "owner": "o", "tags": ["a", "b", "c"]}), "spec.tags", "FieldValueTooMany"),
        (
            json!({"replicas": 9, "owner": "o", "labels": {"a": "1", "b": "2"}}),
            "spec.labels",
            "FieldValueTooMany",
        ),
    ];
    for (i, (spec, field, reason)) in blocked.into_iter().enumerate() {
        let err =
            w.try_create(&databases(), Some("default"), database(&format!("db-{i}"), spec)).unwrap_err();
        let found = causes(&err);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].0.as_str(), found[0].1.as_str()), (field, reason), "{found:?}");
        assert_eq!(found[1], note);
    }
    // A value below its minimum is Invalid, which does not block: the rules run beside it.
    let err = w
        .try_create(
            &databases(),
            Some("default"),
            database("db-min", json!({"owner": "nobody", "replicas": 0})),
        )
        .unwrap_err();
    let found = causes(&err);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!((found[0].0.as_str(), found[0].1.as_str()), ("spec.replicas", "FieldValueInvalid"));
    assert_eq!(found[1], cause("spec", "FieldValueInvalid", "Invalid value: \"object\": nobody owns it"));
    let err = w
        .try_create(&databases(), Some("default"), database("db-rule", json!({"owner": "o", "replicas": 9})))
        .unwrap_err();
    assert_eq!(causes(&err), [rule]);
}

// `UnstructuredToVal`: a `number` is a double even when written whole, a null field of an
// object is absent (`has()` is false; a map keeps its null values), and a field named by a
// reserved word is read as written as well as escaped.
#[test]
fn numbers_are_doubles_null_fields_are_absent_and_reserved_names_read_either_way() {
    let schema = json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "type(self.ratio) == double && self.ratio / 2.0 == 1.5", "message": "a double"},
            {"rule": "!has(self.note)", "message": "a null field is absent"},
            {"rule": "self.x.if == 'a' && self.x.__if__ == 'a'", "message": "if either way"}
        ],
        "properties": {
            "ratio": {"type": "number"},
            "note": {"type": "string", "nullable": true},
            "x": {"type": "object", "properties": {"if": {"type": "string"}}}
        }
    });
    let mut w = World::new();
    w.create(&crds(), None, crd(schema, json!([])));
    let spec = json!({"ratio": 3, "note": null, "x": {"if": "a"}});
    w.create(&databases(), Some("default"), database("db-a", spec));
    let err = w
        .try_create(
            &databases(),
            Some("default"),
            database("db-b", json!({"ratio": 3, "note": "n", "x": {"if": "a"}})),
        )
        .unwrap_err();
    assert_eq!(
        causes(&err),
        [cause("spec", "FieldValueInvalid", "Invalid value: \"object\": a null field is absent")]
    );
}
