//! Regression files live under `regressions/<scenario>/`; `tests/` replays every one of them.
