#!/usr/bin/env bash
# jxlab run's exit codes and command-line checks (issue 29), as pytest's: 0 passed, 1 a case
# failed, 2 usage error or malformed scenario, 5 nothing ran (an empty selection, or every case
# skipped unless --allow-skips); NO_COLOR and JX_DEBUG honoured.
# Usage: lab_exit_codes.sh JXLAB SCENARIOS_DIR
set -u
J=$(realpath "$1") S=$(realpath "$2")
export JX_SCENARIOS=$S
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
expect_ok 0 "a passing case" "" "$J" run isnan-41 --backend cpu
expect_ok 5 "empty selection (profile)" "no case ran \(the selection is empty\)" "$J" run isnan-41 --profile v0.7.1
mkdir "$T/none"
expect_ok 5 "empty scenario folder" "the selection is empty" "$J" run --all --scenarios "$T/none"
expect_ok 5 "every case skipped" "every case was skipped; --allow-skips" env JX_VULKAN_DEVICE=99 "$J" run isnan-41 --backend vulkan
expect 0 "--allow-skips" "" env JX_VULKAN_DEVICE=99 "$J" run isnan-41 --backend vulkan --allow-skips && ok --allow-skips
expect_ok 2 "--shard 2/4/1" "expected i/n, two whole numbers" "$J" run --all --shard 2/4/1
expect_ok 2 "--shard 3/2" "expected i/n with 1 <= i <= n" "$J" run --all --shard 3/2
expect_ok 2 "--all with ids" "--all and scenario ids exclude each other" "$J" run --all isnan-41
expect_ok 2 "--report ''" "--report: an empty path" "$J" run isnan-41 --report ''
expect_ok 2 "unknown flag" "not expected: --bogus" "$J" run --bogus
expect_ok 2 "unknown profile" "unknown profile 'nope'" "$J" run isnan-41 --profile nope
expect_ok 2 "unknown id" "no scenario 'no-such'" "$J" run no-such
expect_ok 2 "replay of a workload without gradient transforms" "does not run under the gradient transforms" "$J" replay isnan-41
# a failing case: exit 1
sed 's/"id": *"isnan-41"/"id": "isnan-bad"/; s/\[0, 1, 0, 1\]/[1, 1, 1, 1]/' "$S/isnan-41.json" > "$T/isnan-bad.json"
mkdir "$T/bad" && mv "$T/isnan-bad.json" "$T/bad/"
expect_ok 1 "a failing case" "" "$J" run isnan-bad --backend cpu --scenarios "$T/bad"
# colours only on a terminal and without NO_COLOR; JX_DEBUG without --debug
if command -v script > /dev/null; then
  c=$(NO_COLOR= script -qec "'$J' run isnan-41 --backend cpu" /dev/null | grep -c $'\e\\[38')
  n=$(NO_COLOR=1 script -qec "'$J' run isnan-41 --backend cpu" /dev/null | grep -c $'\e\\[38')
  [ "$c" -ge 1 ] && [ "$n" -eq 0 ] && echo "ok: NO_COLOR" || { echo "FAILED: NO_COLOR: coloured lines $c without it, $n with it"; fails=$((fails + 1)); }
else
  echo "FAILED: no 'script' (bsdutils) to give jxlab a terminal"; fails=$((fails + 1))
fi
JX_DEBUG=1 "$J" run isnan-41 --backend cpu > /dev/null 2> "$T/dbg"
grep -q '^\[jx\] jit ' "$T/dbg" && echo "ok: JX_DEBUG" || { echo "FAILED: JX_DEBUG=1 logged nothing"; fails=$((fails + 1)); }
# a Vulkan device lost mid-run (an injected fault): that case fails with the reason, the later
# vulkan cases are skipped with it, cpu and native run on, and the reports are written
JX_FAULTS=vk_device_lost@3 "$J" run buffer-limit isnan-41 --report "$T/lost" > "$T/lost.txt" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -Eq 'the vulkan backend failed: .*device was lost' "$T/lost.txt" && grep -Eq '^isnan-41 +cpu +current +pass' "$T/lost.txt" &&
  grep -Eq '^isnan-41 +native +current +pass' "$T/lost.txt" && grep -Eq '^isnan-41 +vulkan +current +skipped' "$T/lost.txt" &&
  [ -s "$T/lost/report.json" ] && [ -s "$T/lost/junit.xml" ] && [ -s "$T/lost/summary.md" ]; then
  echo "ok: a lost device fails its case, skips the later vulkan ones, the rest run, reports written"
else
  echo "FAILED: lost device (exit $rc):"; cat "$T/lost.txt"; fails=$((fails + 1))
fi
# GoogleTest's sharding variables split a run like --shard: the shards' cases add up to the whole
sum=0
for i in 0 1 2; do
  n=$(GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i "$J" run --all --backend cpu --profile current 2>/dev/null | grep -Eo '^[0-9]+ passed' | grep -Eo '[0-9]+')
  sum=$((sum + ${n:-0}))
done
whole=$("$J" run --all --backend cpu --profile current 2>/dev/null | grep -Eo '^[0-9]+ passed' | grep -Eo '[0-9]+')
[ "$sum" -eq "${whole:-x}" ] && [ "$sum" -gt 0 ] && echo "ok: GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX ($sum cases)" ||
  { echo "FAILED: shards add up to $sum, the whole run is $whole"; fails=$((fails + 1)); }
expect_ok 2 "GTEST_SHARD_INDEX not a number" "GTEST_SHARD_INDEX='x'" env GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=x "$J" run --all
# selection as pytest/ctest users expect: globs, -k, several backends, --list, -x
if expect 0 "--list of a glob" "" "$J" run 'scan-dispatch-*' --backend vulkan --list; then
  grep -q '^scan-dispatch-a/vulkan/current$' "$T/out" && ! grep -q '^buffer-limit' "$T/out" && ok "glob selects the scan-dispatch scenarios" ||
    no "glob: $(head -3 "$T/out")"
fi
if expect 0 "-k and two backends" "" "$J" run --all -k isnan --backend cpu,native --list; then
  [ "$(grep -c '^isnan-41/' "$T/out")" -eq 2 ] && grep -q '^2 cases$' "$T/out" && ok "-k isnan on cpu and native: 2 cases" || no "-k: $(cat "$T/out")"
fi
expect_ok 2 "a glob that matches nothing" "no scenario matches 'nothing-\*'" "$J" run 'nothing-*'
expect_ok 5 "--list of an empty selection" "" "$J" run --all -k no-such-text --list
expect_ok 2 "an unknown backend among several" "--backend 'tpu'" "$J" run --all --backend cpu,tpu
W="$T/failing"  # two scenarios that fail (a wrong expected value): -x runs only the first
mkdir -p "$W"
for id in a-fail b-fail; do
  sed -e "s/\"id\": \"isnan-41\"/\"id\": \"$id\"/" -e 's/\[0, 1, 0, 1\]/[9, 9, 9, 9]/; s/\[0.0, 1.0, 0.0, 1.0\]/[9, 9, 9, 9]/' "$S/isnan-41.json" > "$W/$id.json"
done
if expect 1 "-x stops after the first failing scenario" "" "$J" run --all -x -j 1 --backend cpu --scenarios "$W"; then
  grep -q '^a-fail ' "$T/out" && ! grep -q '^b-fail ' "$T/out" && ok "-x: only the first failing scenario ran" || no "-x: $(cat "$T/out")"
fi
if expect 1 "without -x both run" "" "$J" run --all --backend cpu --scenarios "$W"; then
  grep -q '^b-fail ' "$T/out" && ok "without -x: both ran" || no "without -x: $(cat "$T/out")"
fi
# --repeat: every round's seconds with median/min/max per case
if expect 0 "--repeat 3" "" "$J" run isnan-41 --backend cpu --repeat 3 --report "$T/rep3"; then
  grep -q '"seconds_rounds"' "$T/rep3/report.json" && grep -q '"median"' "$T/rep3/report.json" && ok "--repeat 3: rounds with median/min/max" ||
    no "--repeat: no seconds_rounds"
fi
expect_ok 2 "--repeat 0" "" "$J" run isnan-41 --repeat 0
# by default each (fast) sweep point is called 3 times for its timing: median/min/max per point
# (a point whose first call took a second or more is not called again: on a loaded machine some are)
if expect 0 "per-point timing" "" "$J" run scan-dispatch-a --backend vulkan --report "$T/pts"; then
  res=$(/usr/bin/python3 - "$T/pts/report.json" <<'PY'
import json, sys
# a point called once (its first call took >= 1 s) has its seconds and no seconds_rounds
rounds = [p["seconds_rounds"]["rounds"] if "seconds_rounds" in p else [p["seconds"]]
          for c in json.load(open(sys.argv[1]))["results"] for p in c.get("measured", {}).get("points", [])]
bad = [r for r in rounds if len(r) != 3 and r[0] < 1.0]
print(len(rounds), len([r for r in rounds if len(r) == 3]), len(bad))
PY
)
  read -r total three bad <<< "$res"
  [ "${total:-0}" -ge 5 ] && [ "${three:-0}" -ge 1 ] && [ "${bad:-1}" -eq 0 ] &&
    ok "per-point timing: $three of $total sweep points with 3 calls (the others took >= 1 s)" ||
    no "per-point timing: $res (points, with 3 rounds, under 1 s without 3 rounds)"
fi
expect 0 "--point-calls 1" "" "$J" run isnan-41 --backend cpu --point-calls 1 --report "$T/pc1" &&
  { grep -q '"seconds_rounds"' "$T/pc1/report.json" && no "--point-calls 1 still repeats" || ok "--point-calls 1: one call"; }
# SIGINT: rows stream as scenarios finish, no new one starts, the reports hold the finished cases
# and say so (JUnit: an error), exit 130
"$J" run 'scan-dispatch-*' --backend vulkan --report "$T/int" > "$T/int.log" 2>&1 &
pid=$!
sleep 3
kill -INT $pid
wait $pid
rc=$?
if [ $rc -eq 130 ] && grep -q '(interrupted)' "$T/int.log" && grep -q '<error message="the run was interrupted' "$T/int/junit.xml" &&
   grep -q '"interrupted": true' "$T/int/report.json" && grep -q 'interrupted' "$T/int/summary.md"; then
  ok "SIGINT: exit 130, reports of the finished cases marked interrupted"
else
  no "SIGINT: exit $rc; $(tail -2 "$T/int.log")"
fi
# metadata read at run time: commit (and dirty flag), compiler, devices, JX_* settings, command line
if expect 0 "metadata" "" env JX_DEBUG=0 "$J" run isnan-41 --backend cpu --report "$T/meta"; then
  for k in '"git_commit"' '"compiler"' '"device.cpu"' '"vulkan.device0": ".*Vulkan [0-9]+\.[0-9]+' '"env.JX_DEBUG": "0"' '"command": ".*run isnan-41'; do
    grep -Eq "$k" "$T/meta/report.json" || no "metadata: report.json lacks $k"
  done
  grep -q '<property name="device.cpu"' "$T/meta/junit.xml" && grep -q '| compiler |' "$T/meta/summary.md" && ok "metadata in report.json, junit.xml, summary.md" ||
    no "metadata: junit/summary"
fi
[ $fails -eq 0 ] && echo "lab_exit_codes: all passed" || echo "lab_exit_codes: $fails failed"
exit $fails
