#!/usr/bin/env bash
# Links placed in every directory of a table and of a rollout store: every command ignores
# them (listings skip links) or refuses them by name, and nothing outside the store is ever
# removed, changed or read through one (issue 13: `table cleanup --delete-unreferenced`
# followed a directory link in data/ and emptied its target).
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/lib.sh"

outside=$work/outside
mkdir -p "$outside/sub" "$outside/_versions" "$outside/data"
echo precious > "$outside/precious"
echo deep > "$outside/sub/deep.arrow"
# Names a store would use, so a listing that followed the link would pick them up.
echo "not a manifest" > "$outside/_versions/00000000000000000001.manifest"
echo "not a data file" > "$outside/data/0badc0de.arrow"
before=$(fingerprint "$outside")

# Puts a directory link and a file link into every directory below $1.
plant_links() {
  local dir
  while IFS= read -r dir; do
    ln -s "$outside" "$dir/evil-dir"
    ln -s "$outside/precious" "$dir/evil-file.arrow"
  done < <(find "$1" -type d)
}
check_outside() {
  [[ $(fingerprint "$outside") == "$before" ]] || fail "$1 changed files outside the store"
}

# A table: every command succeeds as if the links were not there.
t=$work/table
make_table "$t"
rows=$("$strata" table count "$t")
plant_links "$t"
# Each entry: a command, then its arguments after the directory.
for args in "count" "scan --limit 3" "versions" "inspect" "verify --all-versions" "checkout 2" \
  "repair" "compact" "cleanup --older-than 0s --delete-unreferenced"; do
  read -r cmd rest <<< "$args"
  # shellcheck disable=SC2086
  expect_exit 0 "$strata" table "$cmd" "$t" $rest
  check_outside "table $args"
done
[[ $("$strata" table count "$t") -eq $rows ]] || fail "table rows changed"

# A rollout store (base table, shard registry, manifests, WAL, generations).
s=$work/store
make_store "$s"
plant_links "$s"
for args in "stats" "list --limit 5" "get m0-r-001-0" "trajectory r-001" "flush" "merge" \
  "compact" "stats"; do
  read -r cmd rest <<< "$args"
  # shellcheck disable=SC2086
  expect_exit 0 "$strata" rollout "$cmd" "$s" $rest
  check_outside "rollout $args"
done
[[ $("$strata" rollout list "$s" --format jsonl --limit 1000 | wc -l) -eq $store_rows ]] \
  || fail "store rows changed"
expect_exit 0 "$strata" table cleanup "$s" --older-than 0s
check_outside "table cleanup on a store"

# A user's own input file may be a link: links are refused inside stores only.
ln -s "$examples/rollouts.jsonl" "$work/linked-input.jsonl"
"$strata" arrow from-json --schema "$examples/rollouts.schema.json" "$work/linked-input.jsonl" \
  "$work/rows.arrow" 2> /dev/null
ln -s "$work/rows.arrow" "$work/linked.arrow"
expect_exit 0 "$strata" arrow inspect "$work/linked.arrow"
t3=$work/table3
"$strata" table create "$t3" --schema "$examples/rollouts.schema.json" --primary-key id > /dev/null
expect_exit 0 "$strata" table append "$t3" "$work/linked.arrow"

# A directory of the store replaced by a link to a copy elsewhere (a user moving data/ to
# another disk): reads refuse it by name, and cleanup deletes nothing through it.
t2=$work/table2
make_table "$t2"
mv "$t2/data" "$work/moved-data"
ln -s "$work/moved-data" "$t2/data"
moved=$(fingerprint "$work/moved-data")
expect_failure "$strata" table scan "$t2"
grep -q "is a symbolic link" "$work/err" || fail "scan through data/ link: $(cat "$work/err")"
"$strata" table cleanup "$t2" --older-than 0s --delete-unreferenced > /dev/null 2>&1 || true
[[ $(fingerprint "$work/moved-data") == "$moved" ]] || fail "cleanup deleted through data/ link"
echo "hostile symlinks: ok"
