#!/usr/bin/env bash
# jxlab bisect and jxlab reduce on the documented failures and on planted ones.
# Usage: reduce_bisect.sh JXLAB SCENARIOS_DIR
JXLAB=$1
SC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
# bisect names each documented failure's switch
rows() {  # rows ID BACKEND PROFILE SWITCH [PROFILE SWITCH...]: each profile's row names its SWITCH as the smallest set
  local id=$1 be=$2
  shift 2
  expect 0 "bisect $id on $be" "" "$JXLAB" bisect "$id" --backend "$be" --scenarios "$SC" || return
  while [ $# -gt 0 ]; do
    grep -Eq "^\| $1 \|.*\| $2 \|$" "$T/out" && ok "bisect $id: $1 -> $2" || no "bisect $id: no row '$1 ... $2' in: $(cat "$T/out")"
    shift 2
  done
}
rows buffer-limit-kalman vulkan 'v0\.7\.1' ignore_buffer_budget 'v0\.7\.2' strict_concat_transpose
rows buffer-limit vulkan fusion-ignores-budget ignore_buffer_budget
rows concat-vjp cpu strict-concat-transpose strict_concat_transpose
rows tracer-disposal cpu borrowed-residuals borrowed_residuals
rows scan-dispatch-c vulkan no-workgroup-fusion no_workgroup_scan_fusion
if expect 0 "bisect --json" "" "$JXLAB" bisect buffer-limit-kalman --backend vulkan --json --scenarios "$SC"; then
  grep -q '"stops_at": "v0.7.2"' "$T/out" && ok "bisect --json: stops_at v0.7.2" || no "bisect --json: $(head -c 300 "$T/out")"
fi
expect_ok 2 "bisect of an unknown scenario" "no scenario" "$JXLAB" bisect no-such --scenarios "$SC"
# reduce: the buffer-limit loss to a few equations that still need 9 buffers (the limit + 1)
if expect 0 "reduce buffer-limit" "" "$JXLAB" reduce buffer-limit --backend vulkan --profile fusion-ignores-budget --out "$T/a" --scenarios "$SC"; then
  n=$(grep -o 'equations [0-9]* -> [0-9]*' "$T/out" | grep -o '[0-9]*$')
  [ -n "$n" ] && [ "$n" -le 12 ] && ok "reduce buffer-limit: $(grep -o 'equations [0-9]* -> [0-9]*' "$T/out")" || no "reduce buffer-limit: $(head -3 "$T/out")"
  if expect 0 "the reduced scenario runs: the replay half fails as documented, current passes" "" "$JXLAB" run buffer-limit-reduced --scenarios "$T/a" --report "$T/ar"; then
    grep -q 'Too many buffers (9) for WebGPU pipeline (max: 8)' "$T/ar/report.json" && ok "reduced: exactly limit + 1 buffers" || no "reduced: not 9 buffers"
  fi
fi
# a planted failure: one concatenate with a constant among 200 elementwise equations, under
# strict-concat-transpose, reduces to it
mkdir -p "$T/p/programs"
{
  printf '{"jaxpr": "{ lambda ; a:f32[3]. let\\n'
  prev=a
  for i in $(seq 1 100); do printf '    v%d:f32[3] = sin %s\\n    w%d:f32[3] = mul v%d 0.5:f32[]\\n' $i $prev $i $i; prev=w$i; done
  printf '    k:f32[2] = broadcast_in_dim[shape=(2,) broadcast_dimensions=()] 1.0:f32[]\\n'
  printf '    c:f32[5] = concatenate[dimension=0] k %s\\n    s:f32[] = reduce_sum[axes=(0,)] c\\n  in (s,) }"}\n' $prev
} > "$T/p/programs/planted.json"
cat > "$T/p/planted.json" <<'JSON'
{"id": "planted", "title": "planted", "source": "reduce_bisect.sh", "workload": {"program": "programs/planted.json", "inputs": {"seed": 0}},
 "transform": "value_and_grad", "backends": ["cpu"],
 "cases": [{"profile": "strict-concat-transpose", "expect": {"error": {"type": "NonlinearError", "message": "concatenate"}}},
           {"profile": "current", "expect": {"leaked_slots": 0}}]}
JSON
if expect 0 "reduce a planted failure" "" "$JXLAB" reduce planted --out "$T/pr" --scenarios "$T/p"; then
  n=$(grep -o 'equations [0-9]* -> [0-9]*' "$T/out" | grep -o '[0-9]*$')
  grep -q "concatenate" "$T/pr/programs/planted-reduced.json" && [ "$n" -le 4 ] && ok "planted: $(grep -o 'equations [0-9]* -> [0-9]*' "$T/out"), concatenate kept" ||
    no "planted: $(head -2 "$T/out")"
  expect_ok 0 "the reduced planted scenario passes" "" "$JXLAB" run planted-reduced --scenarios "$T/pr"
fi
# the time bound: stops, says so, writes what it has
if expect 0 "reduce under --max-seconds 1" "" "$JXLAB" reduce buffer-limit --backend vulkan --out "$T/pt" --scenarios "$SC" --max-seconds 1; then
  grep -q "stopped at --max-seconds" "$T/out" && [ -f "$T/pt/buffer-limit-reduced.json" ] && ok "time bound" || no "time bound: $(head -2 "$T/out")"
fi
expect_ok 2 "reduce a case without an error to keep" "no case" "$JXLAB" reduce isnan-41 --out "$T/x" --scenarios "$SC"
# a missed expectation: a kernel over more buffers than the case allows reduces to one of exactly
# the limit + 1 (the reduced scenario fails the same way until the cause is fixed)
mkdir -p "$T/pb/programs"
cat > "$T/pb/programs/sum5.json" <<'JSON'
{"jaxpr": "{ lambda ; a:f32[8] b:f32[8] c:f32[8] d:f32[8] e:f32[8]. let\n    f:f32[8] = add a b\n    g:f32[8] = mul f c\n    h:f32[8] = add g d\n    i:f32[8] = sub h e\n    j:f32[8] = sin i\n  in (j,) }"}
JSON
cat > "$T/pb/budget.json" <<'JSON'
{"id": "budget", "title": "a kernel over more buffers than the budget", "source": "reduce_bisect.sh", "workload": {"program": "programs/sum5.json", "inputs": {"seed": 0}},
 "transform": "jit", "backends": ["cpu"], "cases": [{"profile": "current", "expect": {"max_buffers_per_dispatch": 3}}]}
JSON
if expect 0 "reduce a missed buffer budget" "" "$JXLAB" reduce budget --scenarios "$T/pb" --profile current --out "$T/pbo"; then
  if expect 1 "the reduced budget scenario fails as the case did" "" "$JXLAB" run budget-reduced --scenarios "$T/pbo"; then
    grep -q '^    4 buffers in one dispatch, expected at most 3$' "$T/out" && ok "budget: a kernel of exactly limit + 1 buffers" || no "budget: $(cat "$T/out")"
  fi
fi
# a dispatch-kind failure: scan-dispatch-c's host-loop fallback under no-workgroup-fusion
if expect 0 "reduce scan-dispatch-c (a scan path to keep)" "" "$JXLAB" reduce scan-dispatch-c --out "$T/sd" --scenarios "$SC"; then
  expect_ok 0 "the reduced scan-dispatch-c scenario passes" "" "$JXLAB" run scan-dispatch-c-reduced --scenarios "$T/sd"
  # deterministic: the same case reduces to the same files (this vulkan case: a quarter of
  # buffer-limit's reduction time)
  expect 0 "reduce again" "" "$JXLAB" reduce scan-dispatch-c --out "$T/sd2" --scenarios "$SC" &&
    { diff -r "$T/sd" "$T/sd2" > /dev/null && ok "reduce is deterministic" || no "reduce: two runs differ"; }
fi
# a program case file (no scenario): the failure it shows now is kept
cat > "$T/prog_fail.jaxpr" <<'JAXPR'
{ lambda ; a:f32[4] b:f32[3]. let
    c:f32[4] = sin a
    d:f32[4] = mul c 2.0:f32[]
    e:f32[4] = exp d
    f:f32[3] = broadcast_in_dim[shape=(3,) broadcast_dimensions=()] 2.5:f32[]
    g:f32[7] = concatenate[dimension=0] e f
    h:f32[7] = mul g 3.5:f32[]
    i:f32[] = reduce_sum[axes=(0,)] h
  in (i,) }
JAXPR
if expect 0 "reduce a program file" "" "$JXLAB" reduce "$T/prog_fail.jaxpr" --out "$T/pf" --profile strict-concat-transpose --transform value_and_grad; then
  grep -q "keeping NonlinearError" "$T/out" && ok "program file: the observed failure kept" || no "program file: $(head -2 "$T/out")"
  grep -Eq "literal 2.5:f32\\[\\] of broadcast_in_dim -> 1" "$T/out" && ok "program file: a literal simplified" || no "program file: no literal move in $(cat "$T/out")"
  expect_ok 0 "the reduced program-file scenario passes" "" "$JXLAB" run prog-fail-reduced --scenarios "$T/pf"
fi
expect_ok 2 "reduce a program file that does not fail" "nothing to keep" "$JXLAB" reduce "$T/prog_fail.jaxpr" --out "$T/pf2"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
