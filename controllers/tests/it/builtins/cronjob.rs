//! The tests of `controllers::builtins::cronjob` (its former unit tests: the library has no test harness).

use controllers::builtins::cronjob::*;
use k8s_openapi::jiff::Timestamp;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn job_names_count_minutes_since_the_epoch() {
    assert_eq!(job_name("backup", at("1970-01-01T01:00:00Z")), "backup-60");
    assert_eq!(job_name("backup", at("2026-12-01T10:17:00Z")), "backup-29935337");
}

#[test]
fn the_most_recent_due_time_is_after_the_last_one_and_not_after_now() {
    let every_five = parse_schedule("*/5 * * * *").unwrap();
    let now = at("2026-12-01T10:17:30Z");
    assert_eq!(
        most_recent_due(&every_five, at("2026-12-01T10:00:00Z"), now),
        Some(at("2026-12-01T10:15:00Z"))
    );
    assert_eq!(most_recent_due(&every_five, at("2026-12-01T10:15:00Z"), now), None);
    assert_eq!(next_due(&every_five, now), Some(at("2026-12-01T10:20:00Z")));
}

#[test]
fn nicknames_and_names_parse_as_standard_cron_and_six_fields_do_not() {
    let hourly = parse_schedule("@hourly").unwrap();
    assert_eq!(next_due(&hourly, at("2026-12-01T10:17:30Z")), Some(at("2026-12-01T11:00:00Z")));
    let weekdays = parse_schedule("0 9 * * MON-FRI").unwrap();
    // 2026-12-05 is a Saturday.
    assert_eq!(next_due(&weekdays, at("2026-12-04T10:00:00Z")), Some(at("2026-12-07T09:00:00Z")));
    assert!(parse_schedule("0 */5 * * * *").is_err());
    assert!(parse_schedule("not a schedule").is_err());
}
