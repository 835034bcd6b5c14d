#!/usr/bin/env bash
# Commands of every group (table, rollout, arrow) on directories and files of every other
# kind: each one that cannot apply refuses with a message saying what the path is, and
# changes nothing; afterwards the table and the rollout store still work (issue 13:
# `table add-columns` on a rollout store left it unable to add or flush).
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/lib.sh"

t=$work/table
make_table "$t"
s=$work/store
make_store "$s"
e=$work/empty
mkdir "$e"
f=$work/rows.jsonl
cp "$examples/rollout-records.jsonl" "$f"
a=$work/rows.arrow
"$strata" arrow from-json --schema "$examples/rollouts.schema.json" "$examples/rollouts.jsonl" \
  "$a" 2> /dev/null

# Requires `strata ARGS...` to fail, name what is wrong (regex $1) and leave $2 unchanged.
refuses() {
  local pattern=$1 path=$2
  shift 2
  local before
  before=$(fingerprint "$path")
  expect_failure "$strata" "$@"
  grep -Eqi "$pattern" "$work/err" || fail "$*: message does not match '$pattern': $(cat "$work/err")"
  [[ $(fingerprint "$path") == "$before" ]] || fail "$* changed $path"
}

# Table commands that change a base table refuse a typed store and name the right command.
refuses "rollout store.*strata rollout" "$s" table add-columns "$s" --column "x: int64"
refuses "rollout store" "$s" table delete "$s" --key m0-r-001-0
refuses "rollout store" "$s" table append "$s" "$examples/rollouts.jsonl"
refuses "rollout store" "$s" table compact "$s" --no-materialize-deletions
refuses "rollout store.*running merge" "$s" table cleanup "$s" --older-than 0s --delete-unreferenced
# A new table is never made where something is.
refuses "not empty|already exists" "$s" table create "$s" --schema "$examples/rollouts.schema.json"

# Rollout commands on a plain table, a file and an empty directory.
for cmd in "add $f" "flush" "merge" "compact" "stats" "list" "get r-001-0"; do
  read -r name rest <<< "$cmd"
  # shellcheck disable=SC2086
  refuses "not a rollout store" "$t" rollout "$name" "$t" $rest
done
for cmd in "flush" "merge" "compact" "stats" "list"; do
  refuses "not a directory|no rollout store" "$f" rollout "$cmd" "$f"
  refuses "no rollout store" "$e" rollout "$cmd" "$e"
done
refuses "not a directory|not empty|exists" "$f" rollout add "$f" "$f"

# Table commands on a file, an empty directory and an Arrow file.
for cmd in count scan versions verify inspect repair compact cleanup; do
  refuses "not a directory|no table" "$f" table "$cmd" "$f"
  refuses "no table" "$e" table "$cmd" "$e"
  refuses "not a directory|no table" "$a" table "$cmd" "$a"
done

# Arrow commands on directories and on a JSON lines file.
for target in "$t" "$s" "$e"; do
  refuses "is a directory" "$target" arrow inspect "$target"
  refuses "is a directory" "$target" arrow cat "$target"
done
refuses "not .*arrow|footer|magic|ipc" "$f" arrow inspect "$f"

# Both still work.
expect_exit 0 "$strata" table verify "$t" --all-versions
rollout_rows 1 after > "$work/after.jsonl"
expect_exit 0 "$strata" rollout add "$s" "$work/after.jsonl" --flush
expect_exit 0 "$strata" rollout merge "$s"
rows=$("$strata" rollout list "$s" --format jsonl --limit 1000 | wc -l)
[[ $rows -eq $((store_rows + $(grep -c . "$examples/rollout-records.jsonl"))) ]] \
  || fail "store holds $rows rows after the probes"
echo "hostile cross-kind: ok"
