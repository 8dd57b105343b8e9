#!/usr/bin/env bash
# jxlab bench scaling with two profiles: a profile column in the CSV and JSON, the run's metadata
# (its command line too) in the JSON and on the figure, median/min/max per point, one data block
# and one legend entry per (profile, case, path), the legend outside the plot area, x tics at the
# swept sizes.
# Usage: bench_scaling.sh JXLAB
J=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
if expect 0 "bench scaling, two profiles" "" "$J" bench scaling --backend cpu --n 50:100 --reps 3 --out "$T/s" --profile current --profile no-workgroup-fusion; then
  for f in scaling.csv scaling.json scaling.png scaling.svg scaling.dat scaling.gp; do [ -s "$T/s/$f" ] || no "$f missing"; done
  [ "$(head -1 "$T/s/scaling.csv")" = "profile,case,path,n,ms_median,ms_min,ms_max,dispatches" ] && ok "CSV header with profile and spread" ||
    no "CSV header: $(head -1 "$T/s/scaling.csv")"
  [ "$(grep -c '^current,' "$T/s/scaling.csv")" = 8 ] && [ "$(grep -c '^no-workgroup-fusion,' "$T/s/scaling.csv")" = 8 ] &&
    ok "8 rows per profile (4 cases x 2 sizes)" || no "rows: $(cat "$T/s/scaling.csv")"
  awk -F, 'NR > 1 && !($6 <= $5 && $5 <= $7) { bad = 1 } END { exit bad }' "$T/s/scaling.csv" && ok "min <= median <= max on every row" || no "spread order"
  for k in '"commit"' '"started"' '"machine"' '"device"' '"reps": 3' '"git_commit"' '"profile": "no-workgroup-fusion"' '"ms_min"'; do
    grep -q "$k" "$T/s/scaling.json" || no "scaling.json lacks $k"
  done
  ok "scaling.json: metadata and rows checked"
  grep -q '"command": "[^"]*bench scaling --backend cpu --n 50:100' "$T/s/scaling.json" && ok "scaling.json names the command line" ||
    no "command line: $(grep -o '"command": "[^"]*"' "$T/s/scaling.json")"
  labels=$(tail -n +2 "$T/s/scaling.csv" | cut -d, -f1-3 | sort -u | wc -l)
  [ "$(grep -c '^# ' "$T/s/scaling.dat")" = "$labels" ] && ok "one data block per (profile, case, path): $labels" || no "blocks vs $labels labels"
  grep -q "set key outside below" "$T/s/scaling.gp" && grep -q "set xtics (50, 100)" "$T/s/scaling.gp" && grep -q "autoscale xfix" "$T/s/scaling.gp" &&
    ok "legend outside, x tics at the sizes, axes fitted" || no "gnuplot script: $(cat "$T/s/scaling.gp")"
  commit=$(grep -o '"commit": "[^"]*"' "$T/s/scaling.json" | cut -d'"' -f4)
  grep -q "$commit" "$T/s/scaling.svg" && ok "the figure names the commit ($commit)" || no "no commit on the figure"
  n=0
  while IFS=, read -r p c path _; do grep -q ">$p $c:$path<" "$T/s/scaling.svg" && n=$((n + 1)); done < <(tail -n +2 "$T/s/scaling.csv" | sort -u -t, -k1,3)
  [ "$n" -ge "$labels" ] && ok "every (profile, case, path) named in the legend" || no "legend: $n of $labels named"
fi
expect_ok 2 "a bad size range" "expected LO:HI" "$J" bench scaling --backend cpu --n 100:50 --out "$T/x"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
