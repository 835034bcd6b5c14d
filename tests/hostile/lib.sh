# Shared by the hostile probes: sourced with $strata and $examples set. The checks of
# tests/support/cli_lib.sh ($work, fail, expect_exit, ...), fixtures of every directory
# kind, and fingerprints of directory trees.
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_lib.sh"
# Every path, type, size and content hash below directory $1 (links shown with their
# targets), or the type, size and hash of file $1; "missing" when nothing is there.
fingerprint() {
  if [[ -d $1 ]]; then
    (cd "$1" && find . -printf '%p %y %s %l\n' | sort && find . -type f -exec md5sum {} + | sort)
  elif [[ -e $1 ]]; then
    stat -c '%F %s' "$1" && md5sum < "$1"
  else
    echo missing
  fi
}

# $1 copies of the example rollout records with ids prefixed "$2-".
rollout_rows() {
  local copies=$1 tag=$2
  for ((i = 0; i < copies; i++)); do
    sed "s/\"id\": \"/\"id\": \"$tag$i-/" "$examples/rollout-records.jsonl"
  done
}

# A table with three versions: an append, a second append and a delete (a deletion file).
make_table() {
  local t=$1
  "$strata" table create "$t" --schema "$examples/rollouts.schema.json" --primary-key id >/dev/null
  "$strata" table append "$t" "$examples/rollouts.jsonl" >/dev/null
  head -50 "$examples/rollouts.jsonl" | sed 's/"id": "r/"id": "x/' > "$work/more.jsonl"
  "$strata" table append "$t" "$work/more.jsonl" >/dev/null
  "$strata" table delete "$t" --filter "role = 'user'" >/dev/null
}

# A rollout store with every kind of file: merged rows in the base table, a pending
# generation, and rows still only in the WAL.
make_store() {
  local s=$1
  rollout_rows 3 m > "$work/merged.jsonl"
  "$strata" rollout add "$s" "$work/merged.jsonl" --flush >/dev/null
  "$strata" rollout merge "$s" >/dev/null
  rollout_rows 2 p > "$work/pending.jsonl"
  "$strata" rollout add "$s" "$work/pending.jsonl" --flush >/dev/null
  rollout_rows 2 w > "$work/wal.jsonl"
  "$strata" rollout add "$s" "$work/wal.jsonl" >/dev/null
}
# Rows a fixture store holds once flushed (merged + pending + WAL).
store_rows=$((7 * $(grep -c . "$examples/rollout-records.jsonl")))
