#!/usr/bin/env bash
# The CLI on a real, small file system that fills up: adds, flushes and merges into a
# rollout store on an 8 MiB tmpfs until the device is full, then space returns (remount at
# 256 MiB): every row whose `rollout add` exited 0 is there after a flush and a merge, none
# twice, and the store verifies clean. Exit 77 (skipped) where tmpfs cannot be mounted;
# disk_full_test covers the same ground through the fault-injecting file system everywhere.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/lib.sh"

mnt=$work/mnt
mkdir "$mnt"
if ! mount -t tmpfs -o size=8m tmpfs "$mnt" 2> /dev/null; then
  echo "hostile tmpfs: skipped, cannot mount a tmpfs here (needs root)"
  exit 77
fi
trap 'umount "$mnt" 2> /dev/null; rm -rf "$work"' EXIT
s=$mnt/store

# One batch: 40 rows of 24 KB of incompressible text each (~1 MiB), ids "b<N>-<i>".
batch() {
  for ((i = 0; i < 40; i++)); do
    printf '{"id":"b%s-%s","rollout_id":"r%s","problem_id":"p","content":"%s"}\n' \
      "$1" "$i" "$1" "$(head -c 18000 /dev/urandom | base64 -w0)"
  done
}

acked=$work/acked
: > "$acked"
full=0
for ((n = 0; n < 40; n++)); do
  batch "$n" > "$work/batch.jsonl"
  set +e
  "$strata" rollout add "$s" "$work/batch.jsonl" > /dev/null 2> "$work/err"
  status=$?
  set -e
  if [[ $status -eq 0 ]]; then
    grep -o '"id":"[^"]*"' "$work/batch.jsonl" | cut -d'"' -f4 >> "$acked"
  else
    grep -qi "no space left on device" "$work/err" || fail "add failed otherwise: $(cat "$work/err")"
    full=$((full + 1))
  fi
  if ((n % 3 == 2)); then "$strata" rollout flush "$s" > /dev/null 2>&1 || full=$((full + 1)); fi
  if ((n % 5 == 4)); then "$strata" rollout merge "$s" > /dev/null 2>&1 || full=$((full + 1)); fi
done
[[ $full -gt 0 ]] || fail "the tmpfs never filled up: the probe proves nothing"
[[ -s $acked ]] || fail "no add succeeded"

mount -o remount,size=256m "$mnt"
expect_exit 0 "$strata" rollout flush "$s"
expect_exit 0 "$strata" rollout merge "$s"
"$strata" rollout list "$s" --format jsonl --limit 100000 --columns id \
  | cut -d'"' -f4 | sort > "$work/present"
dups=$(uniq -d "$work/present" | wc -l)
[[ $dups -eq 0 ]] || fail "$dups rows listed twice"
missing=$(sort "$acked" | comm -23 - "$work/present" | wc -l)
[[ $missing -eq 0 ]] || fail "$missing acknowledged rows lost: $(sort "$acked" | comm -23 - "$work/present" | head -3)"
if "$strata" rollout --help | grep -q '^  verify '; then
  expect_exit 0 "$strata" rollout verify "$s"
else
  expect_exit 0 "$strata" table verify "$s" --all-versions
fi
echo "hostile tmpfs: ok ($(wc -l < "$acked") acknowledged rows kept, $full failures while full)"
