//! `kube-sim serve` under hostile input (issue 16): every case gets a Status, and the server keeps
//! answering `/version` while it is in flight. Raw HTTP/1.1 on loopback, bounded loops and
//! generous timeouts only (a timeout here detects a hang, it does not measure speed).

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::{Duration, Instant},
};

use model_apiserver_http::{ServeConfig, Served, spawn};
use serde_json::Value;

/// Longer than any answer here should take, short enough to fail a hung test quickly.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// How long `/version` may take while a hostile request is in flight (a hang detector).
const VERSION_TIMEOUT: Duration = Duration::from_secs(5);

/// One HTTP answer: status code, header block and body.
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
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
        })
    }
}

/// Send raw bytes and read the answer until the server closes (`Connection: close` requests).
fn raw(addr: SocketAddr, bytes: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    stream.write_all(bytes).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("an answer before the timeout");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no header block: {text:?}"));
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("a status line");
    Answer { code, head: head.to_owned(), body: body.to_owned() }
}

/// A request with `headers` (each `Name: value`) and a body.
fn request(served: &Served, method: &str, path: &str, headers: &[&str], body: &[u8]) -> Answer {
    request_at(served.addr(), method, path, headers, body)
}

/// [`request`] to an address (`Served` stays on the test's thread).
fn request_at(addr: SocketAddr, method: &str, path: &str, headers: &[&str], body: &[u8]) -> Answer {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|h| h.to_ascii_lowercase().starts_with("host:")) {
        head.push_str("Host: 127.0.0.1\r\n");
    }
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    raw(addr, &[head.as_bytes(), body].concat())
}

fn post(served: &Served, path: &str, content_type: &str, body: &[u8]) -> Answer {
    let header = format!("Content-Type: {content_type}");
    request(served, "POST", path, &[header.as_str()], body)
}

fn serve() -> Served {
    spawn(ServeConfig { seed: Some(16), ..ServeConfig::default() }).expect("the server starts")
}

/// Assert that `/version` answers 200 within [`VERSION_TIMEOUT`].
fn assert_version_answers(served: &Served) {
    let start = Instant::now();
    let answer = request(served, "GET", "/version", &[], b"");
    assert_eq!(answer.code, 200, "{}", answer.body);
    assert!(start.elapsed() < VERSION_TIMEOUT, "/version took {:?}", start.elapsed());
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap_json(name: &str) -> Vec<u8> {
    format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"v"}}}}"#)
        .into_bytes()
}

#[test]
fn deeply_nested_bodies_get_400_while_version_keeps_answering() {
    let served = serve();
    let depth = 100_000;
    let json = format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes();
    let yaml_flow = format!("a: {}", "[".repeat(2 * depth)).into_bytes();
    let yaml_block = "- ".repeat(depth).into_bytes();
    std::thread::scope(|scope| {
        let hostile = [
            ("POST", CONFIGMAPS.to_owned(), "application/json", json.clone()),
            ("POST", CONFIGMAPS.to_owned(), "application/json", json.clone()),
            ("POST", CONFIGMAPS.to_owned(), "application/yaml", yaml_flow.clone()),
            ("PATCH", format!("{CONFIGMAPS}/x"), "application/apply-patch+yaml", yaml_flow.clone()),
            ("PATCH", format!("{CONFIGMAPS}/x"), "application/apply-patch+yaml", yaml_block.clone()),
            ("PATCH", format!("{CONFIGMAPS}/x"), "application/merge-patch+json", json.clone()),
        ];
        let handles: Vec<_> = hostile
            .into_iter()
            .map(|(method, path, content_type, body)| {
                let addr = served.addr();
                scope.spawn(move || {
                    let header = format!("Content-Type: {content_type}");
                    (content_type, request_at(addr, method, &path, &[header.as_str()], &body))
                })
            })
            .collect();
        assert_version_answers(&served);
        for handle in handles {
            let (content_type, answer) = handle.join().unwrap();
            assert_eq!(answer.code, 400, "{content_type}: {}", answer.body);
            assert_eq!(answer.json()["kind"], "Status");
        }
    });
    assert_version_answers(&served);
}

#[test]
fn a_yaml_body_sent_as_json_is_a_400_and_the_same_body_as_yaml_is_created() {
    let served = serve();
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n";
    let as_json = post(&served, CONFIGMAPS, "application/json", yaml);
    assert_eq!(as_json.code, 400, "{}", as_json.body);
    assert_eq!(as_json.json()["reason"], "BadRequest");
    let as_yaml = post(&served, CONFIGMAPS, "application/yaml", yaml);
    assert_eq!(as_yaml.code, 201, "{}", as_yaml.body);
    assert_eq!(as_yaml.json()["data"]["k"], "v");
}

#[test]
fn creates_in_text_plain_form_or_multipart_get_415_and_store_nothing() {
    let served = serve();
    let refused = [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=b",
    ];
    for (i, content_type) in refused.into_iter().enumerate() {
        let name = format!("cross-origin-{i}");
        let answer = post(&served, CONFIGMAPS, content_type, &configmap_json(&name));
        assert_eq!(answer.code, 415, "{content_type}: {}", answer.body);
        assert_eq!(answer.json()["reason"], "UnsupportedMediaType");
        let read = request(&served, "GET", &format!("{CONFIGMAPS}/{name}"), &[], b"");
        assert_eq!(read.code, 404, "{content_type} stored the object: {}", read.body);
    }
    let put = request(
        &served,
        "PUT",
        &format!("{CONFIGMAPS}/a"),
        &["Content-Type: text/plain"],
        &configmap_json("a"),
    );
    assert_eq!(put.code, 415, "{}", put.body);
}

#[test]
fn a_create_without_content_type_is_read_as_json_as_kube_apiserver_does() {
    let served = serve();
    let answer = request(&served, "POST", CONFIGMAPS, &[], &configmap_json("no-type"));
    assert_eq!(answer.code, 201, "{}", answer.body);
    assert_eq!(answer.header("content-type").as_deref(), Some("application/json"));
}

fn serve_with(config: ServeConfig) -> Served {
    spawn(ServeConfig { seed: Some(16), ..config }).expect("the server starts")
}

#[test]
fn a_foreign_host_gets_403_and_the_loopback_names_are_served_on_any_port() {
    let served = serve();
    let port = served.addr().port();
    for host in ["evil.example", "evil.example:8001", "localhost.evil.example", "127.0.0.1.nip.io"] {
        let answer = request(&served, "GET", "/api/v1/namespaces", &[&format!("Host: {host}")], b"");
        assert_eq!(answer.code, 403, "{host}: {}", answer.body);
        assert_eq!(answer.json()["reason"], "Forbidden");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
        "localhost".into(),
    ] {
        let answer = request(&served, "GET", "/api/v1/namespaces", &[&format!("Host: {host}")], b"");
        assert_eq!(answer.code, 200, "{host}: {}", answer.body);
    }
}

#[test]
fn a_request_from_a_foreign_web_origin_gets_403_and_writes_nothing_even_without_a_content_type() {
    let served = serve();
    let answer =
        request(&served, "POST", CONFIGMAPS, &["Origin: https://evil.example"], &configmap_json("csrf"));
    assert_eq!(answer.code, 403, "{}", answer.body);
    assert_eq!(request(&served, "GET", &format!("{CONFIGMAPS}/csrf"), &[], b"").code, 404);
    let null_origin = request(&served, "POST", CONFIGMAPS, &["Origin: null"], &configmap_json("csrf"));
    assert_eq!(null_origin.code, 403, "{}", null_origin.body);
    let local = format!("Origin: http://localhost:{}", served.addr().port());
    let answer = request(&served, "POST", CONFIGMAPS, &[local.as_str()], &configmap_json("local"));
    assert_eq!(answer.code, 201, "{}", answer.body);
}

#[test]
fn accept_hosts_serves_the_names_it_matches_and_only_those() {
    let accept_hosts =
        model_apiserver_http::guard::AcceptHosts::parse(r"^kube\.test$,^10\.1\.2\.3$").unwrap();
    let served = serve_with(ServeConfig { accept_hosts, ..ServeConfig::default() });
    assert_eq!(request(&served, "GET", "/version", &["Host: kube.test:8001"], b"").code, 200);
    assert_eq!(request(&served, "GET", "/version", &["Host: 10.1.2.3"], b"").code, 200);
    assert_eq!(request(&served, "GET", "/version", &["Host: 127.0.0.1"], b"").code, 403);
}

#[test]
fn a_percent_encoded_name_in_the_path_is_decoded() {
    let served = serve();
    assert_eq!(post(&served, CONFIGMAPS, "application/json", &configmap_json("c1")).code, 201);
    let answer = request(&served, "GET", &format!("{CONFIGMAPS}/c%31"), &[], b"");
    assert_eq!(answer.code, 200, "{}", answer.body);
    assert_eq!(answer.json()["metadata"]["name"], "c1");
    assert_eq!(request(&served, "GET", &format!("{CONFIGMAPS}/c%3"), &[], b"").code, 404);
}

#[test]
fn a_body_cut_short_gets_400_and_only_a_body_over_the_limit_gets_413() {
    let served = serve();
    let mut stream = TcpStream::connect(served.addr()).unwrap();
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    let head = format!(
        "POST {CONFIGMAPS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"a\":"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut raw = String::new();
    let _ = stream.read_to_string(&mut raw);
    assert!(raw.starts_with("HTTP/1.1 400"), "{raw}");
    let too_large = format!(
        "POST {CONFIGMAPS} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        4 * 1024 * 1024
    );
    let answer = raw_head_only(&served, too_large.as_bytes());
    assert_eq!(answer.code, 413, "{}", answer.body);
    assert_eq!(answer.json()["reason"], "RequestEntityTooLarge");
}

/// Send a head, then its body from another thread (the server may answer before reading it
/// all), and read the answer.
fn raw_head_only(served: &Served, head: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(served.addr()).unwrap();
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    stream.write_all(head).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let body = std::thread::spawn(move || {
        let chunk = vec![b' '; 64 * 1024];
        for _ in 0..64 {
            if writer.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    let _ = stream.read_to_end(&mut got);
    let _ = body.join();
    let text = String::from_utf8_lossy(&got).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("a status line");
    Answer { code, head: head.to_owned(), body: body.to_owned() }
}

#[test]
fn writes_to_version_discovery_and_health_get_405() {
    let served = serve();
    for (method, path) in [
        ("DELETE", "/version"),
        ("POST", "/api"),
        ("PUT", "/apis"),
        ("DELETE", "/healthz"),
        ("POST", "/openapi/v2"),
    ] {
        let answer = request(&served, method, path, &[], b"");
        assert_eq!(answer.code, 405, "{method} {path}: {}", answer.body);
        assert_eq!(answer.json()["reason"], "MethodNotAllowed");
    }
    assert_eq!(request(&served, "GET", "/version", &[], b"").code, 200);
}

#[test]
fn accept_text_html_gets_json_as_kube_apiserver_falls_back_to_its_first_media_type() {
    // negotiation.NegotiateMediaTypeOptions answers in the first supported type (JSON) when no
    // Accept clause matches; 406 is only for a server without serializers.
    let served = serve();
    let answer = request(&served, "GET", "/api/v1/namespaces", &["Accept: text/html"], b"");
    assert_eq!(answer.code, 200, "{}", answer.body);
    assert_eq!(answer.header("content-type").as_deref(), Some("application/json"));
    assert_eq!(answer.json()["kind"], "NamespaceList");
}

/// Whether the server has closed `stream` (EOF or reset) within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline {
        stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

fn short_limits() -> model_apiserver_http::Limits {
    model_apiserver_http::Limits {
        header_read_timeout: Duration::from_millis(500),
        ..model_apiserver_http::Limits::default()
    }
}

#[test]
fn silent_half_sent_and_idle_keep_alive_connections_are_closed_after_the_header_read_timeout() {
    let served = serve_with(ServeConfig { limits: short_limits(), ..ServeConfig::default() });
    let mut silent: Vec<TcpStream> = (0..50).map(|_| TcpStream::connect(served.addr()).unwrap()).collect();
    let mut half = TcpStream::connect(served.addr()).unwrap();
    half.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    let mut idle = TcpStream::connect(served.addr()).unwrap();
    idle.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    assert_version_answers(&served);
    for (i, stream) in silent.iter_mut().enumerate() {
        assert!(closed_within(stream, Duration::from_secs(10)), "silent connection {i} is still open");
    }
    assert!(closed_within(&mut half, Duration::from_secs(10)), "a half-sent head is still open");
    // The keep-alive connection got its answer, then was closed while idle.
    assert!(closed_within(&mut idle, Duration::from_secs(10)), "an idle keep-alive connection is still open");
}

#[test]
fn connections_beyond_the_bound_wait_until_one_closes_and_are_then_served() {
    let limits = model_apiserver_http::Limits {
        connections_max: 4,
        header_read_timeout: Duration::from_secs(2),
        ..model_apiserver_http::Limits::default()
    };
    let served = serve_with(ServeConfig { limits, ..ServeConfig::default() });
    let held: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(served.addr()).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let mut fifth = TcpStream::connect(served.addr()).unwrap();
    fifth.write_all(b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").unwrap();
    fifth.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 16];
    assert!(fifth.read(&mut buf).is_err(), "the fifth connection was served while four were held");
    // The held ones time out (header read); then the fifth is accepted and answered.
    fifth.set_read_timeout(Some(ANSWER_TIMEOUT)).unwrap();
    let mut answer = String::new();
    fifth.read_to_string(&mut answer).expect("an answer once a connection closed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    drop(held);
}
