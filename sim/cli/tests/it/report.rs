//! The tests of `kube_sim::report` (its former unit tests: the library has no test harness).

use kube_sim::report::*;

#[test]
fn a_report_written_before_coverage_existed_reads_with_no_points_found() {
    let summary: ScenarioSummary =
        serde_json::from_str(r#"{"name": "a", "seedsRun": 3, "failingSeeds": 0, "distinctFailures": 0}"#)
            .expect("a summary");
    assert_eq!(summary.coverage, PointCoverage::default());
}
