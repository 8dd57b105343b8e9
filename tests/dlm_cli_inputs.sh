#!/usr/bin/env bash
# jxlab dlm on bad or unusual input (issue 33): every bad input is a clear error (exit 1, the
# message names the problem, nothing written, no temporary file left), checked before the work;
# blank CSV lines are missing values, a byte-order mark is skipped, leading missing values and
# float32 order-2 fits give numbers, dlm-js's option names are accepted, an optimizer that stops
# at its cap says so. Usage: dlm_cli_inputs.sh JXLAB FIXTURES_DIR
set -u
J=$(realpath "$1") FX=$(realpath "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
# expect_error NAME REGEX OUT ARGS...: exit 1 with REGEX in stderr, neither OUT nor OUT.tmp left
expect_error() {
  local name=$1 re=$2 out=$3
  shift 3
  expect 1 "$name" "$re" "$J" "$@" || return
  if [ -n "$out" ] && { [ -f "$out" ] || [ -e "$out.tmp" ]; }; then no "$name: left $out or $out.tmp behind"; return; fi
  ok "$name"
}
cd "$T"
nile=$FX/niledemo-in.json
y12=$(grep -o '"y": *\[[^]]*\]' "$nile" | head -1)
[ -n "$y12" ] || { echo "cannot read $nile"; exit 1; }

# CSV: BOM skipped, blank lines inside the series missing, blank lines at the end dropped
printf '\xEF\xBB\xBF1120\n1160\n\n963\n 1210 \n\n\n' > bom.csv
"$J" dlm fit --in bom.csv --s 122 --w 27 27 --out bom.json > /dev/null 2>&1 &&
  grep -Fq '"y":[1120,1160,null,963,1210]' bom.json && ok "csv: BOM, blank line as missing, trailing blanks" ||
  no "csv: BOM/blank lines ($(grep -o '"y":[^]]*]' bom.json 2>/dev/null))"
printf '1\ninf\n3\n' > inf.csv
expect_error "csv: inf refused" "line 2: 'inf' is not finite" out1.json dlm fit --in inf.csv --s 1 --w 1 --out out1.json
expect_error "--s inf refused" "'s' must hold positive finite" out2.json dlm fit --in "$nile" --s inf --w 1 --out out2.json
expect_error "--w inf refused" "'w' must hold non-negative finite" out3.json dlm fit --in "$nile" --s 1 --w inf --out out3.json
# outputs checked before the work; nothing left behind
mkdir adir
expect_error "--out is a folder" "adir: is a directory" "" dlm fit --in "$nile" --out adir
[ -e adir.tmp ] && no "--out folder: adir.tmp left" || ok "--out folder: no adir.tmp"
expect_error "--out in a missing folder" "folder nope does not exist" nope/x.json dlm fit --in "$nile" --out nope/x.json
expect_error "--out unwritable" "cannot write the output file" "" dlm fit --in "$nile" --out /proc/jx-out.json
expect_error "forecast --h too large" "--h 100000000: the forecast would hold" f.json dlm forecast --in "$nile" --out f.json --h 100000000
# JSON inputs built from the Nile fixture's values
vals=$(echo "$y12" | sed 's/.*\[//; s/\]//')
mk() { printf '{"y": [%s], "s": 122.88, "w": [27.48, 27.48]}' "$2" > "$1"; }
mk lead.json "$(printf 'null,%.0s' $(seq 12))$(echo "$vals" | cut -d, -f13-)"
"$J" dlm fit --in lead.json --out lead-out.json > lead.txt 2>&1 && grep -Eq '^-2 log L [0-9]+\.[0-9]+, s2 [0-9.]+, nobs 88$' lead.txt &&
  ok "12 leading missing values fit" || no "12 leading missing values: $(cat lead.txt)"
mk allmiss.json "$(printf 'null,%.0s' $(seq 99))null"
expect_error "all missing refused" "no observed value \(all 100 are missing\)" am.json dlm fit --in allmiss.json --out am.json
# options: both spellings; unknown names and model sizes explained
opt() { sed "s/\"w\": *\[[^]]*\]/\"w\": $2, \"options\": $3/" "$nile" > "$1"; }
opt trig.json "[40, 3, 3, 1, 3, 1]" '{"order": 1, "trig": 2}'
opt harm.json "[40, 3, 3, 1, 3, 1]" '{"order": 1, "harmonics": 2, "seasonLength": 12}'
a=""; b=""; a=$("$J" dlm fit --in trig.json --out t1.json 2>&1) && b=$("$J" dlm fit --in harm.json --out t2.json 2>&1) && [ "$a" = "$b" ] && cmp -s t1.json t2.json &&
  ok "harmonics/seasonLength = trig/ns" || no "harmonics: '$a' vs '$b'"
opt typo.json "[1, 2]" '{"order": 1, "harmonic": 2}'
expect_error "unknown option named" "unknown option 'harmonic' \(known: order, trig \(harmonics\)" o4.json dlm fit --in typo.json --out o4.json
opt clash.json "[1, 2]" '{"trig": 1, "harmonics": 2}'
expect_error "two spellings disagree" "'trig' and 'harmonics' name the same option" o5.json dlm fit --in clash.json --out o5.json
opt size.json "[1, 2, 3, 4]" '{"order": 1}'
expect_error "model size explained" "4 values but the model has 2 states \(order 1: 2 trend states\)" o6.json dlm fit --in size.json --out o6.json
sed 's/"s":/"X": [[1]], "s":/' "$nile" > x.json
expect_error "covariates: one row per observation" "field 'X' has 1 rows; expected one per observation \(100\)" o7.json dlm fit --in x.json --out o7.json
# covariates the way the toolbox's ozone demo gives them: yy, ss, X, options, ys/ym
printf '{"yy": [1.0, 2.1, 2.9, 4.2, 5.0, 5.8, 7.1, 8.0], "ss": 0.3, "w": [0.1],
  "X": [[0.1], [0.5], [0.2], [0.9], [0.4], [0.3], [0.8], [0.6]], "ys": 2.0, "ym": 3.0, "options": {"order": 1}}' > cov.json
"$J" dlm fit --in cov.json --out cov-out.json > cov.txt 2>&1 && grep -Fq '"XX":[[0.1],[0.5],[0.2],[0.9],[0.4],[0.3],[0.8],[0.6]]' cov-out.json &&
  ok "covariates fit (yy, ss, X, ys, ym)" || no "covariates fit: $(cat cov.txt)"
expect_error "forecast needs future covariates" "needs their future values, field 'X_forecast' \(12 rows\)" fc.json dlm forecast --in cov.json --out fc.json
sed 's/"ys"/"X_forecast": [[0.2], [0.7]], "ys"/' cov.json > covf.json
"$J" dlm forecast --in covf.json --out fc2.json > /dev/null 2>&1 && grep -Eq '"yhat":\[[^],]+,[^],]+\]' fc2.json &&
  ok "forecast with X_forecast (h = its rows)" || no "forecast with X_forecast: $(cat fc2.json 2>/dev/null | head -c 300)"
expect_error "X_forecast rows against --h" "field 'X_forecast' has 2 rows; --h is 5" fc3.json dlm forecast --in covf.json --out fc3.json --h 5
# float32 order 2 (the scan smoother's covariances) on cpu
"$J" dlm fit --in "$nile" --order 2 --dtype f32 --out f32.json > f32.txt 2>&1 && grep -Eq '^-2 log L 11[0-9][0-9]\.[0-9]+,' f32.txt &&
  ok "float32 order 2 gives numbers" || no "float32 order 2: $(cat f32.txt)"
# compact by default, --pretty indents
"$J" dlm fit --in "$nile" --out c.json > /dev/null && [ "$(wc -l < c.json)" -le 1 ] && "$J" dlm fit --in "$nile" --pretty --out p.json > /dev/null &&
  [ "$(wc -l < p.json)" -gt 100 ] && ok "compact JSON, --pretty" || no "compact/pretty: $(wc -l < c.json) / $(wc -l < p.json) lines"
# an optimizer at its cap says so
"$J" dlm mle --optimizer adam --max-iter 5 --in "$nile" --out adam.json > adam.txt 2> adam.err &&
  grep -q "warning: the adam optimizer did not converge: iteration cap 5 reached" adam.err && grep -Fq '"converged":false' adam.json &&
  ok "adam at its cap warns, converged false" || no "adam cap: $(cat adam.err)"
"$J" dlm mle --order 0 --in "$FX/order0-in.json" --out newton.json > /dev/null 2> newton.err && grep -Fq '"converged":true' newton.json &&
  [ ! -s newton.err ] && ok "newton converges silently" || no "newton: $(cat newton.err)"
[ $fails -eq 0 ] && echo "dlm_cli_inputs: all passed" || echo "dlm_cli_inputs: $fails failed"
exit $fails
