#!/usr/bin/env bash
# Where a seed's wall time goes that instruction counts do not show: the engine's configmapgen
# benchmark and the madsim floor (../shared/bench/madsim-floor) run under callgrind's cache
# simulator (valgrind's model of this machine's L1 and last-level caches), each collecting only
# inside its per-seed function, and printed per seed side by side: instructions, L1 instruction
# misses, L1 data read and write misses, last-level misses. Prints numbers; asserts nothing.
# A simulation, so it is slow (about 10 minutes on 2 cores) and deterministic: the same build
# gives the same counts on every run.
#   bash sim/benches/cache-profile.sh            # from the repository root
#   FLOOR=/path/to/madsim-floor SEEDS=100 bash sim/benches/cache-profile.sh
# Needs valgrind (Debian: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v valgrind > /dev/null || ! command -v callgrind_annotate > /dev/null; then
  echo "cache-profile: needs valgrind and callgrind_annotate (Debian: apt-get install valgrind)" >&2
  exit 2
fi
seeds=${SEEDS:-100}
. sim/benches/build-floor-and-bench.sh cache-profile
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One line per binary: the events over every call of the per-seed function, divided by its calls.
per_seed() { # name, callgrind output, per-seed function (as callgrind_annotate names it)
  local annotated calls
  annotated=$(callgrind_annotate --inclusive=yes --tree=caller "$2" 2> /dev/null)
  # The callers of the per-seed function, each with its call count "(Nx)": their sum is the seeds.
  calls=$(awk -v f="$3" '
    /^ *[0-9,]+ / && index($0, "< ") { pending = pending $0 "\n"; next }
    index($0, "*  ") && index($0, f) { n = split(pending, lines, "\n")
      for (i = 1; i <= n; i++) if (match(lines[i], /\(([0-9,]+)x\)/)) {
        c = substr(lines[i], RSTART + 1, RLENGTH - 3); gsub(",", "", c); total += c }
      print total; exit }
    /^$/ { pending = "" }' <<< "$annotated")
  awk -v name="$1" -v calls="$calls" '/PROGRAM TOTALS/ {
    for (i = 1; i <= 9; i++) { v = $(2 * i - 1); gsub(",", "", v); e[i] = v }
    printf "| %s | %d | %.0f | %.0f | %.0f | %.0f | %.0f |\n", name, calls, e[1] / calls, e[4] / calls,
      e[5] / calls, e[6] / calls, (e[7] + e[8] + e[9]) / calls; exit }' <<< "$annotated"
}

# The floor's seeds: 15 batches of BATCH, plus its recording and determinism passes.
(cd "$floor_dir" && BATCH=$seeds LEAK_SEEDS=1 valgrind --tool=callgrind --cache-sim=yes \
  --toggle-collect='madsim_floor::run_seed' --callgrind-out-file="$out/floor.out" "$floor_bin" \
  > "$out/floor.log" 2>&1)
(cd sim && BENCH_SEEDS=$seeds BENCH_DIRECT_ROUNDS=1 valgrind --tool=callgrind --cache-sim=yes \
  --toggle-collect='sim::run::<impl sim::builder::SimBuilder>::run_with' \
  --callgrind-out-file="$out/sim.out" "$bench_bin" --bench > "$out/sim.log" 2>&1)
echo "| per seed (callgrind --cache-sim) | seeds | instructions | L1 instruction misses | L1 data read misses | L1 data write misses | last-level misses |"
echo "|---|---|---|---|---|---|---|"
per_seed "madsim-floor" "$out/floor.out" "madsim_floor::run_seed"
per_seed "kube-sim configmapgen" "$out/sim.out" "SimBuilder>::run_with"
echo
echo "(kube-sim's figures include, once per process, the read of its own symbol table that"
echo " sim::process_exit does on the first run: about 93 M instructions, spread over its seeds)"
