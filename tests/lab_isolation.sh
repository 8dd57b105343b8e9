#!/usr/bin/env bash
# jxlab run isolates cases in worker processes: a case that crashes (SIGABRT, SIGSEGV), hangs past
# its time limit or grows past the memory limit is reported as crash, timeout or oom with its
# signal or figure, the others run, the reports are written (JUnit: errors); SIGINT stops the
# running workers at once. Real processes, through the lab_selftest workload (repros/selftest.cc).
# Usage: lab_isolation.sh JXLAB SCENARIOS_DIR
J=$1
S=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
D="$T/s"
mkdir -p "$D"
sel() {  # sel ID PARAMS [EXTRA]: a lab_selftest scenario on cpu
  printf '{"id": "%s", "title": "%s", "source": "lab_isolation.sh", "workload": {"name": "lab_selftest", "params": %s}, %s
  "backends": ["cpu"], "cases": [{"profile": "current", "expect": {"leaked_slots": 0}}]}\n' "$1" "$1" "$2" "${3:-}" > "$D/$1.json"
}
sel sel-ok '{"behaviour": "ok"}'
sel sel-abort '{"behaviour": "abort"}'
sel sel-segv '{"behaviour": "segv"}'
sel sel-hang '{"behaviour": "hang"}' '"timeout_s": 2,'
sel sel-oom '{"behaviour": "allocate", "mb": 700, "seconds": 30}'
cp "$S/isnan-41.json" "$D/"
start=$(date +%s)
if expect 1 "a run with a crash, a hang and an oom" "" "$J" run --all --backend cpu --scenarios "$D" --report "$T/r" --memory-limit 300 -j 2; then
  row() { grep -Eq "^$1 +cpu +current +$2" "$T/out" && ok "$1: $2" || no "$1: no '$2' row in $(cat "$T/out")"; }
  row sel-ok pass
  row isnan-41 pass
  row sel-abort crash
  row sel-segv crash
  row sel-hang timeout
  row sel-oom oom
  grep -q 'crashed with signal Aborted (6)' "$T/out" && grep -q 'crashed with signal Segmentation fault (11)' "$T/out" && ok "the signals are named" ||
    no "signals: $(grep crashed "$T/out")"
  grep -q 'timeout: still running after 2 s (limit 2 s' "$T/out" && ok "the timeout names its limit" || no "timeout: $(grep timeout "$T/out")"
  grep -Eq 'oom: resident memory [0-9]+ MB over the limit of 300 MB' "$T/out" && ok "the oom names its figure" || no "oom: $(grep oom "$T/out")"
  grep -q '2 passed, 0 failed, 4 errors (crash, timeout, oom)' "$T/out" && ok "summary counts errors apart" || no "summary: $(tail -2 "$T/out")"
  [ "$(grep -c '<error message=' "$T/r/junit.xml")" = 4 ] && grep -q 'errors="4"' "$T/r/junit.xml" && ok "JUnit: four errors" || no "junit: $(grep -c '<error' "$T/r/junit.xml") errors"
  grep -q '"status": "timeout"' "$T/r/report.json" && grep -q '"status": "oom"' "$T/r/report.json" && ok "report.json statuses" || no "report.json statuses"
fi
elapsed=$(($(date +%s) - start))
[ "$elapsed" -lt 25 ] && ok "the limits cut the run short (${elapsed} s)" || no "took ${elapsed} s"
# --timeout from the command line (a scenario without timeout_s)
sel sel-hang2 '{"behaviour": "hang"}'
if expect 1 "--timeout 1" "" "$J" run sel-hang2 --scenarios "$D" --timeout 1; then
  grep -q 'timeout: still running after 1 s (limit 1 s' "$T/out" && ok "--timeout 1" || no "--timeout: $(cat "$T/out")"
fi
# --in-process runs without workers (and so without limits): the ok case passes
expect_ok 0 "--in-process" "" "$J" run sel-ok isnan-41 --scenarios "$D" --backend cpu --in-process
# SIGINT stops the running workers now, not when their case ends
"$J" run sel-hang2 sel-ok --scenarios "$D" -j 2 --report "$T/int" > "$T/int.log" 2>&1 &
pid=$!
sleep 2
t0=$(date +%s)
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] && [ $(($(date +%s) - t0)) -le 3 ] && grep -q '"interrupted": true' "$T/int/report.json" && ok "SIGINT: running workers stopped, exit 130" ||
  no "SIGINT: exit $rc after $(($(date +%s) - t0)) s; $(tail -3 "$T/int.log")"
pgrep -f "run sel-hang2 .*--worker-result" > /dev/null && no "a worker outlived the run" || ok "no worker left behind"
expect_ok 2 "timeout_s must be positive" "/timeout_s: expected a positive number" bash -c "sed -i 's/\"timeout_s\": 2/\"timeout_s\": 0/' '$D/sel-hang.json' && '$J' run sel-hang --scenarios '$D'"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
