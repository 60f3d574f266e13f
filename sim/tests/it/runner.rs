//! The tests of `sim::runner` (its former unit tests: the library has no test harness).

use sim::runner::*;

#[test]
fn work_on_several_workers_comes_back_in_item_order() {
    let squares = on_workers(3, 50, |i| {
        // Later items finish first on some workers; the order must not show it.
        std::thread::yield_now();
        i * i
    });
    assert_eq!(squares, (0..50).map(|i| i * i).collect::<Vec<_>>());
    assert_eq!(on_workers(4, 0, |i| i), Vec::<usize>::new());
}

#[test]
fn a_panic_on_a_fresh_thread_comes_back_as_its_message() {
    assert_eq!(on_fresh_thread("t", || 7), Ok(7));
    let message = on_fresh_thread("t", || -> u8 { panic!("boom {}", 1) });
    assert_eq!(message, Err("boom 1".to_owned()));
}

/// A run's fresh thread may run only on the core its starter was on (it inherits the mask the
/// starter narrows for the moment of the spawn), and the starter gets its own mask back.
#[cfg(target_os = "linux")]
#[test]
fn a_run_thread_stays_on_its_starters_core_and_the_starter_keeps_its_mask() {
    use nix::sched::{CpuSet, sched_getaffinity};
    use nix::unistd::Pid;
    let me = Pid::from_raw(0);
    let before = sched_getaffinity(me).expect("the starter's mask");
    let allowed =
        |mask: &CpuSet| (0..CpuSet::count()).filter(|&cpu| mask.is_set(cpu).unwrap_or(false)).collect();
    let starter: Vec<usize> = allowed(&before);
    let run: Vec<usize> =
        on_fresh_thread("t", || allowed(&sched_getaffinity(me).expect("the run's mask"))).unwrap();
    assert_eq!(run.len(), 1, "the run is held to one core: {run:?}");
    assert!(starter.contains(&run[0]), "core {} is one the starter may use: {starter:?}", run[0]);
    assert_eq!(allowed(&sched_getaffinity(me).unwrap()), starter, "the starter's mask is back");
}
