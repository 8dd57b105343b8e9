#!/usr/bin/env bash
# report.html in a real browser (headless Chromium, Debian's chromium package): the page loads
# with no console message or error, the table renders (a screenshot far from blank; the DOM after
# the page's script ran), the URL-hash filter hides what it should, report text is escaped, and
# the baseline diff appears with --baseline.
# Usage: lab_html.sh JXLAB SCENARIOS_DIR
JXLAB=$1
SC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "FAILED: no chromium: scripts/setup installs Debian's chromium package for this test"
  exit 1
fi
browse() {  # browse URL ARGS...: headless Chromium; stderr (console messages) in $T/console
  local url=$1
  shift
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/profile" \
    --enable-logging=stderr --v=0 "$@" "$url" 2> "$T/console"
}
# a scenario whose title holds markup, run beside real ones; the baseline run had it failing
mkdir -p "$T/s"
cp "$SC/isnan-41.json" "$SC/concat-vjp.json" "$T/s/"
sed -e 's/"title": "[^"]*"/"title": "<img src=x onerror=alert(1)> markup \& quotes \\"q\\""/' -e 's/"out0": \[0, 1, 0, 1\]/"out0": [1, 1, 0, 1]/' \
  "$SC/isnan-41.json" > "$T/s/isnan-41.json"
"$JXLAB" run --all --backend cpu --scenarios "$T/s" --report "$T/base" > /dev/null 2>&1
cp "$SC/isnan-41.json" "$T/s/isnan-41.json"
sed -i 's/"title": "[^"]*"/"title": "<img src=x onerror=alert(1)> markup \& quotes \\"q\\""/' "$T/s/isnan-41.json"
expect 0 "run with --baseline" "" "$JXLAB" run --all --backend cpu --scenarios "$T/s" --report "$T/r" --baseline "$T/base" &&
  { [ -s "$T/r/report.html" ] && ok "report.html written with the set" || no "no report.html"; }
expect_ok 2 "a baseline that is no report" "baseline .*: cannot read" "$JXLAB" run isnan-41 --scenarios "$SC" --report "$T/x" --baseline "$T/none"
# the checker itself: a page with a console error is caught
echo '<!DOCTYPE html><html><body><script>throw new Error("planted")</script></body></html>' > "$T/bad.html"
browse "file://$T/bad.html" --dump-dom > /dev/null
grep -q ':CONSOLE' "$T/console" && ok "the console check sees a planted error" || no "the console check missed a planted error"
# loads with no console message at all; the script ran (data-ready, the count of shown rows)
browse "file://$T/r/report.html" --dump-dom > "$T/dom.html"
grep -q ':CONSOLE' "$T/console" && no "console messages: $(grep ':CONSOLE' "$T/console" | head -3)" || ok "no console message or error"
grep -q 'data-ready="1"' "$T/dom.html" && ok "the page's script ran" || no "data-ready not set"
n=$(grep -c '<tr class="case"' "$T/dom.html")
grep -q ">$n of $n cases shown<" "$T/dom.html" && ok "table: $n case rows, all shown" || no "table: $n rows, $(grep -o '[0-9]* of [0-9]* cases shown' "$T/dom.html")"
# escaped: the markup in the title is text, never an element
grep -q '&lt;img src=x onerror=alert(1)&gt; markup &amp; quotes' "$T/dom.html" && ! grep -q '<img' "$T/dom.html" && ok "report text is escaped" ||
  no "escaping: $(grep -o '.\{20\}img src=x.\{30\}' "$T/dom.html" | head -2)"
# the hash filter: status=fail shows none here; backend=cpu&text=isnan shows isnan-41's one row
browse "file://$T/r/report.html#status=fail" --dump-dom > "$T/dom2.html"
grep -q ">0 of $n cases shown<" "$T/dom2.html" && ok "filter status=fail: 0 of $n" || no "filter: $(grep -o '[0-9]* of [0-9]* cases shown' "$T/dom2.html")"
browse "file://$T/r/report.html#backend=cpu&text=isnan" --dump-dom > "$T/dom3.html"
grep -q ">1 of $n cases shown<" "$T/dom3.html" && ok "filter backend=cpu, text=isnan: 1 of $n" || no "filter: $(grep -o '[0-9]* of [0-9]* cases shown' "$T/dom3.html")"
# the baseline diff: isnan-41 failed in the baseline and passes now (no regression)
grep -q 'Against the baseline' "$T/dom.html" && grep -q '<td>isnan-41 cpu current</td><td>fail</td><td>pass</td>' "$T/dom.html" &&
  ok "the diff against the baseline: isnan-41 fail -> pass" || no "no baseline diff in the page"
# a screenshot renders the table: far larger than a blank page's
echo '<!DOCTYPE html><html><body></body></html>' > "$T/blank.html"
browse "file://$T/blank.html" --window-size=1280,900 --screenshot="$T/blank.png" > /dev/null
browse "file://$T/r/report.html" --window-size=1280,900 --screenshot="$T/shot.png" > /dev/null
b=$(stat -c %s "$T/blank.png" 2> /dev/null || echo 0)
s=$(stat -c %s "$T/shot.png" 2> /dev/null || echo 0)
[ "$b" -gt 0 ] && [ "$s" -gt $((b * 5)) ] && ok "screenshot: $s bytes against a blank page's $b" || no "screenshot: $s bytes, blank $b"
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
