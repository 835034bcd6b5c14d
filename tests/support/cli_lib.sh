# Shared by the end-to-end shell tests (src/cli/*_test.sh, tests/hostile/*_test.sh). Source it
# after `set -euo pipefail`: it makes $work (removed on exit) and the checks below.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Runs the command, requires exit status $1; stdout goes to $work/out, stderr to $work/err.
expect_exit() {
  local want=$1
  shift
  set +e
  "$@" > "$work/out" 2> "$work/err"
  local got=$?
  set -e
  [[ $got -eq $want ]] || fail "exit $got, want $want: $* ($(head -c 2000 "$work/err"))"
}
# Runs the command, requires a nonzero exit status; output as expect_exit.
expect_failure() {
  set +e
  "$@" > "$work/out" 2> "$work/err"
  local got=$?
  set -e
  [[ $got -ne 0 ]] || fail "exit 0, want a failure: $*"
}
# Runs the command with stdout on a full device (/dev/full): requires exit status 1 and the
# output error on stderr ($work/err).
expect_output_error() {
  set +e
  "$@" > /dev/full 2> "$work/err"
  local got=$?
  set -e
  [[ $got -eq 1 ]] || fail "$* > /dev/full exited $got"
  grep -q "writing the output failed: No space left on device" "$work/err" \
    || fail "$* > /dev/full: $(cat "$work/err")"
}
