#!/usr/bin/env bash
# A differential fuzz finding goes from a mismatch to a minimal program case and scenario: the
# target writes the failing program (FuzzFinding test, planted wrong tanh on native), jxlab
# reduce keeps the mismatch against the cpu oracle while it shrinks a planted tanh among 120
# equations, and the committed regression scenarios of the differential target pass.
# Usage: fuzz_finding_reduce.sh JXLAB TEST_FUZZ_REPLAY REGRESSIONS_DIR
JXLAB=$1
REPLAY=$2
REG=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
export JX_FAULTS=native_wrong_tanh:-1
# 1. the finding as a program case (the target writes it before it aborts)
if JX_FINDING_OUT="$T/f" "$REPLAY" --gtest_filter='FuzzFinding.*' > "$T/gtest" 2>&1; then
  f=$(ls "$T"/f/*.json 2> /dev/null | head -1)
  [ -n "$f" ] && ok "the finding is written as a program case: $(basename "$f")" || no "no program case in $T/f"
  if [ -n "$f" ] && expect 0 "reduce the finding (backend and transform from its file)" "" "$JXLAB" reduce "$f" --out "$T/fr"; then
    grep -q "keeping a mismatch against the cpu oracle" "$T/out" && ok "the mismatch is the failure kept" || no "finding: $(head -3 "$T/out")"
    id=$(basename "$f" .json)-reduced
    expect_ok 0 "the reduced finding's scenario passes while the wrong tanh is planted" "" "$JXLAB" run "$id" --scenarios "$T/fr"
    expect_ok 1 "and fails once the answer is right again" "" env -u JX_FAULTS "$JXLAB" run "$id" --scenarios "$T/fr"
  fi
else
  no "FuzzFinding test: $(tail -5 "$T/gtest")"
fi
# 2. a planted wrong tanh among 120 equations of a jitted program (an identity chain, so the wrong
# value reaches the output) reduces to the tanh alone
{
  printf '{ lambda ; a:f32[3] b:f32[3]. let\n'
  prev=a
  for i in $(seq 1 60); do
    printf '    v%d:f32[3] = add %s 0.125:f32[]\n    w%d:f32[3] = sub v%d 0.125:f32[]\n' "$i" "$prev" "$i" "$i"
    prev=w$i
    [ "$i" = 40 ] && { printf '    t:f32[3] = tanh %s\n' "$prev"; prev=t; }
  done
  printf '    z:f32[3] = add %s b\n  in (b, z) }\n' "$prev"
} > "$T/planted_tanh.jaxpr"
if expect 0 "reduce a planted mismatch" "" "$JXLAB" reduce "$T/planted_tanh.jaxpr" --backend native --transform jit --out "$T/pm"; then
  n=$(grep -o 'equations [0-9]* -> [0-9]*' "$T/out" | grep -o '[0-9]*$')
  grep -q "keeping a mismatch against the cpu oracle: /^values 'out1'" "$T/out" && ok "planted: the mismatch on output 1 kept" || no "planted: $(head -2 "$T/out")"
  grep -q 'tanh' "$T/pm/programs/planted-tanh-reduced.json" && [ "$n" = 1 ] && ok "planted: $(grep -o 'equations [0-9]* -> [0-9]*' "$T/out"), the tanh alone" ||
    no "planted: $(grep -o 'equations [0-9]* -> [0-9]*' "$T/out"): $(cat "$T/pm/programs/planted-tanh-reduced.json")"
  grep -q '"differ"' "$T/pm/planted-tanh-reduced.json" && ok "the reduced scenario asserts the wrong answer (values.differ)" || no "no differ in the reduced scenario"
  expect_ok 0 "the reduced planted scenario passes" "" "$JXLAB" run planted-tanh-reduced --scenarios "$T/pm"
fi
expect_ok 2 "a program that agrees with the oracle: nothing to keep" "nothing to keep" env -u JX_FAULTS "$JXLAB" reduce "$T/planted_tanh.jaxpr" --backend native --transform jit --out "$T/none"
# 3. the committed regression scenarios of the differential target pass (fault off)
expect_ok 0 "committed differential regressions" "" env -u JX_FAULTS "$JXLAB" run --all --scenarios "$REG"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
