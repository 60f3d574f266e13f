//! tokio for controller code tested with kube-sim: madsim's tokio shim, with a `select!` whose
//! branch order the seed decides.
//!
//! # Use
//!
//! Rename this package as `tokio` in the controller crate's `Cargo.toml`, in place of
//! `madsim-tokio` (docs/porting.md, "Cargo.toml"):
//!
//! ```toml
//! tokio = { package = "kube-sim-tokio", version = "0.1", features = ["rt", "time", "macros", "sync"] }
//! ```
//!
//! The controller's code does not change: `tokio::spawn`, `tokio::time`, `tokio::sync`,
//! `tokio::task`, `#[tokio::main]`, `join!`, `try_join!`, `pin!` and the rest are
//! [madsim-tokio](https://docs.rs/madsim-tokio)'s, re-exported whole (under `--cfg madsim` they
//! run on the simulation's scheduler and virtual clock; without it they are tokio's own).
//!
//! # Why not madsim-tokio directly
//!
//! madsim-tokio re-exports tokio's `select!` as it is. An unbiased `select!` (no `biased;`) polls
//! its branches from a start branch that tokio draws, on every poll, from a thread-local
//! generator seeded from a process-wide counter. No seed controls it, so two runs of one seed can
//! complete different branches and then differ in everything after: the sweep's determinism
//! self-check fails, and a failing seed does not replay. kube's own `shared_stream_controllers`
//! example is such a controller.
//!
//! # What `select!` does here
//!
//! - Under `--cfg madsim` an unbiased `select!` keeps tokio's semantics (each poll starts at a
//!   random branch and goes round from there), with the start drawn from the run's decision
//!   source, stream [`SELECT_STREAM`]: the same seed polls the branches in the same orders and a
//!   replay repeats them, while different seeds explore different orders. A one-branch
//!   `select!` draws nothing. Outside a run (no world on the thread: a unit test calling the
//!   code directly) the start comes from OS entropy, as tokio's does.
//! - `biased;` keeps meaning biased: branches in the order written, nothing drawn.
//! - Without `--cfg madsim` it is tokio's own `select!`, untouched.
//!
//! Everything else of `select!` is tokio's own expansion, so the whole grammar behaves as in
//! tokio: `pattern = future => handler`, refutable patterns (a completed future whose output
//! does not match disables its branch), `, if condition` preconditions, `else => ..`, handlers
//! that `break`, `continue`, `return` or `?` out of the enclosing loop or function, and `&mut`
//! references to pinned futures. The shim hands tokio's macro the start expression through the
//! normalizing entry that tokio's own unbiased form uses (`@{ start = ..; () } ..`): the only
//! thing it changes is where the start comes from. That entry is tokio's internal grammar (not
//! a documented API); `sim/tests/it/tokio_select.rs` exercises every form above, so a tokio
//! release that changed it would fail there, at compile time.

#![cfg_attr(not(madsim), allow(unused))]

pub use madsim_tokio::*;

/// The stream of the run's decision source that an unbiased [`select!`] draws its start branch
/// from, one draw per poll of a `select!` with two or more branches (`sim::random::in_stream`).
/// A stream of its own, so that a controller that selects more or less does not shift the other
/// draws of the run.
pub const SELECT_STREAM: &str = "tokio.select";

/// tokio's own `select!`, which [`select!`] hands its input to.
#[cfg(all(madsim, feature = "macros"))]
#[doc(hidden)]
pub use madsim_tokio::select as __tokio_select;

/// Support of the macros: not part of the API.
#[cfg(all(madsim, feature = "macros"))]
#[doc(hidden)]
pub mod __private {
    /// The branch an unbiased `select!` of `branches` branches polls first: drawn from the run's
    /// stream [`SELECT_STREAM`](crate::SELECT_STREAM), or from OS entropy outside a run.
    pub fn select_start(branches: u32) -> u32 {
        if branches <= 1 {
            return 0;
        }
        let start = sim::random::in_stream(crate::SELECT_STREAM).below(u64::from(branches));
        // `below` returns less than `branches`, a u32.
        u32::try_from(start).unwrap_or(0)
    }
}

/// Waits on several futures at once and runs the handler of the first that completes and
/// matches its pattern: tokio's `select!`, whose unbiased start branch is drawn from the run's
/// decision source under `--cfg madsim` (see the crate's documentation).
///
/// The grammar and the semantics are tokio's
/// ([`tokio::select!`](https://docs.rs/tokio/1/tokio/macro.select.html)):
/// `[biased;] pattern = future [, if condition] => handler, .. [else => handler]`.
#[cfg(all(madsim, feature = "macros"))]
#[macro_export]
macro_rules! select {
    // Biased: tokio's own, which polls in the written order and draws nothing.
    (biased; $($rest:tt)*) => {
        $crate::__tokio_select!(biased; $($rest)*)
    };
    // Unbiased, with at least one branch: tokio's expansion with the start branch of each poll
    // drawn from the run. `BRANCHES` is the branch count tokio's expansion defines (a const,
    // which macro hygiene does not hide).
    ($pattern:pat = $($rest:tt)*) => {
        $crate::__tokio_select!(@{
            start = { $crate::__private::select_start(BRANCHES) };
            ()
        } $pattern = $($rest)*)
    };
    // `else` alone, or no branch at all: tokio's (it draws nothing, and names the error).
    ($($rest:tt)*) => {
        $crate::__tokio_select!($($rest)*)
    };
}
