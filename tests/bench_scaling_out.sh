#!/usr/bin/env bash
# jxlab bench scaling --out with shell and gnuplot metacharacters in the path (issue 29): the
# path is only a path (gnuplot runs from argv inside it, the script names files relative to it):
# nothing in it runs, and both plots are written. Usage: bench_scaling_out.sh JXLAB
set -u
J=$(realpath "$1")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
out="$T/a'b\"; touch $T/pwned; echo \`touch $T/pwned2\` \$(touch $T/pwned3) system(\"touch $T/pwned4\") '"
"$J" bench scaling --backend cpu --n 50:100 --reps 1 --out "$out" > "$T/log" 2>&1 || { echo "FAILED: exit $? ($(tail -3 "$T/log"))"; exit 1; }
ls "$T"/pwned* > /dev/null 2>&1 && { echo "FAILED: the path ran a command"; exit 1; }
for f in scaling.png scaling.svg scaling.csv scaling.json; do [ -s "$out/$f" ] || { echo "FAILED: $f missing"; exit 1; }; done
echo "bench_scaling_out: passed"
