# Sourced by side-by-side.sh and cache-profile.sh (from the repository root, with `set -euo
# pipefail`): builds the madsim floor (FLOOR=, default ../shared/bench/madsim-floor) and the
# configmapgen benchmark in release, and sets `floor_dir`, `floor_bin` and `bench_bin` (absolute
# paths). `$1` names the calling script in the error when the floor is missing (exit 2).
unset RUSTFLAGS
floor_dir=${FLOOR:-../shared/bench/madsim-floor}
if [ ! -f "$floor_dir/Cargo.toml" ]; then
  echo "$1: no madsim floor at $floor_dir (set FLOOR=)" >&2
  exit 2
fi
target=${CARGO_TARGET_DIR:-target}
case "$target" in /*) ;; *) target="$(pwd)/$target" ;; esac
# The floor is its own workspace: its own target dir under ours, so its build never touches ours.
floor_target="$target/madsim-floor"
(cd "$floor_dir" && CARGO_TARGET_DIR="$floor_target" cargo build --release --quiet)
floor_bin="$floor_target/release/madsim-floor"
bench_bin=$(cargo bench -p sim --bench configmapgen --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))/\1/p' | tail -n 1)
case "$bench_bin" in /*) ;; *) bench_bin="$(pwd)/$bench_bin" ;; esac
