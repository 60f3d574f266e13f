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
