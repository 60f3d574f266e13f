//! The tests of `model_apiserver_http::guard` (its former unit tests: the library has no test harness).

use model_apiserver_http::guard::*;

#[test]
fn the_default_accepts_the_loopback_names_on_any_port_and_nothing_else() {
    let hosts = AcceptHosts::default();
    for name in ["localhost", "127.0.0.1", "[::1]"] {
        assert!(hosts.accepts(name), "{name}");
    }
    for name in ["evil.example", "localhost.evil.example", "127.0.0.1.nip.io", "10.0.0.1", ""] {
        assert!(!hosts.accepts(name), "{name}");
    }
    assert_eq!(without_port("127.0.0.1:8001"), "127.0.0.1");
    assert_eq!(without_port("[::1]:8001"), "[::1]");
    assert_eq!(without_port("localhost"), "localhost");
}
