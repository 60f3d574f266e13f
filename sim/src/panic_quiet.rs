//! Quiet panics: a sweep turns thousands of controller panics into Crash verdicts, and the
//! default hook would print every one of them.
//!
//! One process-wide hook is installed once; it stays silent on threads that asked for quiet (a
//! thread-local flag) and defers to the previous hook everywhere else. The static holds no per-run
//! state: only the fact that the hook is installed.

use std::cell::Cell;
use std::sync::Once;

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
}

static INSTALL: Once = Once::new();

/// While alive, panics on this thread print nothing (if `quiet`). Restores the previous setting
/// when dropped.
pub(crate) struct QuietPanics {
    previous: bool,
}

impl QuietPanics {
    /// Make this thread's panics quiet (or not) until the guard drops.
    pub(crate) fn enter(quiet: bool) -> Self {
        INSTALL.call_once(|| {
            let previous_hook = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if !QUIET.with(Cell::get) {
                    previous_hook(info);
                }
            }));
        });
        let previous = QUIET.with(|q| q.replace(quiet));
        QuietPanics { previous }
    }
}

impl Drop for QuietPanics {
    fn drop(&mut self) {
        QUIET.with(|q| q.set(self.previous));
    }
}
