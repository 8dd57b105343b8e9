#!/usr/bin/env bash
# jx against itself: variants of one build (by environment, or by an older libjx.so loaded first)
# run on the same cells in interleaved rounds, every round every variant in turn, so that a GPU's
# clock and the host's load fall on all of them alike. For bench/results/<date>-<name>/.
#
#   AB_VARIANTS  'name=ENV=v ENV=v;name=...'  (';' between variants, spaces between variables; a
#                variant with no variables is the build as it is; JX_LIB=DIR preloads DIR's libjx.so,
#                e.g. the previous commit's)
#   AB_CELLS     'm:N:workloads[@variant,...] ...'  (workloads as JX_PEER_WORKLOADS; after @ only
#                those variants run the cell)
#   AB_TIMING    cells run once more per variant with JX_VK_TIMING=1 (GPU time per pipeline on
#                stderr), same form
#   AB_ROUNDS    rounds (default 3); AB_B: series at once in every cell (JX_PEER_B, default 1)
#   AB_JX        the bench_peers command (default: through .gpu/env.sh)
#
# Writes $OUT/summary.txt (median_ms and checksum per round, by cell and variant; the last GPU
# time line of each timing run; then a table of each cell's median of the rounds [min, max] and its
# ratio to the first variant: ab_summary.py) and $OUT/ab.tgz (every run's JSON and stderr).
set -uo pipefail
: "${OUT:?OUT: the folder for the results}" "${AB_VARIANTS:?}" "${AB_CELLS:?}"
rounds=${AB_ROUNDS:-3}
jx=${AB_JX:-bash .gpu/env.sh .gpu/bin/bench_peers}
out=$OUT/ab
mkdir -p "$out"
declare -A env_of
names=()
IFS=';' read -ra defs <<< "$AB_VARIANTS"
for d in "${defs[@]}"; do
  names+=("${d%%=*}")
  env_of[${d%%=*}]=${d#*=}
done

# run VARIANT CELL TIMING ROUND INDEX: one bench_peers process (INDEX: the cell's, for the file name)
run() {
  local v=$1 cell=${2%%@*} t=$3 r=$4
  IFS=: read -r m n w <<< "$cell"
  local f=$out/$v-m$m-n$n-c$5-t$t-r$r
  # JX_LIB: its libjx.so preloaded (LD_LIBRARY_PATH would not do: .gpu/env.sh puts .gpu/lib first)
  local lib="" kv
  for kv in ${env_of[$v]}; do [[ $kv == JX_LIB=* ]] && lib=${kv#JX_LIB=}; done
  # shellcheck disable=SC2086  # a variant's variables are separate words
  env ${env_of[$v]} ${lib:+LD_PRELOAD=$(realpath "$lib")/libjx.so} JX_VK_TIMING=$t JX_LIMITS=device JX_DEVICE=vulkan JX_PEER_BACKENDS=vulkan \
    JX_PEER_MIN_TIME=0.3 JX_PEER_M=$m JX_PEER_N=$n JX_PEER_B=${AB_B:-1} JX_PEER_WORKLOADS=$w AB_JX="$jx" timeout 120 \
    bash -c 'exec $AB_JX --benchmark_format=json' \
    > "$f.json" 2> "$f.err"
}
# whether VARIANT runs CELL (no @ list: every variant)
runs() {
  [[ $2 != *@* ]] && return 0
  [[ ,${2#*@}, == *,$1,* ]]
}

for ((r = 1; r <= rounds; ++r)); do
  for v in "${names[@]}"; do
    i=0
    for c in $AB_CELLS; do
      runs "$v" "$c" && run "$v" "$c" 0 "$r" "$i"
      ((++i))
    done
  done
done
i=0
for c in ${AB_TIMING:-}; do
  for v in "${names[@]}"; do runs "$v" "$c" && run "$v" "$c" 1 1 "$i"; done
  ((++i))
done

# every round's median_ms and checksum, then each cell's median [min, max] and ratio to the first variant
python3 "$(dirname "${BASH_SOURCE[0]}")/ab_summary.py" "$out" "${names[@]}" | tee "$OUT/summary.txt"
tar czf "$OUT/ab.tgz" -C "$OUT" ab && rm -rf "$out"
