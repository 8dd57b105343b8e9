#!/usr/bin/env bash
# jxlab replay of the memory-growth workload shows RSS and jit-cache entries per profile
# (issue 29): the identity-cache replay grows its cache, current stays within capacity.
# Usage: lab_replay_memory.sh JXLAB SCENARIOS_DIR  (a copy with 30 calls instead of 400)
set -u
J=$(realpath "$1") S=$(realpath "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
sed 's/"calls": *400/"calls": 30/' "$S/memory-growth.json" > "$T/memory-growth.json"
"$J" replay memory-growth --scenarios "$T" > "$T/out" 2>&1 || { echo "FAILED: exit $? ($(tail -3 "$T/out"))"; exit 1; }
cat "$T/out"
fails=0
for p in current identity-cache; do
  grep -E "^\| $p \|.*RSS [0-9]+ / [0-9]+ / [0-9]+ KB at calls 1 / 20 / 30 \([+-][0-9.]+% since call 20\), jit cache entries [0-9]+ / [0-9]+ / [0-9]+" "$T/out" > /dev/null ||
    { echo "FAILED: no RSS/cache figures in the $p row"; fails=$((fails + 1)); }
done
# the identity-cache replay keeps a jit entry per call: its cache grows from call 20 to 30
grep -E "^\| identity-cache \|" "$T/out" | grep -Eo "jit cache entries [0-9]+ / [0-9]+ / [0-9]+" | head -1 | awk '{ exit !($6 > $4) }' ||
  { echo "FAILED: identity-cache's cache did not grow"; fails=$((fails + 1)); }
[ $fails -eq 0 ] && echo "lab_replay_memory: passed"
exit $fails
