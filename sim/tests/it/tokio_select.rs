//! `tokio::select!` from kube-sim's tokio shim (`sim/tokio`, package `kube-sim-tokio`, renamed
//! as `tokio` in this crate's dev-dependencies as in a user's crate): an unbiased `select!` in a
//! run starts each poll at a branch drawn from the run's decision source (stream
//! `tokio.select`), so a seed always completes the same branches, a replay of its choices repeats
//! them, and other seeds explore other orders; `biased;` stays biased; the whole grammar of
//! tokio's `select!` works as in tokio, in a run and outside one.

use std::convert::Infallible;
use std::future::{pending, ready};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::executor::block_on;
use sim::runner::on_fresh_thread;
use sim::{RunReport, Sim, SimBuilder, Verdict};

/// Selects of each run.
const ROUNDS: usize = 24;

/// What the workload saw, one entry per select.
type Seen = Arc<Mutex<Vec<u32>>>;

/// A workload that runs [`ROUNDS`] unbiased three-way selects of futures that are all ready at
/// once, so that the branch each one completes is the branch its only poll started at.
fn three_ready_branches(seen: Seen) -> SimBuilder {
    Sim::builder().workload(move |_| {
        let seen = seen.clone();
        async move {
            for _ in 0..ROUNDS {
                let winner = tokio::select! {
                    a = ready(0) => a,
                    b = ready(1) => b,
                    c = ready(2) => c,
                };
                seen.lock().unwrap().push(winner);
            }
            Ok(())
        }
    })
}

/// Run `world` on `seed` on a fresh thread (as sweeps run seeds), with its choices recorded.
fn run(world: impl Fn(Seen) -> SimBuilder, seed: u64) -> (RunReport, Vec<u32>) {
    let seen: Seen = Arc::default();
    let world = world(seen.clone()).record_choices(true);
    let report = on_fresh_thread("select", || world.run(seed)).expect("the run's thread");
    let winners = seen.lock().unwrap().clone();
    (report, winners)
}

/// The values the run drew from the shim's stream, in order.
fn select_draws(report: &RunReport) -> Vec<u64> {
    let choices = report.choices.as_ref().expect("the run records its choices");
    choices.choices.iter().filter(|c| c.stream == tokio::SELECT_STREAM).map(|c| c.value).collect()
}

#[test]
fn an_unbiased_select_completes_the_same_branches_on_every_run_of_a_seed() {
    for seed in 0..4 {
        let (first, first_winners) = run(three_ready_branches, seed);
        let (second, second_winners) = run(three_ready_branches, seed);
        assert_eq!(first.verdict, Verdict::Pass, "seed {seed}");
        assert_eq!(first_winners.len(), ROUNDS, "seed {seed}");
        assert_eq!(first_winners, second_winners, "seed {seed}");
        assert_eq!(first.digest, second.digest, "seed {seed}");
    }
}

#[test]
fn different_seeds_explore_different_branch_orders_and_every_branch_wins_somewhere() {
    let runs: Vec<Vec<u32>> = (0..6).map(|seed| run(three_ready_branches, seed).1).collect();
    assert!(runs.windows(2).any(|pair| pair[0] != pair[1]), "six seeds selected alike: {runs:?}");
    for branch in 0..3 {
        assert!(runs.iter().flatten().any(|&w| w == branch), "branch {branch} never won: {runs:?}");
    }
}

#[test]
fn each_poll_of_an_unbiased_select_starts_at_a_recorded_choice_of_the_tokio_select_stream() {
    let (report, winners) = run(three_ready_branches, 9);
    // One poll per select (all three are ready at once), one draw per poll, and the branch
    // polled first completes.
    let draws = select_draws(&report);
    assert_eq!(draws, winners.iter().map(|&w| u64::from(w)).collect::<Vec<_>>());
}

#[test]
fn replaying_other_choices_of_the_tokio_select_stream_completes_the_branches_they_name() {
    let (recorded, winners) = run(three_ready_branches, 4);
    let mut choices = recorded.choices.expect("recorded");
    let chosen: Vec<u64> = (0..ROUNDS as u64).map(|round| (round * 2 + 1) % 3).collect();
    let mut next = chosen.iter();
    for choice in choices.choices.iter_mut().filter(|c| c.stream == tokio::SELECT_STREAM) {
        choice.value = *next.next().expect("one draw per round");
    }
    assert_eq!(next.next(), None, "one draw per round");
    let seen: Seen = Arc::default();
    let replay = three_ready_branches(seen.clone()).replay_choices(choices);
    let report = on_fresh_thread("replay", || replay.run(4)).expect("the run's thread");
    assert_eq!(report.verdict, Verdict::Pass);
    let replayed: Vec<u64> = seen.lock().unwrap().iter().map(|&w| u64::from(w)).collect();
    assert_eq!(replayed, chosen);
    assert_ne!(replayed, winners.iter().map(|&w| u64::from(w)).collect::<Vec<_>>());
}

#[test]
fn a_biased_select_polls_in_written_order_and_a_one_branch_select_draws_nothing() {
    let world = |seen: Seen| {
        Sim::builder().workload(move |_| {
            let seen = seen.clone();
            async move {
                for _ in 0..ROUNDS {
                    let winner = tokio::select! {
                        biased;
                        a = ready(0) => a,
                        b = ready(1) => b,
                        c = ready(2) => c,
                    };
                    let only = tokio::select! { x = ready(7) => x };
                    seen.lock().unwrap().extend([winner, only]);
                }
                Ok(())
            }
        })
    };
    for seed in 0..3 {
        let (report, seen) = run(world, seed);
        assert_eq!(report.verdict, Verdict::Pass);
        assert_eq!(seen, [0, 7].repeat(ROUNDS), "seed {seed}");
        assert_eq!(select_draws(&report), Vec::<u64>::new(), "seed {seed}");
    }
}

#[test]
fn a_pinned_sleep_selected_by_mut_reference_survives_the_loop_that_polls_it() {
    // A deadline of 10.5 s against a one-second interval: the interval ticks at 0, 1, .., 10 s,
    // then the one sleep (not a new one per iteration) fires, on virtual time.
    let world = |seen: Seen| {
        Sim::builder().workload(move |_| {
            let seen = seen.clone();
            async move {
                let start = tokio::time::Instant::now();
                let deadline = tokio::time::sleep(Duration::from_millis(10_500));
                tokio::pin!(deadline);
                let mut every = tokio::time::interval(Duration::from_secs(1));
                let mut boxed = Box::pin(tokio::time::sleep(Duration::from_secs(3_600)));
                let mut ticks = 0;
                loop {
                    tokio::select! {
                        () = &mut deadline => break,
                        _ = every.tick() => ticks += 1,
                        () = &mut boxed => unreachable!("an hour has not passed"),
                    }
                }
                let elapsed = start.elapsed();
                seen.lock().unwrap().extend([ticks, u32::try_from(elapsed.as_millis()).unwrap()]);
                Ok(())
            }
        })
    };
    for seed in 0..3 {
        let (report, seen) = run(world, seed);
        assert_eq!(report.verdict, Verdict::Pass);
        assert_eq!(seen, [11, 10_500], "seed {seed}");
    }
}

// The grammar, outside a run (the start branch from OS entropy, as tokio's): each case repeats
// so that every start branch is likely to come up.

/// Repetitions of each grammar case.
const REPEATS: usize = 32;

#[test]
fn outside_a_run_an_unbiased_select_still_works_and_starts_anywhere() {
    assert!(!sim::random::is_simulated());
    let winners: Vec<u32> = (0..REPEATS * 4)
        .map(|_| {
            block_on(async {
                tokio::select! { a = ready(0) => a, b = ready(1) => b }
            })
        })
        .collect();
    assert!(winners.contains(&0) && winners.contains(&1), "{winners:?}");
}

#[test]
fn a_false_precondition_disables_its_branch_though_its_future_is_built() {
    for _ in 0..REPEATS {
        let (mut built, enabled) = (false, REPEATS > 0);
        let got = block_on(async {
            tokio::select! {
                x = { built = true; ready(1) }, if !enabled => x,
                y = ready(2), if enabled => y,
            }
        });
        assert_eq!((got, built), (2, true));
    }
}

#[test]
fn an_output_that_misses_its_pattern_disables_the_branch_and_else_runs_when_none_is_left() {
    for _ in 0..REPEATS {
        let got = block_on(async {
            tokio::select! {
                Some(x) = ready(None::<u32>) => x,
                Ok(y) = ready(Ok::<u32, ()>(5)) => y,
            }
        });
        assert_eq!(got, 5);
        let fallback = block_on(async {
            tokio::select! {
                Some(x) = ready(None::<u32>) => x,
                Err(()) = ready(Ok::<u32, ()>(5)) => 0,
                x = ready(1), if false => x,
                else => 9,
            }
        });
        assert_eq!(fallback, 9);
    }
    // Every precondition false: `else` without polling anything.
    let never_polled = block_on(async {
        tokio::select! { x = pending::<u32>(), if false => x, else => 3 }
    });
    assert_eq!(never_polled, 3);
}

#[test]
#[should_panic(expected = "all branches are disabled and there is no else branch")]
fn a_select_whose_branches_are_all_disabled_without_else_panics_as_tokios_does() {
    block_on(async {
        tokio::select! { Some(x) = ready(None::<u32>) => x, y = ready(1), if false => y }
    });
}

#[test]
fn mut_ref_and_tuple_bindings_bind_as_in_a_match() {
    for _ in 0..REPEATS {
        let got = block_on(async {
            tokio::select! {
                mut v = ready(vec![1]) => { v.push(2); v }
                (a, ref b) = ready((3, vec![4])) => vec![a, b[0]],
            }
        });
        assert!(got == [1, 2] || got == [3, 4], "{got:?}");
    }
}

/// Reads `numbers` until a negative one, through handlers that leave the loop and the function:
/// `continue` on an odd number, `?` on zero, `return` on a number above 100, `break` with the
/// sum on a negative one.
async fn sum_even(numbers: Vec<i64>) -> Result<i64, String> {
    let mut numbers = futures::stream::iter(numbers);
    let never = pending::<()>();
    let mut never = pin!(never);
    let mut sum = 0;
    let total = loop {
        tokio::select! {
            Some(n) = numbers.next() => {
                if n % 2 != 0 {
                    continue;
                }
                if n == 0 {
                    Err::<(), _>(format!("zero after {sum}"))?;
                }
                if n > 100 {
                    return Ok(-1);
                }
                if n < 0 {
                    break sum;
                }
                sum += n;
            }
            () = &mut never => unreachable!("never completes"),
            else => break sum,
        }
    };
    Ok(total * 10)
}

#[test]
fn handlers_continue_break_return_and_question_mark_out_of_the_enclosing_loop_and_function() {
    for _ in 0..REPEATS {
        assert_eq!(block_on(sum_even(vec![2, 3, 4, -2, 6])), Ok(60));
        assert_eq!(block_on(sum_even(vec![2, 7, 0, 4])), Err("zero after 2".to_owned()));
        assert_eq!(block_on(sum_even(vec![2, 102, -2])), Ok(-1));
    }
}

#[test]
fn the_shim_reexports_tokio_join_try_join_pin_sync_and_task() {
    let outcome = block_on(async {
        let (a, b) = tokio::join!(ready(1), async { 2 });
        let both: Result<(u32, u32), Infallible> = tokio::try_join!(async { Ok(3) }, async { Ok(4) });
        let pinned = async { 5 };
        tokio::pin!(pinned);
        let (tx, mut rx) = tokio::sync::mpsc::channel(2);
        tx.send(6).await.expect("the receiver is open");
        drop(tx);
        let received = tokio::select! { Some(v) = rx.recv() => v, else => 0 };
        let mutex = tokio::sync::Mutex::new(7);
        let locked = *mutex.lock().await;
        (a, b, both, (&mut pinned).await, received, locked)
    });
    assert_eq!(outcome, (1, 2, Ok((3, 4)), 5, 6, 7));
}

/// `#[tokio::test]` is madsim's tokio test attribute through the shim: a madsim runtime with
/// `tokio::spawn` and virtual time, outside any kube-sim run.
#[tokio::test]
async fn the_shims_test_attribute_runs_spawn_and_timers_on_madsim() {
    let start = tokio::time::Instant::now();
    let task = tokio::spawn(async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        "slept"
    });
    let (slept, ()) = tokio::join!(task, tokio::task::yield_now());
    assert_eq!(slept.expect("the task ran"), "slept");
    assert_eq!(start.elapsed().as_secs(), 60);
    let first = tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(1)) => "short",
        () = tokio::time::sleep(Duration::from_secs(2)) => "long",
    };
    assert_eq!(first, "short");
}
