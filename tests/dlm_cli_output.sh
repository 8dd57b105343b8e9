#!/usr/bin/env bash
# jxlab dlm's outputs (issue 33 item 4): the streamed JSON equals the in-memory fit's, --pretty
# is the same document indented, .npz is what np.load reads and holds the same numbers, and a
# long series runs in memory linear in n with a small constant (--timings reports peak RSS).
# Usage: dlm_cli_output.sh JXLAB FIXTURES_DIR
set -u
J=$(realpath "$1") FX=$(realpath "$2")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/cli_expect.sh"
cd "$T"
# Debian's python3 (python3-numpy is installed for it), whatever python3 comes first on PATH
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
nile=$FX/niledemo-in.json
"$J" dlm fit --in "$nile" --out scan.json > /dev/null && "$J" dlm fit --in "$nile" --out pretty.json --pretty > /dev/null &&
  "$J" dlm fit --in "$nile" --out scan.npz > /dev/null && "$J" dlm fit --in "$nile" --out npz.json --format npz > /dev/null &&
  "$J" dlm fit --in "$nile" --out assoc.json --algorithm assoc > /dev/null && ok "fits written" || no "a fit failed"
"$PY" - <<'PY' && ok "pretty JSON, npz (np.load) and the streamed scan agree with the in-memory assoc fit" || no "outputs differ"
import json, sys, zipfile
import numpy as np
scan, pretty, assoc = (json.load(open(f)) for f in ("scan.json", "pretty.json", "assoc.json"))
assert scan == pretty, "pretty differs"
assert zipfile.ZipFile("scan.npz").testzip() is None, "crc"
assert zipfile.ZipFile("npz.json").testzip() is None, "--format npz wrote no zip"
npz = np.load("scan.npz")
assert set(npz.files) == set(scan), (set(npz.files) ^ set(scan))
def arr(v):
    return np.array(v if not isinstance(v, list) or v else [], dtype=float)
for k, v in scan.items():
    if k == "class":
        assert str(npz[k]) == v
        continue
    a = np.array(json.loads(json.dumps(v).replace("null", "NaN")), dtype=float)
    b = npz[k]
    assert a.shape == b.shape or a.size == b.size == 0, (k, a.shape, b.shape)
    assert np.allclose(a, b, rtol=0, atol=0, equal_nan=True), k  # the same doubles, shortest round trip
    c = np.array(json.loads(json.dumps(assoc[k]).replace("null", "NaN")), dtype=float)
    scale = np.nanmax(np.abs(a)) if a.size else 0
    assert np.allclose(a, c, rtol=0, atol=1e-7 * scale + 1e-300, equal_nan=True), ("assoc", k)
PY
# a long series: memory linear in n with a small constant (2M rows: inputs 32 MB, outputs 368 MB)
"$PY" -c "
import math
with open('long.csv', 'w') as f:
    f.write('\n'.join('%.3f' % (1000 + 50 * math.sin(t / 300) + 30 * math.sin(t * 1.7)) for t in range(2000000)) + '\n')"
if "$J" dlm fit --in long.csv --s 30 --w 1 0.01 --out long.npz --timings > long.log 2>&1; then
  rss=$(grep -o 'peak RSS [0-9.]*' long.log | grep -o '[0-9.]*$')
  "$PY" -c "
import numpy as np, sys
d = np.load('long.npz')
assert d['x'].shape == (2, 2000000) and d['C'].shape == (2, 2, 2000000), d['x'].shape
assert np.isfinite(d['x']).all() and np.isfinite(d['ystd']).all()
rss = float(sys.argv[1])
assert rss < 400, f'peak RSS {rss} MB for 2M rows (outputs stream; the inputs are 32 MB)'
" "$rss" && ok "2M rows: streamed to npz, peak RSS $rss MB" || no "2M rows: $(tail -2 long.log) rss $rss"
else
  no "2M rows: $(tail -2 long.log)"
fi
[ $fails -eq 0 ] && echo "dlm_cli_output: all passed" || echo "dlm_cli_output: $fails failed"
exit $fails
