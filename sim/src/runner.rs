//! The one place runs get their fresh threads: [`on_fresh_thread`] for a single run (sweeps,
//! exploration, guided enumeration and replays all use it) and [`on_workers`] for a fixed list of
//! work items spread over worker threads.
//!
//! A fresh thread per run matters for determinism: madsim's thread-local state and std's
//! per-thread hash seeds start fresh, so a run is the same whatever ran before it on the thread.
//! These threads are outside the simulation (each simulated run starts its own madsim runtime
//! inside).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

/// Stack size of a run's fresh thread: twice libtest's default, for debug builds of deep futures.
/// Bigger stacks are not free: 16 MiB ones made a fresh thread cost 100 µs instead of 30 µs (they
/// overflow glibc's stack cache, so each seed maps and unmaps its own).
pub const RUN_THREAD_STACK_BYTES: usize = 4 << 20;

/// Panics with a clear message unless the crate was built with `--cfg madsim`: without it the
/// "simulation" would run on real time and real threads.
pub fn ensure_simulated() {
    if !cfg!(madsim) {
        panic!(
            "kube-sim must be built with --cfg madsim; a RUSTFLAGS environment variable replaces \
             .cargo/config.toml's rustflags: unset RUSTFLAGS or add --cfg madsim to it"
        );
    }
}

/// Run `f` on a fresh thread named `name`; a panic that escapes becomes `Err(message)`.
///
/// On Linux the thread runs on the core of the thread that starts it (see [`same_core`]).
pub fn on_fresh_thread<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    thread::scope(|scope| {
        let run = {
            let _here = same_core::pin_here();
            thread::Builder::new()
                .name(name.to_owned())
                .stack_size(RUN_THREAD_STACK_BYTES)
                .spawn_scoped(scope, f)
                .expect("the OS refused to start a run thread")
        };
        run.join().map_err(|payload| panic_message(payload.as_ref()))
    })
}

/// A run's thread on the core of the thread that starts it, which waits for it meanwhile.
///
/// Linux starts a new thread on the idlest core, so on a machine with a core to spare every seed
/// of a sweep ran on the other core than the one the seed before it had warmed: its code, the
/// allocator's pages and the runtime's tables came from the shared cache or memory, and starting
/// it and waking its joiner took interrupts between cores (costly in a virtual machine). A new
/// thread inherits its creator's affinity mask, so the starting thread narrows its own mask to
/// the core it is on for the moment of the spawn, and gives it back before waiting: the run stays
/// on that core, the starter may move. Nothing simulated sees which core it runs on. Where the
/// calls fail (or elsewhere than Linux) the thread starts as before.
mod same_core {
    #[cfg(target_os = "linux")]
    pub(super) struct Pinned(nix::sched::CpuSet);

    /// Narrow the calling thread's mask to its current core; the guard gives the mask back.
    #[cfg(target_os = "linux")]
    pub(super) fn pin_here() -> Option<Pinned> {
        use nix::sched::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};
        let me = nix::unistd::Pid::from_raw(0);
        let before = sched_getaffinity(me).ok()?;
        let mut here = CpuSet::new();
        here.set(sched_getcpu().ok()?).ok()?;
        sched_setaffinity(me, &here).ok()?;
        Some(Pinned(before))
    }

    #[cfg(target_os = "linux")]
    impl Drop for Pinned {
        fn drop(&mut self) {
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &self.0);
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn pin_here() -> Option<()> {
        None
    }
}

/// The text of a panic's payload (a `&str` or a `String`; anything else is named as such).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}

/// Worker threads by default: one per core.
pub fn default_jobs() -> usize {
    thread::available_parallelism().map_or(1, |n| n.get())
}

/// `work(i)` for every `i` in `0..count`, on `jobs` worker threads, the results in index order
/// whatever order the workers finished in.
pub fn on_workers<R: Send>(jobs: usize, count: usize, work: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..count).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    each_on_workers(jobs.clamp(1, count.max(1)), "explore-worker", |_| {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= count {
            return false;
        }
        let result = work(i);
        results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(result);
        true
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    results.into_iter().map(|r| r.expect("every item ran: a worker that panics ends the scope")).collect()
}

/// Run `step(worker)` on `jobs` worker threads named `{name}-{worker}`, each calling it until it
/// answers `false`; returns when every worker has stopped. The caller's `step` takes the next
/// item of its own (shared, atomic) counter, so the loop is bounded by the caller's items.
pub fn each_on_workers(jobs: usize, name: &str, step: impl Fn(usize) -> bool + Sync) {
    thread::scope(|scope| {
        for worker in 0..jobs.max(1) {
            let step = &step;
            thread::Builder::new()
                .name(format!("{name}-{worker}"))
                .spawn_scoped(scope, move || while step(worker) {})
                .expect("the OS refused to start a worker thread");
        }
    });
}
