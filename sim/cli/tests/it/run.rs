//! The tests of `kube_sim`'s crate root, `run` and the replay hint (its former unit tests: the
//! library has no test harness).

use std::process::ExitCode;

use clap::Parser;
use kube_sim::*;
use sim::scenario::Registry;

#[test]
fn the_replay_hint_names_the_running_binary_as_cargo_names_it() {
    assert_eq!(binary_name_of(Some("/home/u/op/target/release/my-operator-sim".into())), "my-operator-sim");
    assert_eq!(binary_name_of(Some("kube-sim".into())), "kube-sim");
    assert_eq!(binary_name_of(None), "kube-sim");
}

#[test]
fn explore_takes_a_search_by_name_and_a_bad_one_or_a_clash_with_guided_exits_with_code_2() {
    let parse = |args: &[&str]| match Cli::try_parse_from(args) {
        Ok(Cli { command: Command::Explore(args) }) => Ok(args.search()),
        Ok(other) => panic!("not explore: {other:?}"),
        Err(e) => Err(e.to_string()),
    };
    assert_eq!(parse(&["kube-sim", "explore"]), Ok(explore::Search::Coverage));
    assert_eq!(parse(&["kube-sim", "explore", "--guided"]), Ok(explore::Search::Guided));
    assert_eq!(parse(&["kube-sim", "explore", "--random"]), Ok(explore::Search::Swarm));
    assert_eq!(parse(&["kube-sim", "explore", "--search", "coverage"]), Ok(explore::Search::Coverage));
    let bad = parse(&["kube-sim", "explore", "--search", "rare"]).expect_err("no such search");
    assert!(bad.contains("swarm") && bad.contains("coverage") && bad.contains("guided"), "{bad}");
    assert!(parse(&["kube-sim", "explore", "--search", "swarm", "--guided"]).is_err());
    let registry = Registry::default();
    let code = run(["kube-sim", "explore", "--search", "rare"], &registry);
    assert_eq!(code, ExitCode::from(EXIT_USAGE));
    // More shards than the coverage search has lanes is bad usage, not a silent empty shard.
    let code = run(["kube-sim", "explore", "--search", "coverage", "--shard", "0/9"], &registry);
    assert_eq!(code, ExitCode::from(EXIT_USAGE));
    let code = run(["kube-sim", "explore", "--random", "--shard", "0/9"], &registry);
    assert_eq!(code, ExitCode::from(EXIT_PASS), "plain swarm splits into any number of shards");
}

#[test]
fn an_unknown_argument_exits_with_code_2() {
    let registry = Registry::default();
    let code = run(["kube-sim", "explore", "--no-such-flag"], &registry);
    assert_eq!(code, ExitCode::from(EXIT_USAGE));
}
