//! The tests of `model_apiserver_http::route` (its former unit tests: the library has no test harness).

use model_apiserver_http::route::*;

fn rp(ns: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>) -> Route {
    Route::Resource(ResourcePath {
        group: "apps".into(),
        version: "v1".into(),
        namespace: ns.map(Into::into),
        plural: plural.into(),
        name: name.map(Into::into),
        subresource: sub.map(Into::into),
    })
}

#[test]
fn namespaced_paths_with_name_and_subresource_are_split_into_their_parts() {
    assert_eq!(
        parse("/apis/apps/v1/namespaces/default/deployments/web/scale"),
        rp(Some("default"), "deployments", Some("web"), Some("scale"))
    );
    assert_eq!(parse("/apis/apps/v1/deployments"), rp(None, "deployments", None, None));
}

#[test]
fn a_namespace_and_its_status_are_cluster_scoped_paths() {
    let status = parse("/api/v1/namespaces/kube-system/status");
    let Route::Resource(p) = status else { panic!("not a resource path: {status:?}") };
    assert_eq!(
        (p.namespace, p.plural.as_str(), p.name.as_deref(), p.subresource.as_deref()),
        (None, "namespaces", Some("kube-system"), Some("status"))
    );
}

#[test]
fn percent_escapes_in_segments_are_decoded_and_malformed_ones_are_unknown() {
    assert_eq!(
        parse("/apis/apps/v1/namespaces/d%65fault/deployments/w%65b"),
        rp(Some("default"), "deployments", Some("web"), None)
    );
    assert_eq!(parse("/api/v1/namespaces/default/configmaps/c%3"), Route::Unknown);
    assert_eq!(parse("/api/v1/namespaces/default/configmaps/%ff"), Route::Unknown);
}

#[test]
fn paths_with_too_many_segments_are_unknown() {
    assert_eq!(parse("/api/v1/namespaces/a/pods/b/status/extra"), Route::Unknown);
    assert_eq!(parse("/nothing"), Route::Unknown);
}
