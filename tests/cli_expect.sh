# Sourced by the command-line test scripts (tests/*.sh): counted outcomes and one checker.
#   ok NAME / no NAME: a passed / failed check (no adds to $fails); expect_ok: expect + ok
#   expect CODE NAME REGEX CMD...: CMD exits CODE and its stderr matches REGEX ("" for any);
#     returns non-zero when it did not, so a caller can add checks of its own after it
# Needs $T, a scratch folder. JX_TIME_CLI=1 prints each checked command's wall time to stderr.
fails=0
ok() { echo "ok: $1"; }
no() { echo "FAILED: $1"; fails=$((fails + 1)); }
expect() {
  local code=$1 name=$2 re=$3
  shift 3
  local t0=$EPOCHREALTIME
  "$@" > "$T/out" 2> "$T/err"
  local rc=$?
  [ -n "${JX_TIME_CLI:-}" ] && printf "%6.2f s  %s\n" "$(awk "BEGIN{print $EPOCHREALTIME - $t0}")" "$name" >&2
  if [ $rc -ne "$code" ]; then no "$name: exit $rc, expected $code ($(head -2 "$T/err"))"; return 1; fi
  if [ -n "$re" ] && ! grep -Eq -- "$re" "$T/err"; then no "$name: stderr '$(head -2 "$T/err")' lacks /$re/"; return 1; fi
  return 0
}
# expect_ok: expect, then ok NAME when it held
expect_ok() { expect "$@" && ok "$2"; }
