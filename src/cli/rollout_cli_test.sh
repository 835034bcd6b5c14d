#!/usr/bin/env bash
# End-to-end checks of `strata rollout`: every command on examples/rollout-records.jsonl, the
# visibility rule (add -> flush -> merge), the defaults for missing columns, and that bad input
# writes nothing.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"
rows_of() { "$strata" rollout list "$@" --format jsonl --limit 1000 | wc -l; }

input=$examples/rollout-records.jsonl
total=$(grep -c . "$input")
s=$work/store

# Bad input writes nothing and creates no store: a missing id, an empty rollout_id, a value
# of the wrong type, an unknown key; the error names the row and the column.
printf '{"rollout_id":"x"}\n' > "$work/noid.jsonl"
expect_exit 1 "$strata" rollout add "$s" "$input" "$work/noid.jsonl"
grep -q "noid.jsonl: row 1, column 'id'" "$work/err" || fail "missing id: $(cat "$work/err")"
printf '{"id":"a","rollout_id":"x"}\n{"id":"b","rollout_id":""}\n' > "$work/empty.jsonl"
expect_exit 1 "$strata" rollout add "$s" "$work/empty.jsonl"
grep -q "record 2 (id 'b'): 'rollout_id' must not be empty" "$work/err" \
  || fail "empty rollout_id: $(cat "$work/err")"
printf '{"id":"a","rollout_id":"x","reward":"abc"}\n' > "$work/badtype.jsonl"
expect_exit 1 "$strata" rollout add "$s" "$work/badtype.jsonl"
grep -q "row 1, column 'reward': expected float32" "$work/err" || fail "bad type: $(cat "$work/err")"
printf '{"id":"a","rollout_id":"x","nope":1}\n' > "$work/unknown.jsonl"
expect_exit 1 "$strata" rollout add "$s" "$work/unknown.jsonl"
grep -q "nope" "$work/err" || fail "unknown key: $(cat "$work/err")"
expect_exit 1 "$strata" rollout add "$s" "$work/missing.jsonl"
[[ ! -e $s ]] || fail "bad input created $s"
mkdir "$work/junk" && touch "$work/junk/file"
expect_exit 1 "$strata" rollout add "$work/junk" "$input"
grep -q "not empty" "$work/err" || fail "add into a non-empty directory: $(cat "$work/err")"

# Visibility: add is durable but not visible until a flush ...
out=$("$strata" rollout add "$s" "$input")
[[ $out == "added $total rows to shard 'default' (durable; visible after \`strata rollout flush\`"* ]] \
  || fail "add: $out"
[[ $(rows_of "$s") -eq 0 ]] || fail "rows visible before the flush"
"$strata" rollout stats "$s" --format jsonl | grep -q '"rows":0,' || fail "stats before the flush"
out=$("$strata" rollout flush "$s")
[[ $out == "flushed shard 'default': $total rows now visible in 1 new generations; 1 generations pending" ]] \
  || fail "flush: $out"
[[ $(rows_of "$s") -eq $total ]] || fail "rows after the flush"
[[ $(rows_of "$s" --source wal) -eq $total ]] || fail "--source wal after the flush"
[[ $(rows_of "$s" --source fragments) -eq 0 ]] || fail "--source fragments before the merge"
out=$("$strata" rollout flush "$s")
[[ $out == "nothing to flush in shard 'default'; 1 generations pending" ]] || fail "second flush: $out"
# ... and merged rows are in the base table (--source fragments).
out=$("$strata" rollout merge "$s")
[[ $out == "merged 1 generations ($total rows) of shard 'default' -> version "* ]] \
  || fail "merge: $out"
[[ $(rows_of "$s" --source fragments) -eq $total ]] || fail "--source fragments after the merge"
[[ $(rows_of "$s" --source wal) -eq 0 ]] || fail "--source wal after the merge"
[[ $(rows_of "$s") -eq $total ]] || fail "rows after the merge"
"$strata" rollout merge "$s" | grep -q "^nothing to merge in shard 'default'; version" \
  || fail "second merge"

# list: id order, filters, pages, projection, both formats.
"$strata" rollout list "$s" --columns id --format jsonl > "$work/ids"
sort -c "$work/ids" || fail "list is not in id order"
[[ $(head -1 "$work/ids") == '{"id":"r-001-0"}' ]] || fail "first id: $(head -1 "$work/ids")"
n=$(rows_of "$s" --filter '{"rollout_id": "r-001"}')
[[ $n -eq $(grep -c '"rollout_id": "r-001"' "$input") ]] || fail "--filter rollout_id gave $n"
out=$("$strata" rollout list "$s" --filter '{"include_in_training": false, "policy_version": "v4"}' \
  --columns id,exclude_reason --format jsonl)
[[ $out == '{"id":"r-002-0","exclude_reason":"no tests run"}' ]] || fail "--filter bool: $out"
expect_exit 0 "$strata" rollout list "$s" --columns id --limit 2 --format jsonl
[[ $(wc -l < "$work/out") -eq 2 ]] || fail "--limit 2: $(cat "$work/out")"
grep -q "more rows follow: --offset 2" "$work/err" || fail "has_more on stderr: $(cat "$work/err")"
expect_exit 0 "$strata" rollout list "$s" --columns id --offset $((total - 1)) --format jsonl
[[ $(cat "$work/out") == '{"id":"r-002-1"}' ]] || fail "--offset: $(cat "$work/out")"
[[ ! -s $work/err ]] || fail "last page reported more rows: $(cat "$work/err")"
"$strata" rollout list "$s" --columns id,role --limit 3 --format table > "$work/out"
grep -q "(3 rows)" "$work/out" || fail "table footer: $(cat "$work/out")"
[[ $(tail -1 "$work/out") == "(more rows follow: --offset 3)" ]] || fail "table has_more line"
"$strata" rollout list "$s" --format jsonl --limit 1 2> /dev/null | grep -q '"metadata":' \
  || fail "all columns"
"$strata" rollout list "$s" --format jsonl | grep -q binary_payload && fail "list printed blobs"
# Bad filters, sources and columns are errors naming the problem.
expect_exit 1 "$strata" rollout list "$s" --filter '{"reward": 1}'
grep -q "unsupported rollout filter 'reward'" "$work/err" || fail "bad filter key: $(cat "$work/err")"
expect_exit 1 "$strata" rollout list "$s" --filter '{"role": 1}'
grep -q "'role' must be a string" "$work/err" || fail "bad filter value: $(cat "$work/err")"
expect_exit 1 "$strata" rollout list "$s" --filter 'role = assistant'
grep -q "not valid JSON" "$work/err" || fail "bad filter JSON: $(cat "$work/err")"
expect_exit 2 "$strata" rollout list "$s" --source nope
grep -q "nope" "$work/err" || fail "unknown source: $(cat "$work/err")"
expect_exit 1 "$strata" rollout list "$s" --columns id,nope
grep -q "no column 'nope'" "$work/err" || fail "unknown column: $(cat "$work/err")"
expect_exit 1 "$strata" rollout list "$s" --columns binary_payload
grep -q "strata rollout blob" "$work/err" || fail "blob column: $(cat "$work/err")"

# get: rows in the order given; a missing id prints the others, then exit 1.
out=$("$strata" rollout get "$s" r-002-0 r-001-2 --columns id,reward | tr '\n' ' ')
[[ $out == '{"id":"r-002-0","reward":0} {"id":"r-001-2","reward":1} ' ]] || fail "get: $out"
expect_exit 1 "$strata" rollout get "$s" r-001-0 nope --columns id
[[ $(cat "$work/out") == '{"id":"r-001-0"}' ]] || fail "get with a missing id: $(cat "$work/out")"
grep -q "no visible row with id 'nope'" "$work/err" || fail "missing id error: $(cat "$work/err")"
# The defaults for required columns the input left out.
out=$("$strata" rollout get "$s" r-002-1 --columns problem_id,role,content_type)
[[ $out == '{"problem_id":"r-002","role":"assistant","content_type":"text/plain"}' ]] \
  || fail "defaults: $out"
year=$("$strata" rollout get "$s" r-002-1 --columns created_at | grep -o '"20[0-9][0-9]-' | tr -d '"-')
[[ $year -eq $(date -u +%Y) ]] || fail "created_at default is not now: $year"

# trajectory: sequence_order order; an unknown rollout is exit 1.
out=$("$strata" rollout trajectory "$s" r-001 --columns sequence_order,role | tr '\n' ' ')
[[ $out == '{"sequence_order":0,"role":"assistant"} {"sequence_order":1,"role":"tool"} {"sequence_order":2,"role":"assistant"} {"sequence_order":3,"role":"artifact"} ' ]] \
  || fail "trajectory: $out"
expect_exit 1 "$strata" rollout trajectory "$s" nope
grep -q "no visible rows with rollout_id 'nope'" "$work/err" || fail "trajectory error"

# blob: the payload bytes, to stdout or a file.
grep r-001-patch "$input" | grep -o '"binary_payload": "[^"]*"' | cut -d'"' -f4 | base64 -d \
  > "$work/want.bin"
"$strata" rollout blob "$s" r-001-patch > "$work/got.bin"
cmp -s "$work/want.bin" "$work/got.bin" || fail "blob to stdout differs"
"$strata" rollout blob "$s" r-001-patch --output "$work/file.bin" 2> "$work/err"
cmp -s "$work/want.bin" "$work/file.bin" || fail "blob --output differs"
grep -q "wrote $(stat -c %s "$work/want.bin") bytes" "$work/err" || fail "blob --output message"
expect_exit 1 "$strata" rollout blob "$s" r-001-0
grep -q "row 'r-001-0' has no binary_payload" "$work/err" || fail "no payload: $(cat "$work/err")"
expect_exit 1 "$strata" rollout blob "$s" nope
grep -q "no visible row with id 'nope'" "$work/err" || fail "blob of a missing row"

# Shards, stdin, --flush and --nosync: an add with --flush is visible at once; rows of another
# shard wait for that shard's flush; the next add of a shard publishes its earlier rows.
out=$(printf '{"id":"z-1","rollout_id":"z"}\n' | "$strata" rollout add "$s" --flush --nosync)
[[ $out == "added 1 rows to shard 'default', flushed: visible now" ]] || fail "add --flush: $out"
"$strata" rollout get "$s" z-1 --columns id | grep -q z-1 || fail "--flush row not visible"
printf '{"id":"w-1","rollout_id":"w"}\n' | "$strata" rollout add "$s" - --shard worker-2 > /dev/null
expect_exit 1 "$strata" rollout get "$s" w-1
printf '{"id":"w-2","rollout_id":"w"}\n' | "$strata" rollout add "$s" --shard worker-2 > /dev/null
"$strata" rollout get "$s" w-1 --columns id | grep -q w-1 || fail "the next add did not publish w-1"
expect_exit 1 "$strata" rollout get "$s" w-2
out=$("$strata" rollout flush "$s" --shard worker-2)
[[ $out == "flushed shard 'worker-2': 1 rows now visible in 1 new generations; "* ]] \
  || fail "flush --shard: $out"
out=$("$strata" rollout get "$s" z-1 --columns problem_id,sequence_order,role,content_type)
[[ $out == '{"problem_id":"z","sequence_order":0,"role":"assistant","content_type":"text/plain"}' ]] \
  || fail "defaults of a minimal row: $out"
[[ $(rows_of "$s") -eq $((total + 3)) ]] || fail "rows after the shard flush"

# merge: one pass per shard by default, --all until nothing is pending.
for i in 1 2 3; do
  printf '{"id":"m-%s","rollout_id":"m"}\n' "$i" | "$strata" rollout add "$s" --flush > /dev/null
done
out=$("$strata" rollout merge "$s" --shard worker-2 --all)
[[ $out == "merged 2 generations (2 rows) of shard 'worker-2' -> version "* ]] \
  || fail "merge --shard: $out"
out=$("$strata" rollout merge "$s" --all)
[[ $out == "merged 4 generations (4 rows) of shard 'default' -> version "* ]] \
  || fail "merge --all: $out"
[[ $(rows_of "$s" --source wal) -eq 0 ]] || fail "rows left in the WAL after merge --all"
[[ $(rows_of "$s" --source fragments) -eq $((total + 6)) ]] || fail "merged rows"

# compact: the merges' fragments become one; the rows stay.
"$strata" rollout list "$s" --format jsonl --limit 1000 > "$work/before"
out=$("$strata" rollout compact "$s")
[[ $out == "compacted "*" fragments into 1 "*" -> version "* ]] || fail "compact: $out"
"$strata" rollout list "$s" --format jsonl --limit 1000 > "$work/after"
cmp -s "$work/before" "$work/after" || fail "compaction changed the rows"
"$strata" rollout compact "$s" | grep -q "^nothing to compact; version" || fail "second compact"

# stats: one JSON line or a table.
out=$("$strata" rollout stats "$s" --format jsonl)
[[ $out == '{"rows":'$((total + 6))',"fragments":1,"version":'*',"last_updated":"'*'Z","pending_generations":0,"unflushed_rows":0}' ]] \
  || fail "stats: $out"
"$strata" rollout stats "$s" --format table | grep -q "pending_generations" || fail "stats table"

# Output that cannot be written fails the command; an add says its rows went in regardless.
for args in "stats $s --format jsonl" "list $s --limit 3" "get $s r-001-0" \
  "trajectory $s r-001" "blob $s r-001-patch" "flush $s" "merge $s" "compact $s"; do
  # shellcheck disable=SC2086
  expect_output_error "$strata" rollout $args
done
before=$(rows_of "$s")
printf '{"id":"f-1","rollout_id":"f"}\n{"id":"f-2","rollout_id":"f"}\n' > "$work/f.jsonl"
set +e
"$strata" rollout add "$s" "$work/f.jsonl" > /dev/full 2> "$work/err"
status=$?
set -e
[[ $status -eq 1 ]] || fail "rollout add > /dev/full exited $status"
grep -q "writing the output failed: No space left on device; the 2 rows were durably added to shard 'default'" \
  "$work/err" || fail "rollout add > /dev/full: $(cat "$work/err")"
"$strata" rollout flush "$s" > /dev/null
[[ $(rows_of "$s") -eq $((before + 2)) ]] || fail "the rows of an add whose message was lost"

# A key given twice in --filter, a column given twice and a directory as input are refused.
expect_exit 1 "$strata" rollout list "$s" --filter '{"rollout_id": "r-001", "rollout_id": "r-002"}'
grep -q "key 'rollout_id' is given twice" "$work/err" || fail "duplicate filter key: $(cat "$work/err")"
expect_exit 1 "$strata" rollout list "$s" --columns id,role,id
grep -q "column 'id' is given twice" "$work/err" || fail "duplicate column: $(cat "$work/err")"
expect_exit 1 "$strata" rollout get "$s" r-001-0 --columns id,id
expect_exit 1 "$strata" rollout trajectory "$s" r-001 --columns role,role
mkdir "$work/in.jsonl"
expect_exit 1 "$strata" rollout add "$s" "$work/in.jsonl"
grep -q "'$work/in.jsonl' is a directory" "$work/err" || fail "input dir: $(cat "$work/err")"
expect_exit 2 "$strata" rollout list "$s" --offset 99999999999999999999
grep -q "out of range (at most 9223372036854775807)" "$work/err" || fail "huge --offset"

# Runtime errors exit 1 without creating anything; usage errors exit 2.
expect_exit 1 "$strata" rollout list "$work/none"
grep -q "no rollout store at" "$work/err" || fail "missing store: $(cat "$work/err")"
expect_exit 1 "$strata" rollout flush "$work/none"
expect_exit 1 "$strata" rollout stats "$work/junk"
[[ ! -e $work/none ]] || fail "a read created a directory"
# A table of another schema is not taken for a rollout store, nor changed.
"$strata" table create "$work/tbl" --schema "$examples/rollouts.schema.json" --primary-key id \
  > /dev/null
expect_exit 1 "$strata" rollout add "$work/tbl" "$input"
grep -q "not a rollout store" "$work/err" || fail "foreign table: $(cat "$work/err")"
[[ $("$strata" table versions "$work/tbl" | wc -l) -eq 1 ]] || fail "add changed a foreign table"
# A merge of one shard does not fail because another shard's manifest is damaged: it exits
# 0, and the count of the other shards' pending generations is reported as unknown.
m=$work/two-shards
"$strata" rollout add "$m" "$input" --shard a --flush > /dev/null
before_b=$(ls "$m/_lsm")
head -2 "$input" | sed 's/"id": *"/"id":"b-/' | "$strata" rollout add "$m" --shard b --flush \
  > /dev/null
b_dir=$(comm -13 <(echo "$before_b") <(ls "$m/_lsm"))
[[ -n $b_dir ]] || fail "no directory of shard b"
for manifest in "$m/_lsm/$b_dir/manifest/"*.shard; do
  printf 'XXXX' | dd of="$manifest" bs=1 seek=20 conv=notrunc 2> /dev/null
done
expect_exit 0 "$strata" rollout merge "$m" --shard a
grep -q "^merged 1 generations ($total rows) of shard 'a' -> version 2" "$work/out" \
  || fail "merge beside a damaged shard: $(cat "$work/out")"
grep -q "could not count the pending generations of the other shards: Corruption" "$work/err" \
  || fail "damage of the other shard not reported: $(cat "$work/err")"
# Nor does a flush: the acknowledged rows of shard a are published, the counts it could not
# make are a warning.
head -3 "$input" | sed 's/"id": *"/"id":"a2-/' | "$strata" rollout add "$m" --shard a > /dev/null
expect_exit 0 "$strata" rollout flush "$m" --shard a
grep -q "^flushed shard 'a': its added rows are visible" "$work/out" \
  || fail "flush beside a damaged shard: $(cat "$work/out") $(cat "$work/err")"
grep -q "could not count the store's rows: Corruption" "$work/err" \
  || fail "flush: damage of the other shard not reported: $(cat "$work/err")"

# A merge that commits and then fails to drain the shard manifest exits 3 and says what it
# committed; the rows are read once, and the next merge drains. The drain is made to fail by
# a directory where its manifest version goes: a flush (as the merge's own writer opening)
# writes some versions, the merge writes as many before its base commit, then the drain.
d=$work/drain
"$strata" rollout add "$d" "$input" --flush > /dev/null
d_shard=$(ls "$d/_lsm" | grep -v '^shards$')
versions() { ls "$d/_lsm/$d_shard/manifest/" | grep -c '\.shard$'; }
v0=$(versions)
"$strata" rollout flush "$d" > /dev/null
v1=$(versions)
blocker=$d/_lsm/$d_shard/manifest/$(printf '%020d' $((v1 + (v1 - v0) + 1))).shard
mkdir "$blocker"
expect_exit 3 "$strata" rollout merge "$d"
grep -q "merged $total rows of shard 'default' -> version 2 committed; draining" "$work/err" \
  || fail "merge with a failed drain: $(cat "$work/err")"
[[ $(rows_of "$d" --source fragments) -eq $total ]] || fail "the committed merge is not visible"
[[ $(rows_of "$d") -eq $total ]] || fail "rows of an undrained merge read twice or lost"
rmdir "$blocker"
out=$("$strata" rollout merge "$d")
[[ $out == "merged 1 generations (0 rows) of shard 'default' -> version 2" ]] \
  || fail "the next merge did not drain: $out"
# A merge whose report cannot be written is committed all the same: exit 3, not 1.
o=$work/full-merge
"$strata" rollout add "$o" "$input" --flush > /dev/null
set +e
"$strata" rollout merge "$o" > /dev/full 2> "$work/err"
status=$?
set -e
[[ $status -eq 3 ]] || fail "merge > /dev/full exited $status: $(cat "$work/err")"
grep -q "version 2 committed" "$work/err" || fail "merge > /dev/full: $(cat "$work/err")"
[[ $(rows_of "$o" --source fragments) -eq $total ]] || fail "merge > /dev/full merged nothing"

expect_exit 2 "$strata" rollout
expect_exit 2 "$strata" rollout list
expect_exit 2 "$strata" rollout get "$s"
expect_exit 2 "$strata" rollout list "$s" --format xml
expect_exit 2 "$strata" rollout list "$s" --limit -1
# Damage from outside is reported as Corruption naming the object, never counted, flushed or
# verified around. Each probe runs on a fresh copy of a store that has a pending generation
# and rows in the WAL only.
d=$work/damage
"$strata" rollout add "$d" "$input" --flush > /dev/null
printf '{"id":"x-1","rollout_id":"x"}\n{"id":"x-2","rollout_id":"x"}\n' \
  | "$strata" rollout add "$d" > /dev/null
expect_exit 0 "$strata" rollout verify "$d"
[[ $(tail -1 "$work/out") == "checked "*" manifests and "*" files ("*") at version 1: ok" ]] \
  || fail "verify of an intact store: $(cat "$work/out")"
c=$work/copy
fresh() { rm -rf "$c"; cp -r "$d" "$c"; }
uuid=$(ls "$d/_lsm/shards")
newest_manifest() { ls "$c/_lsm/$uuid/manifest/"*.shard | tail -1; }
flip() { printf 'X' | dd of="$1" bs=1 seek="$2" conv=notrunc 2> /dev/null; }
# The newest shard manifest damaged: stats fails like list, naming it.
fresh
m=$(newest_manifest)
flip "$m" 20
expect_exit 1 "$strata" rollout list "$c"
list_err=$(cat "$work/err")
expect_exit 1 "$strata" rollout stats "$c" --format jsonl
grep -q "Corruption: .*manifest/$(basename "$m"): checksum mismatch" "$work/err" \
  || fail "stats over a damaged shard manifest: $(cat "$work/out") $(cat "$work/err")"
[[ $(cat "$work/err") == "$list_err" ]] || fail "stats and list differ: $(cat "$work/err") / $list_err"
expect_exit 1 "$strata" rollout verify "$c"
grep -q "^shard $uuid: _lsm/$uuid/manifest/$(basename "$m"): checksum mismatch" "$work/out" \
  || fail "verify of a damaged shard manifest: $(cat "$work/out")"
# A WAL segment deleted or cut short: flush and verify name it instead of losing its rows.
for damage in delete truncate; do
  fresh
  seg=$(ls "$c/_lsm/$uuid/wal/"*.wal | tail -1)
  if [[ $damage == delete ]]; then rm "$seg"; else truncate -s 100 "$seg"; fi
  expect_exit 1 "$strata" rollout flush "$c"
  grep -q "Corruption: .*WAL segment '_lsm/$uuid/wal/$(basename "$seg")'" "$work/err" \
    || fail "flush after a WAL segment $damage: $(cat "$work/out") $(cat "$work/err")"
  expect_exit 1 "$strata" rollout verify "$c"
  grep -q "^shard $uuid: _lsm/$uuid/wal/$(basename "$seg"): " "$work/out" \
    || fail "verify after a WAL segment $damage: $(cat "$work/out")"
done
# A flipped byte in a generation's data file or bloom filter.
for object in bloom.bin 'data/*.arrow'; do
  fresh
  file=$(ls "$c/_lsm/$uuid/gen/"*/$object | head -1)
  flip "$file" 40
  expect_exit 1 "$strata" rollout verify "$c"
  grep -q "$(basename "$file"): .*(Corruption)$" "$work/out" \
    || fail "verify after damage to $object: $(cat "$work/out")"
  grep -q "1 problems$" "$work/out" || fail "verify counts: $(cat "$work/out")"
done
# `table verify` on a store points to `rollout verify`.
expect_exit 0 "$strata" table verify "$d"
grep -q "strata rollout verify" "$work/err" || fail "table verify on a store: $(cat "$work/err")"
expect_exit 1 "$strata" rollout verify "$work/none"
# ... and `rollout verify` on a plain table says what it is instead of checking it as a store.
expect_exit 1 "$strata" rollout verify "$work/tbl"
grep -q "holds a plain table" "$work/err" || fail "rollout verify of a table: $(cat "$work/err")"

echo "cli rollout: all checks passed"
