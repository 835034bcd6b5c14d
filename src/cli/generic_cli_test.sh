#!/usr/bin/env bash
# End-to-end checks of `strata generic`: create from either spec form, the visibility rule
# (add -> flush -> merge), every read on examples/generic-rows.jsonl, Arrow input, bad specs and
# bad rows that write nothing, and stores of another kind refused both ways without change.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"
rows_of() { "$strata" generic list "$@" --limit 1000 | wc -l; }

spec=$examples/generic.spec.json
input=$examples/generic-rows.jsonl
total=$(grep -c . "$input")
s=$work/store

# Bad specs create nothing and name the column.
printf '{"columns": [["id", {"type": "string"}]]}' > "$work/nullable-id.json"
expect_exit 1 "$strata" generic create "$s" --schema "$work/nullable-id.json"
grep -q "column 'id' must not be nullable" "$work/err" || fail "nullable id: $(cat "$work/err")"
expect_exit 1 "$strata" generic create "$s" \
  --schema '{"columns": [["id", {"type": "string", "nullable": false}], ["_x", {"type": "int32"}]]}'
grep -q "column '_x' is reserved" "$work/err" || fail "reserved: $(cat "$work/err")"
expect_exit 1 "$strata" generic create "$s" \
  --schema '{"columns": [["id", {"type": "string", "nullable": false}], ["v", {"type": "vector", "dim": 0}]]}'
grep -q "column 'v': vector dim must be positive" "$work/err" || fail "dim: $(cat "$work/err")"
[[ ! -e $s ]] || fail "a bad spec created $s"
expect_exit 1 "$strata" generic list "$s"
grep -q "no generic store at '$s'" "$work/err" || fail "list of nothing: $(cat "$work/err")"
[[ ! -e $s ]] || fail "list created $s"

out=$("$strata" generic create "$s" --schema "$spec")
[[ $out == "created generic store $s with 9 columns (deferred seal: rows are visible after a flush)" ]] \
  || fail "create: $out"
expect_exit 1 "$strata" generic create "$s" --schema "$spec"
grep -q "already there" "$work/err" || fail "create twice: $(cat "$work/err")"

# Bad rows write nothing: each error names the row (from 0) and the column; one bad file
# among good ones writes none of them.
printf '{"id":"a"}\n{"id":"b","nope":1}\n' > "$work/unknown.jsonl"
expect_exit 1 "$strata" generic add "$s" "$input" "$work/unknown.jsonl"
grep -q "unknown.jsonl: row 1: column 'nope' is not declared in the store schema" "$work/err" \
  || fail "unknown key: $(cat "$work/err")"
printf '[{"id":"a","score":"high"}]' > "$work/badtype.json"
expect_exit 1 "$strata" generic add "$s" "$work/badtype.json"
grep -q "row 0: column 'score' expects a number, got string \"high\"" "$work/err" \
  || fail "bad type: $(cat "$work/err")"
printf '{"id":"a","embedding":[1,2]}\n' > "$work/short.jsonl"
expect_exit 1 "$strata" generic add "$s" "$work/short.jsonl"
grep -q "row 0: column 'embedding' expects a vector of 4 values, got 2" "$work/err" \
  || fail "vector length: $(cat "$work/err")"
printf '{"title":"no id"}\n' > "$work/noid.jsonl"
expect_exit 1 "$strata" generic add "$s" "$work/noid.jsonl"
grep -q "row 0: column 'id' is not nullable and was not supplied" "$work/err" \
  || fail "missing id: $(cat "$work/err")"
printf '{"id":"a","thumbnail":[1,300]}\n' > "$work/byte.jsonl"
expect_exit 1 "$strata" generic add "$s" "$work/byte.jsonl"
grep -q "row 0: column 'thumbnail\[1\]' expects bytes" "$work/err" || fail "byte: $(cat "$work/err")"
printf '{"id":"a"}\n{"id":\n' > "$work/malformed.jsonl"
expect_exit 1 "$strata" generic add "$s" "$work/malformed.jsonl"
grep -q "malformed.jsonl: line 2: malformed JSON" "$work/err" || fail "malformed: $(cat "$work/err")"
"$strata" generic flush "$s" > /dev/null
[[ $(rows_of "$s") -eq 0 ]] || fail "bad input wrote rows"

# Visibility: durable on add, visible after a flush, in the base after a merge.
out=$("$strata" generic add "$s" "$input")
[[ $out == "added $total rows to shard 'default' (durable; visible after \`strata generic flush\`"* ]] \
  || fail "add: $out"
[[ $(rows_of "$s") -eq 0 ]] || fail "rows visible before the flush"
out=$("$strata" generic flush "$s")
[[ $out == "flushed shard 'default': $total rows now visible in 1 new generations; 1 generations pending" ]] \
  || fail "flush: $out"
[[ $(rows_of "$s") -eq $total ]] || fail "rows after the flush"
[[ $(rows_of "$s" --source wal) -eq $total ]] || fail "--source wal after the flush"
[[ $(rows_of "$s" --source fragments) -eq 0 ]] || fail "--source fragments before the merge"
"$strata" generic get "$s" doc-1 --source fragments > /dev/null 2>&1 && fail "get from fragments before the merge"
out=$("$strata" generic merge "$s")
[[ $out == "merged 1 generations ($total rows) of shard 'default' -> version "* ]] || fail "merge: $out"
[[ $(rows_of "$s" --source fragments) -eq $total ]] || fail "--source fragments after the merge"
[[ $(rows_of "$s" --source wal) -eq 0 ]] || fail "--source wal after the merge"
"$strata" generic merge "$s" | grep -q "^nothing to merge in shard 'default'" || fail "second merge"

# Rows out: JSON Lines in id order, nulls left out, timestamps in microseconds, no blob column.
out=$("$strata" generic list "$s" --limit 1)
want='{"id":"doc-1","title":"Intro to LSM trees","score":0.92,"views":1200,"published":true,"created_at":1767605400000000,"embedding":[0.1,0.2,0.3,0.4],"tags":["storage","lsm"]}'
[[ $out == "$want" ]] || fail "list: $out"
"$strata" generic list "$s" --limit 1 2> "$work/err" > /dev/null
grep -q "more rows follow: --offset 1" "$work/err" || fail "more rows: $(cat "$work/err")"
out=$("$strata" generic list "$s" --filter "views > 100 AND published" --columns id,views)
[[ $out == $'{"id":"doc-1","views":1200}\n{"id":"doc-2","views":310}' ]] || fail "filter: $out"
# The largest --limit is a page of every row (no overflow asking for one more).
out=$("$strata" generic list "$s" --columns id --limit 9223372036854775807 2> "$work/err")
[[ $out == $'{"id":"doc-1"}\n{"id":"doc-2"}\n{"id":"doc-3"}\n{"id":"doc-4"}' ]] \
  || fail "largest limit: $out $(cat "$work/err")"
[[ ! -s $work/err ]] || fail "largest limit wrote to stderr: $(cat "$work/err")"
out=$("$strata" generic list "$s" --columns id --limit 0 2> "$work/err")
[[ -z $out ]] || fail "limit 0 printed rows: $out"
grep -q "more rows follow: --offset 0" "$work/err" || fail "limit 0: $(cat "$work/err")"
out=$("$strata" generic list "$s" --columns id --offset 2 --limit 1)
[[ $out == '{"id":"doc-3"}' ]] || fail "page: $out"
out=$("$strata" generic list "$s" --columns id,tags --offset 3)
[[ $out == '{"id":"doc-4","tags":["storage",null]}' ]] || fail "null list element: $out"
"$strata" generic list "$s" --format table --columns id,score | grep -q "^ doc-3 |  *0.4$" \
  || fail "table format"
# get: request order, blob columns only when named (base64), a missing id exits 1.
out=$("$strata" generic get "$s" doc-2 doc-1 --columns thumbnail)
[[ $out == $'{"id":"doc-2","thumbnail":"iVBORw=="}\n{"id":"doc-1","thumbnail":"AQID"}' ]] || fail "get blob: $out"
"$strata" generic get "$s" doc-1 | grep -q thumbnail && fail "get printed the blob column"
expect_exit 1 "$strata" generic get "$s" doc-3 nope
grep -q "no visible row with id 'nope'" "$work/err" || fail "missing id: $(cat "$work/err")"
grep -q '"id":"doc-3"' "$work/out" || fail "rows found before the missing id"
expect_exit 1 "$strata" generic list "$s" --columns nope
grep -q "nope" "$work/err" || fail "unknown column: $(cat "$work/err")"

# Newest wins: re-adding an id replaces the row.
printf '{"id":"doc-4","title":"Compaction, revised"}\n' | "$strata" generic add "$s" - --flush > /dev/null
out=$("$strata" generic get "$s" doc-4 --columns title)
[[ $out == '{"id":"doc-4","title":"Compaction, revised"}' ]] || fail "newest wins: $out"
[[ $(rows_of "$s") -eq $total ]] || fail "re-added id counted twice"
"$strata" generic stats "$s" | grep -q '"base_rows":4,"generation_rows":1,' || fail "stats: $("$strata" generic stats "$s")"
"$strata" generic compact "$s" | grep -q "compact" || fail "compact"

# Seal on add, a spec in strata's schema JSON form, and Arrow IPC input of the store schema.
cat > "$work/schema.json" <<'JSON'
{"fields": [{"name": "id", "type": "utf8", "nullable": false},
            {"name": "n", "type": "int64"},
            {"name": "v", "type": "fixed_size_list<float32>[2]"}]}
JSON
s2=$work/sealed
"$strata" generic create "$s2" --schema "$work/schema.json" --seal-on-add | grep -q "seal on add" \
  || fail "create --seal-on-add"
printf '[{"id":"x","n":1,"v":[1,2]}]' | "$strata" generic add "$s2" > "$work/out"
grep -q "visible now" "$work/out" || fail "seal-on-add add: $(cat "$work/out")"
[[ $(rows_of "$s2") -eq 1 ]] || fail "seal-on-add rows not visible at once"
"$strata" generic stats "$s2" | grep -q '"seal_on_add":true' || fail "seal mode not persisted"
printf '{"id":"y","n":2,"v":[3,4]}\n{"id":"z"}\n' > "$work/rows.jsonl"
"$strata" arrow from-json --schema "$work/schema.json" "$work/rows.jsonl" "$work/rows.arrow" > /dev/null
"$strata" generic add "$s2" --format arrow "$work/rows.arrow" > /dev/null
out=$("$strata" generic list "$s2" --columns id,v)
[[ $out == $'{"id":"x","v":[1,2]}\n{"id":"y","v":[3,4]}\n{"id":"z"}' ]] || fail "arrow add: $out"
printf '{"id":"w","other":1}\n' > "$work/other.jsonl"
"$strata" arrow from-json --schema '{"fields": [{"name": "id", "type": "utf8", "nullable": false}, {"name": "other", "type": "int64"}]}' \
  "$work/other.jsonl" "$work/other.arrow" > /dev/null
expect_exit 1 "$strata" generic add "$s2" --format arrow "$work/rows.arrow" "$work/other.arrow"
grep -q "record batch schema does not match the store schema" "$work/err" \
  || fail "arrow schema mismatch: $(cat "$work/err")"
[[ $(rows_of "$s2") -eq 3 ]] || fail "a refused arrow input wrote rows"

# Stores of another kind are refused both ways, and left unchanged.
r=$work/rollouts
printf '{"id":"t1","rollout_id":"r1"}\n' | "$strata" rollout add "$r" --flush > /dev/null
expect_exit 1 "$strata" generic list "$r"
grep -q "not a generic store: it is a rollout store (use \`strata rollout ...\`)" "$work/err" \
  || fail "generic list on a rollout store: $(cat "$work/err")"
expect_exit 1 "$strata" generic add "$r" "$input"
expect_exit 1 "$strata" rollout list "$s"
grep -q "not a rollout store: it is a generic store (use \`strata generic ...\`)" "$work/err" \
  || fail "rollout list on a generic store: $(cat "$work/err")"
expect_exit 1 "$strata" rollout add "$s" "$examples/rollout-records.jsonl"
[[ $("$strata" rollout list "$r" --format jsonl | wc -l) -eq 1 ]] || fail "rollout store changed"
out=$("$strata" generic list "$s" --limit 1)
[[ $out == "$want" ]] || fail "generic store changed by rollout commands: $out"
"$strata" table create "$work/plain" --schema '{"fields": [{"name": "id", "type": "utf8", "nullable": false}]}' > /dev/null
expect_exit 1 "$strata" generic list "$work/plain"
grep -q "not a generic store: it holds a plain table" "$work/err" || fail "plain table: $(cat "$work/err")"

echo "generic CLI: ok"
