#!/bin/sh
# A run killed while writing its report leaves no half-written report: the previous complete
# report stays byte for byte (or, on a first run, none appears), and the next run removes the
# dead run's temporary file. JX_FAULTS=report_write_stall stops the writer half-way through its
# first file, so the kill lands mid-write deterministically.
set -eu
JXLAB=$1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

killed_mid_write() {  # $1: report dir
  JX_FAULTS=report_write_stall "$JXLAB" run isnan-41 --report "$1" > "$D/log" 2>&1 &
  pid=$!
  i=0
  until ls "$1"/*.tmp-"$pid" > /dev/null 2>&1; do
    i=$((i + 1)); [ $i -lt 600 ] || { echo "no temporary report file appeared"; cat "$D/log"; exit 1; }
    sleep 0.1
  done
  tmp=$(ls "$1"/*.tmp-"$pid")
  [ -s "$tmp" ] || { echo "temporary file is empty, not half-written"; exit 1; }
  kill -9 "$pid"
  wait "$pid" 2> /dev/null || true
  echo "killed pid $pid while writing $tmp"
}

# 1. first run killed: no report at all
killed_mid_write "$D/first"
for f in report.json summary.md junit.xml; do
  [ ! -e "$D/first/$f" ] || { echo "half a report: $D/first/$f exists"; exit 1; }
done

# 2. a complete report, then a killed run over it: the complete one is untouched
"$JXLAB" run isnan-41 --report "$D/rep" > /dev/null
(cd "$D/rep" && sha256sum report.json summary.md junit.xml > "$D/sums")
killed_mid_write "$D/rep"
(cd "$D/rep" && sha256sum -c "$D/sums")

# 3. the next run cleans the dead run's temporary file and writes a whole report
"$JXLAB" run isnan-41 --report "$D/rep" > /dev/null
if ls "$D/rep"/*.tmp-* > /dev/null 2>&1; then echo "stale temporary file left: $(ls "$D/rep")"; exit 1; fi
grep -q '"results"' "$D/rep/report.json"
grep -q '</testsuites>' "$D/rep/junit.xml"
# 4. a run killed between the renames of its set (all three written, the marker left): the next
#    run finishes the set before anything else, so the three files are one run's
mkdir -p "$D/half"
for f in report.json summary.md junit.xml; do echo old > "$D/half/$f"; echo new > "$D/half/$f.tmp-99999999"; done
mv "$D/half/report.json.tmp-99999999" "$D/half/report.json"  # the first rename happened
echo "report.json summary.md junit.xml" > "$D/half/.report-set-99999999"
"$JXLAB" run no-such-scenario --report "$D/half" > /dev/null 2>&1 || true  # the report folder is prepared first
for f in report.json summary.md junit.xml; do
  [ "$(cat "$D/half/$f")" = new ] || { echo "half-renamed set not finished: $f is $(cat "$D/half/$f")"; exit 1; }
done
[ ! -e "$D/half/.report-set-99999999" ] || { echo "marker left"; exit 1; }
echo "report_kill: ok"
