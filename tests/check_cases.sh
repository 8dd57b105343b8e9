#!/usr/bin/env bash
# jxlab check over the JAX program cases (tests/data/jaxpr, written by JAX 0.11.2, and the shared
# samples) on every backend under every transform: exit 0; reverse mode is left out for programs
# with a while loop (JAX refuses it too, and so does jx: exit 1 with JAX's message). Malformed
# files and unsupported primitives exit 2; a mismatch exits 1; --out writes the case layout.
# Usage: check_cases.sh JXLAB SOURCE_DIR
JXLAB=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
D=$SRC/tests/data/jaxpr
mapfile -t all < <(ls "$D"/*.json "$D"/shared/*.json)
mapfile -t no_while < <(grep -L 'while\[' "${all[@]}")
for t in eager jit vmap; do expect_ok 0 "check --transform $t (${#all[@]} files)" "" "$JXLAB" check "${all[@]}" --backend all --transform "$t"; done
for t in grad 'jit(grad)'; do
  expect_ok 0 "check --transform $t (${#no_while[@]} files)" "" "$JXLAB" check "${no_while[@]}" --backend all --transform "$t"
done
if expect 1 "grad through a while loop is refused" "" "$JXLAB" check "$D/shared/while_loop.json" --backend cpu --transform grad; then
  grep -q "Reverse-mode differentiation does not work for lax.while_loop" "$T/out" && ok "grad through while: JAX's message" || no "grad through while: message"
fi
for f in "$D"/unsupported/*.json; do
  if expect 2 "unsupported $(basename "$f")" "" "$JXLAB" check "$f" --backend cpu; then
    grep -Eq "$(basename "$f"):[0-9]+:[0-9]+: .*not supported" "$T/out" && ok "$(basename "$f") names its line" || no "$(basename "$f"): $(tail -1 "$T/out")"
  fi
done
printf '{ lambda ; a:f32[3]. let b:f32[3] = sin a\n  in (b,) ' > "$T/bad.jaxpr"
if expect 2 "malformed text" "" "$JXLAB" check "$T/bad.jaxpr"; then
  grep -q "bad.jaxpr:2:11: expected '}'" "$T/out" && ok "malformed: file:line:column" || no "malformed: $(tail -1 "$T/out")"
fi
echo '{"jaxpr": 3}' > "$T/bad.json"
expect_ok 2 "a case file without jaxpr text" "" "$JXLAB" check "$T/bad.json"
# a case whose expected output is wrong: exit 1, the row says mismatch
sed -E 's/("outputs": \[\{"dtype": "float32", "shape": \[5\], "data": \[)[-0-9.e]+/\19.5/' "$D/shared/sin_exp.json" > "$T/wrong.json"
if expect 1 "a wrong expected output" "" "$JXLAB" check "$T/wrong.json" --backend cpu; then
  grep -q "mismatch" "$T/out" && ok "wrong output: mismatch row" || no "wrong output: no mismatch row"
fi
# a bare .jaxpr: inputs generated; --out writes <stem>.<backend>.json in the case layout
printf '{ lambda ; a:f32[4] b:i32[]. let c:f32[4] = mul a 2.0:f32[]; d:i32[] = add b 1:i32[] in (c, d) }' > "$T/bare.jaxpr"
if expect 0 "bare .jaxpr with --out" "" "$JXLAB" check "$T/bare.jaxpr" --backend cpu --out "$T/o"; then
  grep -q '"outputs"' "$T/o/bare.cpu.json" && ok "--out writes bare.cpu.json" || no "--out: no bare.cpu.json"
fi
if expect 0 "bare .jaxpr with --inputs iota" "" "$JXLAB" check "$T/bare.jaxpr" --backend cpu --inputs iota --out "$T/oi"; then
  tr -d ' \n' < "$T/oi/bare.cpu.json" | grep -q '"data":\[0.0,2.0,4.0,6.0\]' &&
    ok "--inputs iota: 2 * (0, 1, 2, 3)" || no "--inputs iota: $(head -c 200 "$T/oi/bare.cpu.json")"
fi
expect_ok 2 "unknown transform" "transform" "$JXLAB" check "$T/bare.jaxpr" --transform hessian
expect_ok 2 "unknown backend" "backend" "$JXLAB" check "$T/bare.jaxpr" --backend tpu
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
