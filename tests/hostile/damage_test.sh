#!/usr/bin/env bash
# Truncation, deletion and a bit flip of every file of a rollout store (base table, shard
# registry, shard manifests and hint, WAL segments, generation tables and bloom filters):
# each is either reported - some command fails naming the damaged file (or, for a file of a
# generation table, its generation) - or provably
# harmless: verify passes and every row reads back exactly as before. Anything else (rows
# gone or changed while every command says all is well) fails the probe.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/lib.sh"

pristine=$work/pristine
make_store "$pristine"
has_rollout_verify=0
"$strata" rollout --help | grep -q '^  verify ' && has_rollout_verify=1
verify_store() {
  if [[ $has_rollout_verify -eq 1 ]]; then
    "$strata" rollout verify "$1"
  else
    "$strata" table verify "$1" --all-versions
  fi
}
# Every row, flushed, in id order: what an intact store answers.
all_rows() { "$strata" rollout list "$1" --format jsonl --limit 100000; }
cp -a "$pristine" "$work/reference"
"$strata" rollout flush "$work/reference" > /dev/null
all_rows "$work/reference" > "$work/expected"
[[ $(wc -l < "$work/expected") -eq $store_rows ]] || fail "fixture holds $(wc -l < "$work/expected") rows"

# Damage kinds; each takes the file's path.
damage_delete() { rm -f "$1"; }
damage_truncate() { truncate -s $(($(stat -c %s "$1") / 2)) "$1"; }
damage_flip() {
  local size offset byte
  size=$(stat -c %s "$1")
  offset=$((size / 2))
  byte=$(od -An -tu1 -j "$offset" -N1 "$1" | tr -d ' ')
  printf "$(printf '\\%03o' $((byte ^ 0x55)))" \
    | dd of="$1" bs=1 seek="$offset" conv=notrunc status=none
}

cases=0
reported=0
harmless=0
failures=()
while IFS= read -r rel; do
  for kind in delete truncate flip; do
    size=$(stat -c %s "$pristine/$rel")
    [[ $kind != delete && $size -eq 0 ]] && continue
    cases=$((cases + 1))
    d=$work/case
    rm -rf "$d"
    cp -a "$pristine" "$d"
    "damage_$kind" "$d/$rel"
    name=$(basename "$rel")
    # A file of a generation table may be named by its generation's directory instead.
    gen=$(sed -n 's|.*/gen/\([^/]*\)/.*|\1|p' <<< "$rel")
    # Run what a user would: verify, read, flush, read again. Collect every failure text.
    : > "$work/errors"
    ok=1
    for step in verify list flush list; do
      set +e
      case $step in
        verify) verify_store "$d" > "$work/out" 2> "$work/err" ;;
        list) all_rows "$d" > "$work/out" 2> "$work/err" ;;
        flush) "$strata" rollout flush "$d" > "$work/out" 2> "$work/err" ;;
      esac
      status=$?
      set -e
      if [[ $status -ne 0 ]]; then
        ok=0
        cat "$work/out" "$work/err" >> "$work/errors"
      fi
    done
    if [[ $ok -eq 1 ]] && cmp -s "$work/out" "$work/expected"; then
      harmless=$((harmless + 1))
    elif grep -qF "$name" "$work/errors" || { [[ -n $gen ]] && grep -qF "$gen" "$work/errors"; }; then
      reported=$((reported + 1))
    else
      failures+=("$kind $rel: $(if [[ $ok -eq 1 ]]; then
        echo "every command succeeded but $(wc -l < "$work/out") of $store_rows rows read back"
      else
        echo "failed without naming the file: $(head -c 300 "$work/errors" | tr '\n' ' ')"
      fi)")
    fi
  done
done < <(cd "$pristine" && find . -type f -printf '%P\n' | sort)

echo "damage probe: $cases cases, $reported reported naming the file, $harmless harmless"
if [[ ${#failures[@]} -gt 0 ]]; then
  printf '  %s\n' "${failures[@]}" >&2
  fail "${#failures[@]} damaged files went unreported"
fi
