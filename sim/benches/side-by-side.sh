#!/usr/bin/env bash
# Issue 17's comparison, in one run: the engine's configmapgen benchmark and the madsim floor
# (../shared/bench/madsim-floor, a toy world of the same kind on madsim with imbl storage), built
# in release and run alternately ROUNDS times (default 3), then each one's best round side by side:
# seeds/s on one worker with a fresh thread per seed, events per seed (API calls + watch
# deliveries), the cost per event and its ratio to the floor's, and the engine's overhead over the
# same operations applied directly to the model. Prints numbers; asserts nothing.
#   bash sim/benches/side-by-side.sh            # from the repository root
#   FLOOR=/path/to/madsim-floor ROUNDS=5 SEEDS=2000 bash sim/benches/side-by-side.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-3}
seeds=${SEEDS:-1000}
. sim/benches/build-floor-and-bench.sh side-by-side
best_floor_us=999999999; best_sim_us=999999999; best_floor_same_us=999999999; best_sim_same_us=999999999
for round in $(seq "$rounds"); do
  floor_out=$(cd "$floor_dir" && LEAK_SEEDS=1000 "$floor_bin")
  us=$(sed -n 's/^a fresh thread\/seed, 1 worker *: *[0-9.]* seeds\/s (\([0-9.]*\) us\/seed.*/\1/p' <<<"$floor_out")
  floor_events=$(sed -n 's/^d per seed: \([0-9.]*\) API calls, [0-9.]* watch polls, \([0-9.]*\) watch deliveries.*/\1 + \2/p' <<<"$floor_out")
  if awk "BEGIN{exit !($us < $best_floor_us)}"; then best_floor_us=$us; fi
  fsame=$(sed -n 's/^b same thread, 1 worker *: *[0-9.]* seeds\/s (\([0-9.]*\) us\/seed.*/\1/p' <<<"$floor_out")
  if awk "BEGIN{exit !($fsame < $best_floor_same_us)}"; then best_floor_same_us=$fsame; fi
  sim_out=$(cd sim && BENCH_SEEDS=$seeds BENCH_DIRECT_ROUNDS=$seeds "$bench_bin" --bench)
  sus=$(sed -n 's/^| wall time per seed, 1 worker (us) *| *\([0-9.]*\) |$/\1/p' <<<"$sim_out")
  sim_events=$(sed -n 's/^| API calls + deliveries, mean of the seeds *| *\([0-9.]* + [0-9.]*\) |$/\1/p' <<<"$sim_out")
  overhead=$(sed -n 's/^| engine overhead (seed \/ direct) *| *\([0-9.]*\)x |$/\1/p' <<<"$sim_out")
  direct=$(sed -n 's/^| direct model ops per round (us) *| *\([0-9.]*\) |$/\1/p' <<<"$sim_out")
  ssame=$(sed -n 's/^| same seeds on one thread (reference, us) *| *\([0-9.]*\) |$/\1/p' <<<"$sim_out")
  if awk "BEGIN{exit !($ssame < $best_sim_same_us)}"; then best_sim_same_us=$ssame; fi
  if awk "BEGIN{exit !($sus < $best_sim_us)}"; then best_sim_us=$sus; best_overhead=$overhead; best_direct=$direct; fi
  echo "round $round: floor $us us/seed ($floor_events events), kube-sim $sus us/seed ($sim_events events), overhead ${overhead}x"
done
floor_n=$(awk "BEGIN{print $floor_events}")
sim_n=$(awk "BEGIN{print $sim_events}")
awk -v fu="$best_floor_us" -v fn="$floor_n" -v su="$best_sim_us" -v sn="$sim_n" -v ov="$best_overhead" -v di="$best_direct" \
  -v fs="$best_floor_same_us" -v ss="$best_sim_same_us" 'BEGIN{
  fe = fu / fn; se = su / sn
  printf "\n| best of the rounds, 1 worker, fresh thread per seed | madsim-floor | kube-sim configmapgen |\n|---|---|---|\n"
  printf "| us per seed | %.1f | %.1f |\n", fu, su
  printf "| seeds/s | %.0f | %.0f |\n", 1e6 / fu, 1e6 / su
  printf "| events per seed (API calls + watch deliveries, mean of the seeds) | %.1f | %.1f |\n", fn, sn
  printf "| us per event | %.2f | %.2f |\n", fe, se
  printf "| cost per event, ratio to the floor | 1 | %.2f x (target 1.5 x) |\n", se / fe
  printf "| direct model ops per seed (us) | | %.1f |\n", di
  printf "| engine overhead (seed / direct) | | %.2f x (target 2.5 x) |\n", ov
  printf "\n| reference: the seeds one after another on one thread (never used by sweeps) | madsim-floor (its line b) | kube-sim |\n|---|---|---|\n"
  printf "| us per seed | %.1f | %.1f |\n", fs, ss
  printf "| what the fresh thread costs a seed (us) | %.1f | %.1f |\n", fu - fs, su - ss
  printf "| cost per event, ratio to the floor | 1 | %.2f x |\n", (ss / sn) / (fs / fn)
}'
