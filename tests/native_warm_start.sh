#!/usr/bin/env bash
# A process with a warm native cache runs no compiler (issue 33 item 4): JX_CC is a wrapper that
# logs every compile; the first run compiles the OpenMP probe and the kernels, the second only
# loads them from the cache (the probe included). Usage: native_warm_start.sh NATIVE_CACHE_PROBE
set -u
P=$(realpath "$1")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/cc" <<WRAP
#!/bin/sh
echo "\$*" >> "$T/compiles"
exec cc "\$@"
WRAP
chmod +x "$T/cc"
export JX_CC="$T/cc" JX_NATIVE_CACHE="$T/cache"
"$P" > "$T/out1" 2>&1 || { echo "FAILED: first run: $(tail -3 "$T/out1")"; exit 1; }
cold=$(grep -c -- ' -o ' "$T/compiles" 2>/dev/null || true)
probe=$(grep -c -- '-fopenmp -fPIC -shared -o' "$T/compiles" 2>/dev/null || true)
: > "$T/compiles"
"$P" > "$T/out2" 2>&1 || { echo "FAILED: second run: $(tail -3 "$T/out2")"; exit 1; }
warm=$(grep -c -- ' -o ' "$T/compiles" 2>/dev/null || true)
echo "compiles: first run $cold (OpenMP probe $probe), warm run $warm"
[ "${cold:-0}" -ge 2 ] && [ "${probe:-0}" -eq 1 ] && [ "${warm:-0}" -eq 0 ] && echo "native_warm_start: passed" && exit 0
echo "FAILED: expected the probe and a kernel compiled first, nothing compiled warm"; cat "$T/compiles"; exit 1
