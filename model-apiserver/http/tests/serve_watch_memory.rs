//! Watches that are never read hold bounded memory (issue 16): the numbers are printed, and the
//! only assertion is the bound (50 unread watches over 30 MB of state: under 100 MiB).
//! Alone in its test binary, so other tests' allocations do not move the process's RSS.

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};

use kube_core::{ApiResource, DynamicObject};
use model_apiserver::Request;
use model_apiserver_http::{Limits, ServeConfig, Served, spawn};

/// The process's resident set, from /proc/self/status (Linux), in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("a VmRSS line");
    kib / 1024.0
}

/// `count` ConfigMaps of `bytes` data each, created directly in the model.
fn fill(served: &Served, count: usize, bytes: usize) {
    let api = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    let value = "x".repeat(bytes);
    for i in 0..count {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("big-{i}")},
            "data": {"v": value},
        }))
        .unwrap();
        served
            .live()
            .handle(Request::create(&api, Some("default"), object, Default::default()))
            .expect("created");
    }
}

fn open_watch(served: &Served) -> TcpStream {
    let mut stream = TcpStream::connect(served.addr()).unwrap();
    let head = "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    stream
}

#[test]
fn fifty_unread_watches_over_30_mb_of_state_raise_rss_by_less_than_100_mib_and_a_slow_one_is_closed() {
    let limits = Limits { watch_slow_timeout: Duration::from_secs(2), ..Limits::default() };
    let served = spawn(ServeConfig { seed: Some(4), limits, ..ServeConfig::default() }).unwrap();
    fill(&served, 300, 100 * 1024);
    let before = rss_mib();
    let watches: Vec<TcpStream> = (0..50).map(|_| open_watch(&served)).collect();
    // Let every stream fill its budget and the sockets' buffers (well before the slow timeout).
    std::thread::sleep(Duration::from_secs(1));
    let during = rss_mib();
    let start = Instant::now();
    let mut version = TcpStream::connect(served.addr()).unwrap();
    version.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    version.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = String::new();
    version.read_to_string(&mut answer).expect("/version answers while 50 watches are unread");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let version_ms = start.elapsed().as_millis();
    // The streams are closed as slow after `watch_slow_timeout`: a reader now finds an end to
    // each stream (the chunked terminator) after fewer than all 300 objects.
    std::thread::sleep(Duration::from_millis(2500));
    let mut first = watches.into_iter().next().unwrap();
    first.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0; 1 << 20];
    let ended = loop {
        match first.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => {
                got.extend_from_slice(&buf[..n]);
                if got.ends_with(b"\r\n0\r\n\r\n") {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    let events = String::from_utf8_lossy(&got).matches("\"type\":\"ADDED\"").count();
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_mib();
    println!(
        "watch memory: state 300 x 100 KiB; RSS {before:.1} MiB before, {during:.1} MiB with 50 unread watches (+{:.1} MiB), {after:.1} MiB after they closed; /version took {version_ms} ms; the slow watch ended after {events} of 300 events",
        during - before
    );
    assert!(during - before < 100.0, "50 unread watches raised RSS by {:.1} MiB", during - before);
    assert!(ended, "a watch that was not read for longer than watch_slow_timeout is still open");
    assert!(events < 300, "the slow watch was sent everything ({events} events): it was never closed");
}
