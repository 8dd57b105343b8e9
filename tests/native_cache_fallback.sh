#!/usr/bin/env bash
# The native compile cache when HOME cannot hold it (issue 29): a private folder under $TMPDIR
# (mode 0700) with a warning; refused, with the reason, when that folder is writable by others
# or (checked when run as root) belongs to another user, since jx loads compiled code from it.
# Usage: native_cache_fallback.sh NATIVE_CACHE_PROBE
set -u
P=$(realpath "$1")
T=$(mktemp -d)
trap 'chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
fails=0
run() { env -u JX_NATIVE_CACHE -u XDG_CACHE_HOME HOME=/proc/self TMPDIR="$T" "$P" > "$T/out" 2> "$T/err"; }
dir="$T/jxlab-native-$(id -u)"
run && grep -q "^jx: warning: cannot write /proc/self/.cache/jxlab/native; the native compile cache is $dir$" "$T/err" &&
  [ "$(stat -c %a "$dir")" = 700 ] && grep -q "origin: compiled" "$T/out" && echo "ok: falls back to $dir (0700)" ||
  { echo "FAILED: fallback: $(cat "$T/err" "$T/out")"; fails=$((fails + 1)); }
run && grep -q "origin: disk cache" "$T/out" && echo "ok: the fallback folder is a cache" || { echo "FAILED: second run: $(cat "$T/out")"; fails=$((fails + 1)); }
chmod 777 "$dir"
run; grep -q "compile cache $dir is writable by others (mode 777); refusing to load code from it" "$T/err" "$T/out" &&
  echo "ok: a folder others may write is refused" || { echo "FAILED: mode 777 accepted: $(cat "$T/err" "$T/out")"; fails=$((fails + 1)); }
chmod 700 "$dir"
if [ "$(id -u)" = 0 ]; then
  chown 65534 "$dir"
  run; grep -q "compile cache $dir belongs to another user (uid 65534)" "$T/err" "$T/out" && echo "ok: another user's folder is refused" ||
    { echo "FAILED: another user's folder accepted: $(cat "$T/err" "$T/out")"; fails=$((fails + 1)); }
  chown 0 "$dir"
else
  echo "note: not root, so no folder of another user can be made here; that refusal is checked by the root CI run"
fi
[ $fails -eq 0 ] && echo "native_cache_fallback: all passed" || echo "native_cache_fallback: $fails failed"
exit $fails
