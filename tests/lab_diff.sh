#!/usr/bin/env bash
# jxlab diff: two runs of the same selection, a status regression, counter and scan-path
# changes, a case that appeared or vanished, timing beyond both runs' spread, bad input.
# Usage: lab_diff.sh JXLAB SCENARIOS_DIR
JXLAB=$1
SC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
"$JXLAB" run isnan-41 concat-vjp --backend cpu --scenarios "$SC" --report "$T/a" --repeat 3 > /dev/null 2>&1 || no "baseline run"
"$JXLAB" run isnan-41 concat-vjp --backend cpu --scenarios "$SC" --report "$T/b" --repeat 3 > /dev/null 2>&1 || no "second run"
# the same selection twice: no status, counter or case change. Its timing may still differ beyond
# both runs' spreads (3 rounds of ~40 ms cases drift by 10% between runs on a quiet machine too),
# which diff rightly calls a regression: exit 1 is accepted only with a Timing section as its cause.
"$JXLAB" diff "$T/a" "$T/b" > "$T/out" 2> "$T/err"
rc=$?
if grep -Eq '^## (Status|Counters|Appeared|Vanished)' "$T/out"; then
  no "same selection: $(cat "$T/out")"
elif [ $rc -eq 0 ] || { [ $rc -eq 1 ] && grep -q '^## Timing' "$T/out"; }; then
  ok "same selection: no status, counter or case change (exit $rc)"
else
  no "same selection: exit $rc without a timing change ($(head -2 "$T/err"))"
fi
# a report against itself: nothing at all changes
if expect 0 "report.json paths work too" "" "$JXLAB" diff "$T/a/report.json" "$T/a/report.json"; then
  grep -Eq '^## ' "$T/out" && no "a report against itself: $(cat "$T/out")" || ok "report.json paths; a report against itself shows no change"
fi
# a scenario that passed and now fails: a regression, exit 1, with its failure
mkdir -p "$T/s"
sed 's/"out0": \[0, 1, 0, 1\]/"out0": [1, 1, 0, 1]/' "$SC/isnan-41.json" > "$T/s/isnan-41.json"
"$JXLAB" run isnan-41 --backend cpu --scenarios "$T/s" --report "$T/c" > /dev/null 2>&1
if expect 1 "a status regression exits 1" "" "$JXLAB" diff "$T/a" "$T/c"; then
  grep -q '| isnan-41 cpu current | pass | fail | values' "$T/out" && grep -q '\*\*regression\*\*' "$T/out" && ok "status row with the failure" ||
    no "status row: $(cat "$T/out")"
  grep -q -- '- concat-vjp cpu current (pass)' "$T/out" && ok "a vanished case is listed" || no "vanished: $(cat "$T/out")"
fi
expect 0 "the reverse (fail -> pass) is no regression" "" "$JXLAB" diff "$T/c" "$T/a" && ok "fail -> pass is not a regression"
# counters and scan paths (edited copies of the baseline): a rise in dispatches and another path
mkdir -p "$T/d"
sed -e '0,/"dispatches": 1,/s//"dispatches": 7,/' "$T/a/report.json" > "$T/d/report.json"
if expect 1 "more dispatches: a regression" "" "$JXLAB" diff "$T/a" "$T/d" --json; then
  grep -q '"counter": "dispatches"' "$T/out" && grep -q '"regressions": 1' "$T/out" && ok "dispatches 1 -> 7 in the JSON" || no "counters: $(head -c 600 "$T/out")"
fi
expect 0 "fewer dispatches: no regression" "" "$JXLAB" diff "$T/d" "$T/a" && ok "a fall is no regression"
mkdir -p "$T/e"
sed -e '0,/"scan_paths": \[\]/s//"scan_paths": ["fallback"]/' "$T/a/report.json" > "$T/e/report.json"
if expect 1 "a changed scan path is a regression" "" "$JXLAB" diff "$T/a" "$T/e"; then
  grep -q 'scan_paths | \[\] | \["fallback"\]' "$T/out" && ok "scan path [] -> fallback" || no "scan path: $(cat "$T/out")"
fi
# timing beyond the spread: every figure of the baseline's rounds made 1000 s
mkdir -p "$T/f"
sed -E 's/"(median|min|max|seconds)": [0-9.]+(e-?[0-9]+)?/"\1": 1000.0/' "$T/a/report.json" > "$T/f/report.json"
if expect 1 "slower beyond both spreads: a regression" "" "$JXLAB" diff "$T/a" "$T/f"; then
  grep -q '## Timing' "$T/out" && grep -q 'slower' "$T/out" && ok "timing: slower beyond the spread" || no "timing: $(cat "$T/out")"
fi
# --out writes the same text; bad input is a usage error
expect 1 "--out" "" "$JXLAB" diff "$T/a" "$T/c" --out "$T/diff.md" && cmp -s "$T/out" "$T/diff.md" && ok "--out holds the printed text"
expect_ok 2 "a missing report" "cannot read" "$JXLAB" diff "$T/a" "$T/nope"
echo '{"x": 1}' > "$T/bad.json"
expect_ok 2 "not a lab report" "not a lab report" "$JXLAB" diff "$T/a" "$T/bad.json"
echo '{' > "$T/broken.json"
expect_ok 2 "not JSON" "not valid JSON" "$JXLAB" diff "$T/broken.json" "$T/a"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
