//! The tests of `controllers::builtins::expectations`: expected creations and deletions are
//! observed in an informer cache, and expire after upstream's five minutes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use controllers::builtins::expectations::{Expectations, TIMEOUT, Wait};
use k8s_openapi::api::core::v1::ConfigMap;
use sim::api::{Api, DeleteParams, ObjectMeta, PostParams, ResourceExt};
use sim::runtime::reflector::{self, ObjectRef, Store};
use sim::runtime::watcher;
use sim::{Clients, Sim};

const MS: Duration = Duration::from_millis(1);

async fn until_cached(cache: &Store<ConfigMap>, name: &str, present: bool) {
    let key = ObjectRef::new(name).within("default");
    while cache.get(&key).is_some() != present {
        madsim::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What each check answered, in order, with a label.
type Seen = Arc<Mutex<Vec<(&'static str, Wait)>>>;

async fn steps(clients: Clients, seen: Seen) {
    let api: Api<ConfigMap> = Api::namespaced(clients.default_cluster(), "default");
    let cache = reflector::informer(api.clone(), watcher::Config::default());
    cache.wait_until_ready().await.expect("the cache lists");
    let record = |label, wait| seen.lock().unwrap().push((label, wait));
    let expectations = Expectations::default();
    let t0 = sim::time::now();
    record("nothing expected", expectations.check("owner", "default", &cache, t0));

    expectations.created("owner", "a".to_owned(), t0);
    record("created, not cached", expectations.check("owner", "default", &cache, t0));
    record("another owner", expectations.check("other", "default", &cache, t0));
    let a = ConfigMap {
        metadata: ObjectMeta { name: Some("a".to_owned()), ..ObjectMeta::default() },
        ..ConfigMap::default()
    };
    let a = api.create(&PostParams::default(), &a).await.expect("created");
    until_cached(&cache, "a", true).await;
    record("created, cached", expectations.check("owner", "default", &cache, t0));

    expectations.deleted("owner", "a".to_owned(), a.uid().unwrap_or_default(), t0);
    record("deleted, still cached", expectations.check("owner", "default", &cache, t0));
    api.delete("a", &DeleteParams::default()).await.expect("deleted");
    until_cached(&cache, "a", false).await;
    record("deleted, gone from the cache", expectations.check("owner", "default", &cache, t0));

    expectations.created("owner", "never".to_owned(), t0);
    let at = |after: Duration| t0.checked_add(after).expect("in range");
    record("one minute on", expectations.check("owner", "default", &cache, at(Duration::from_secs(60))));
    record("five minutes on", expectations.check("owner", "default", &cache, at(TIMEOUT)));
    record("just past five minutes", expectations.check("owner", "default", &cache, at(TIMEOUT + MS)));
    record("then forgotten", expectations.check("owner", "default", &cache, t0));
}

#[test]
fn expected_writes_hold_a_sync_back_until_the_cache_shows_them_or_five_minutes_pass() {
    let seen: Seen = Arc::default();
    let recorded = seen.clone();
    let report = Sim::builder()
        .controller("expecting", move |clients: Clients| {
            let seen = recorded.clone();
            async move {
                steps(clients, seen).await;
                futures::future::pending::<()>().await;
            }
        })
        .run(1);
    assert!(report.verdict.is_pass(), "{}", report.verdict);
    let pending = |d: Duration| Wait::Pending(d + MS);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("nothing expected", Wait::Satisfied),
            ("created, not cached", pending(TIMEOUT)),
            ("another owner", Wait::Satisfied),
            ("created, cached", Wait::Satisfied),
            ("deleted, still cached", pending(TIMEOUT)),
            ("deleted, gone from the cache", Wait::Satisfied),
            ("one minute on", pending(TIMEOUT - Duration::from_secs(60))),
            ("five minutes on", pending(Duration::ZERO)),
            ("just past five minutes", Wait::Satisfied),
            ("then forgotten", Wait::Satisfied),
        ]
    );
}
