//! The tests of `kube_sim::explore` (its former unit tests: the library has no test harness).

use std::time::Duration;

use kube_sim::explore::*;

#[test]
fn durations_parse_with_units_and_bad_ones_name_the_expected_form() {
    assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
    assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("5"), Ok(Duration::from_secs(5)));
    assert_eq!(
        parse_duration("ten"),
        Err("\"ten\" is not a duration: expected a number with ms, s, m or h, e.g. 10m".to_owned())
    );
}
