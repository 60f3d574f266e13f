//! Loading CRDs from YAML files and directories, validating them, and the resource types they serve.

use std::path::PathBuf;

use model_apiserver::crd::{
    CrdLoadError, load_crds_from_path, load_crds_from_yaml, resource_types, validate_crd,
};
use model_apiserver::resources::{NameRule, ScalePaths};

/// A valid CRD named `<plural>.example.com` with kind `kind`, one served storage version `v1`, a
/// status and a scale subresource.
fn crd_yaml(plural: &str, kind: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  names:
    plural: {plural}
    singular: {singular}
    kind: {kind}
    shortNames: [{short}]
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources:
        status: {{}}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
          labelSelectorPath: .status.selector
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                replicas:
                  type: integer
                  default: 1
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
"#,
        singular = plural.trim_end_matches('s'),
        short = &plural[..2],
    )
}

fn load_err(yaml: &str) -> CrdLoadError {
    match load_crds_from_yaml("crds/test.yaml", yaml) {
        Ok(crds) => panic!("should fail, loaded {} CRDs", crds.len()),
        Err(e) => e,
    }
}

#[test]
fn multi_document_file_loads_every_crd_and_skips_empty_documents() {
    let yaml = format!(
        "---\n{}---\n# only a comment\n---\n{}",
        crd_yaml("widgets", "Widget"),
        crd_yaml("gadgets", "Gadget")
    );
    let crds = load_crds_from_yaml("<string>", &yaml).unwrap();
    let names: Vec<_> = crds.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    assert_eq!(names, vec!["widgets.example.com", "gadgets.example.com"]);
    assert_eq!(crds[0].spec.versions[0].name, "v1");
}

#[test]
fn malformed_yaml_names_the_document() {
    let yaml = format!("{}---\nkind: [unclosed\n", crd_yaml("widgets", "Widget"));
    let e = load_err(&yaml);
    let CrdLoadError::Syntax { origin, document, .. } = &e else { panic!("{e:?}") };
    assert_eq!((origin.as_str(), *document), ("crds/test.yaml", 2));
    assert!(e.to_string().starts_with("crds/test.yaml: document 2: "), "{e}");
}

#[test]
fn wrong_field_type_names_the_document_and_the_field() {
    let yaml = crd_yaml("widgets", "Widget").replace("served: true", "served: [yes]");
    let e = load_err(&yaml);
    assert_eq!(
        e.to_string(),
        "crds/test.yaml: document 1: spec.versions[0].served: invalid type: sequence, expected a boolean"
    );
}

#[test]
fn missing_scope_is_required_naming_spec_scope() {
    // k8s-openapi defaults absent fields, so a missing field surfaces as the apiserver's Required.
    let yaml = crd_yaml("widgets", "Widget").replace("  scope: Namespaced\n", "");
    let e = load_err(&yaml);
    assert_eq!(e.to_string(), "crds/test.yaml: document 1: spec.scope: Required value");
}

#[test]
fn non_crd_document_is_rejected_naming_the_field() {
    let yaml = format!(
        "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
        crd_yaml("widgets", "Widget")
    );
    let e = load_err(&yaml);
    assert_eq!(
        e.to_string(),
        "crds/test.yaml: document 2: kind: expected \"CustomResourceDefinition\", found \"ConfigMap\""
    );
}

#[test]
fn crd_of_an_old_api_version_is_rejected_naming_api_version() {
    let yaml =
        crd_yaml("widgets", "Widget").replace("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1");
    let e = load_err(&yaml);
    assert_eq!(
        e.to_string(),
        "crds/test.yaml: document 1: apiVersion: expected \"apiextensions.k8s.io/v1\", found \"apiextensions.k8s.io/v1beta1\""
    );
}

#[test]
fn name_that_is_not_plural_dot_group_is_invalid_naming_metadata_name() {
    let yaml = crd_yaml("widgets", "Widget").replace("name: widgets.example.com", "name: widget.example.com");
    let e = load_err(&yaml);
    assert_eq!(
        e.to_string(),
        "crds/test.yaml: document 1: metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group"
    );
    let CrdLoadError::Invalid { field, .. } = e else { panic!() };
    assert_eq!(field, "metadata.name");
}

#[test]
fn version_without_schema_is_invalid() {
    let yaml = crd_yaml("widgets", "Widget");
    let cut = yaml.find("      schema:").unwrap();
    let e = load_err(&yaml[..cut]);
    assert_eq!(
        e.to_string(),
        "crds/test.yaml: document 1: spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
    );
}

fn parsed(
    yaml: &str,
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    // Bypass the loader, which stops at the first cause: these tests look at the whole list.
    serde_yaml_ng::from_str(yaml).unwrap()
}

fn cause_list(yaml: &str) -> Vec<(String, String, String)> {
    validate_crd(&parsed(yaml)).into_iter().map(|c| (c.reason, c.field, c.message)).collect()
}

#[test]
fn valid_crd_has_no_causes() {
    assert_eq!(cause_list(&crd_yaml("widgets", "Widget")), vec![]);
}

#[test]
fn group_without_a_dot_is_invalid() {
    let yaml = crd_yaml("widgets", "Widget").replace("example.com", "example");
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueInvalid".to_owned(),
            "spec.group".to_owned(),
            "Invalid value: \"example\": should be a domain with at least one dot".to_owned()
        )]
    );
}

#[test]
fn unknown_scope_is_unsupported() {
    let yaml = crd_yaml("widgets", "Widget").replace("scope: Namespaced", "scope: Global");
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueNotSupported".to_owned(),
            "spec.scope".to_owned(),
            "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"".to_owned()
        )]
    );
}

#[test]
fn no_storage_version_is_invalid_and_leaves_no_stored_version() {
    let yaml = crd_yaml("widgets", "Widget").replace("storage: true", "storage: false");
    assert_eq!(
        cause_list(&yaml),
        vec![
            (
                "FieldValueInvalid".to_owned(),
                "spec.versions".to_owned(),
                "Invalid value: 0: must have exactly one version marked as storage version".to_owned()
            ),
            (
                "FieldValueInvalid".to_owned(),
                "status.storedVersions".to_owned(),
                "Invalid value: []string(nil): must have at least one stored version".to_owned()
            )
        ]
    );
}

#[test]
fn schema_root_that_is_not_an_object_is_invalid() {
    let yaml = crd_yaml("widgets", "Widget").replace(
        "        openAPIV3Schema:\n          type: object",
        "        openAPIV3Schema:\n          type: string",
    );
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueInvalid".to_owned(),
            "spec.versions[0].schema.openAPIV3Schema.type".to_owned(),
            "Invalid value: \"string\": must be object at the root".to_owned()
        )]
    );
}

#[test]
fn schema_field_without_type_is_required() {
    let yaml = crd_yaml("widgets", "Widget").replace("                  type: integer\n", "");
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueRequired".to_owned(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].type".to_owned(),
            "Required value: must not be empty for specified object fields".to_owned()
        )]
    );
}

#[test]
fn schema_pattern_that_does_not_compile_is_invalid() {
    let yaml = crd_yaml("widgets", "Widget").replace("                  default: 1\n", "                  default: 1\n                x:\n                  type: string\n                  pattern: \"(\"\n");
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueInvalid".to_owned(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].pattern".to_owned(),
            "Invalid value: \"(\": must be a valid regular expression, but isn't: error: unclosed group"
                .to_owned()
        )]
    );
}

#[test]
fn default_of_the_wrong_type_is_invalid_under_the_default_path() {
    let yaml = crd_yaml("widgets", "Widget").replace("default: 1", "default: one");
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueTypeInvalid".to_owned(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].default"
                .to_owned(),
            "Invalid value: \"string\":  in body must be of type integer: \"string\"".to_owned()
        )]
    );
}

#[test]
fn default_with_unknown_fields_is_invalid() {
    let yaml = crd_yaml("widgets", "Widget").replace(
        "            spec:\n              type: object\n",
        "            spec:\n              type: object\n              default: {replicas: 2, colour: red}\n",
    );
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueInvalid".to_owned(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].default".to_owned(),
            "Invalid value: {\"colour\":\"red\",\"replicas\":2}: must not have unknown fields".to_owned()
        )]
    );
}

#[test]
fn array_without_items_is_required() {
    let yaml = crd_yaml("widgets", "Widget").replace(
        "                  default: 1\n",
        "                  default: 1\n                tags:\n                  type: array\n",
    );
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueRequired".to_owned(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[tags].items".to_owned(),
            "Required value: must be specified".to_owned()
        )]
    );
}

#[test]
fn metadata_schema_beyond_name_and_generate_name_is_forbidden() {
    let yaml = crd_yaml("widgets", "Widget").replace(
        "          properties:\n            spec:\n",
        "          properties:\n            metadata:\n              type: object\n              properties:\n                labels:\n                  type: object\n            spec:\n",
    );
    let fields: Vec<String> = cause_list(&yaml).into_iter().map(|(_, f, m)| format!("{f}: {m}")).collect();
    assert_eq!(
        fields,
        vec![
            "spec.versions[0].schema.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything \
              other than name and generateName, but metadata is implicitly specified"
        ]
    );
}

#[test]
fn scale_path_outside_spec_is_invalid() {
    let yaml = crd_yaml("widgets", "Widget")
        .replace("specReplicasPath: .spec.replicas", "specReplicasPath: .status.x");
    assert_eq!(
        cause_list(&yaml),
        vec![(
            "FieldValueInvalid".to_owned(),
            "spec.versions[0].subresources.scale.specReplicasPath".to_owned(),
            "Invalid value: \".status.x\": should be a json path under .spec".to_owned()
        )]
    );
}

#[test]
fn missing_plural_and_kind_are_required() {
    let yaml = crd_yaml("widgets", "Widget")
        .replace("    plural: widgets\n", "    plural: \"\"\n")
        .replace("    kind: Widget\n", "    kind: \"\"\n");
    let fields: Vec<String> = cause_list(&yaml).into_iter().map(|(_, f, m)| format!("{f}: {m}")).collect();
    assert_eq!(
        fields,
        vec![
            "metadata.name: Invalid value: \"widgets.example.com\": must be spec.names.plural+\".\"+spec.group",
            "spec.names.plural: Required value",
            "spec.names.kind: Required value",
        ]
    );
}

#[test]
fn resource_types_has_one_type_per_served_version() {
    let yaml = crd_yaml("widgets", "Widget").replace(
        "  versions:\n",
        "  versions:\n    - name: v1alpha1\n      served: false\n      storage: false\n      schema:\n        openAPIV3Schema:\n          type: object\n    - name: v1beta1\n      served: true\n      storage: false\n      schema:\n        openAPIV3Schema:\n          type: object\n",
    );
    let crd = &load_crds_from_yaml("<string>", &yaml).unwrap()[0];
    let types = resource_types(crd);
    let versions: Vec<_> = types.iter().map(|t| t.api.api_version.as_str()).collect();
    assert_eq!(versions, vec!["example.com/v1beta1", "example.com/v1"]);
    let v1 = &types[1];
    assert_eq!(
        (v1.api.group.as_str(), v1.api.version.as_str(), v1.api.kind.as_str(), v1.api.plural.as_str()),
        ("example.com", "v1", "Widget", "widgets")
    );
    assert!(v1.namespaced && v1.status_subresource && v1.tracks_generation && v1.custom);
    assert_eq!(v1.name_rule, NameRule::Subdomain);
    assert_eq!(v1.short_names, vec!["wi".to_owned()]);
    assert_eq!(
        v1.scale,
        Some(ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".status.selector".into()),
        })
    );
    assert_eq!(v1.schema.as_ref().and_then(|s| s.type_.as_deref()), Some("object"));
    assert!(!types[0].status_subresource && types[0].scale.is_none());
}

#[test]
fn cluster_scoped_crd_serves_cluster_scoped_types() {
    let yaml = crd_yaml("widgets", "Widget").replace("scope: Namespaced", "scope: Cluster");
    let crd = &load_crds_from_yaml("<string>", &yaml).unwrap()[0];
    assert!(!resource_types(crd)[0].namespaced);
}

/// A fresh directory under the system temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("kube-sim-crd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn directory_loads_yaml_yml_and_json_files_in_name_order_and_ignores_others() {
    let dir = TempDir::new("order");
    std::fs::write(dir.0.join("b.yaml"), crd_yaml("bees", "Bee")).unwrap();
    std::fs::write(dir.0.join("a.yml"), crd_yaml("ants", "Ant")).unwrap();
    let json: serde_json::Value = serde_yaml_ng::from_str(&crd_yaml("cats", "Cat")).unwrap();
    std::fs::write(dir.0.join("c.json"), serde_json::to_string(&json).unwrap()).unwrap();
    std::fs::write(dir.0.join("README.md"), "not a crd").unwrap();
    std::fs::create_dir(dir.0.join("nested.yaml")).unwrap();
    let names: Vec<_> =
        load_crds_from_path(&dir.0).unwrap().into_iter().map(|c| c.metadata.name.unwrap()).collect();
    assert_eq!(names, vec!["ants.example.com", "bees.example.com", "cats.example.com"]);
}

#[test]
fn error_in_a_directory_file_names_that_file() {
    let dir = TempDir::new("error");
    std::fs::write(dir.0.join("a.yaml"), crd_yaml("ants", "Ant")).unwrap();
    let bad = dir.0.join("b.yaml");
    std::fs::write(&bad, crd_yaml("bees", "Bee").replace("scope: Namespaced", "scope: Global")).unwrap();
    let e = load_crds_from_path(&dir.0).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: document 1: spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            bad.display()
        )
    );
}

#[test]
fn missing_path_is_an_io_error_naming_it() {
    let path = std::env::temp_dir().join("kube-sim-crd-does-not-exist.yaml");
    let e = load_crds_from_path(&path).unwrap_err();
    assert!(matches!(&e, CrdLoadError::Io { path: p, .. } if *p == path), "{e:?}");
    assert!(e.to_string().starts_with(&format!("{}: ", path.display())), "{e}");
}
