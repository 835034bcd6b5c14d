#!/usr/bin/env bash
# End-to-end checks of `strata sql`: SELECTs over a generic and a rollout store in each output
# format, blobs named but not in `*`, what reaches strata (--stats), the row cap, refused
# statements that change nothing, and directories that hold no store.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"

g=$work/generic
"$strata" generic create "$g" --schema "$examples/generic.spec.json" > /dev/null
"$strata" generic add "$g" "$examples/generic-rows.jsonl" --flush > /dev/null

# JSON lines: SQLite's column names as keys, float32 as their shortest decimal, timestamps in
# RFC 3339, lists as JSON text.
out=$("$strata" sql "$g" "SELECT id, score, views, published, created_at, tags FROM records ORDER BY id" --format jsonl)
want='{"id":"doc-1","score":0.92,"views":1200,"published":1,"created_at":"2026-01-05T09:30:00.000000Z","tags":"[\"storage\",\"lsm\"]"}'
[[ $(head -1 <<< "$out") == "$want" ]] || fail "jsonl: $out"
[[ $(wc -l <<< "$out") -eq 4 ]] || fail "jsonl rows: $out"
[[ $(tail -1 <<< "$out") == '{"id":"doc-4","score":null,"views":42,"published":null,"created_at":null,"tags":"[\"storage\",null]"}' ]] \
  || fail "jsonl nulls: $out"

# `*` leaves the blob column out; naming it reads it (base64 in JSON).
out=$("$strata" sql "$g" "SELECT * FROM records WHERE id = 'doc-1'" --format jsonl)
[[ $out != *thumbnail* && $out == *'"embedding":"[0.1,0.2,0.3,0.4]"'* ]] || fail "star: $out"
out=$("$strata" sql "$g" "SELECT thumbnail FROM records WHERE id = 'doc-1'" --format jsonl)
[[ $out == '{"thumbnail":"AQID"}' ]] || fail "blob: $out"

# CSV and table.
out=$("$strata" sql "$g" "SELECT id, title FROM records WHERE views > 100 ORDER BY id" --format csv)
[[ $out == $'id,title\r\ndoc-1,Intro to LSM trees\r\ndoc-2,Write-ahead logs\r' ]] || fail "csv: $out"
out=$("$strata" sql "$g" "SELECT published, count(*) AS n FROM records GROUP BY published ORDER BY published" --format table)
[[ $out == *"published | n"* && $out == *"(3 rows)"* ]] || fail "table: $out"

# A CTE and a self join.
out=$("$strata" sql "$g" "WITH s AS (SELECT id FROM records WHERE 'storage' IN (SELECT value FROM json_each(tags))) SELECT group_concat(id) FROM (SELECT id FROM s ORDER BY id)" --format csv)
[[ $out == $'group_concat(id)\r\ndoc-1,doc-4\r' || $out == $'group_concat(id)\r\n"doc-1,doc-4"\r' ]] || fail "cte: $out"
out=$("$strata" sql "$g" "SELECT count(*) FROM records a JOIN records b ON a.id = b.id" --format csv)
[[ $out == $'count(*)\r\n4\r' ]] || fail "self join: $out"

# What reaches strata: a key lookup for id = ..., the filter for the rest.
"$strata" sql "$g" "SELECT title FROM records WHERE id = 'doc-2'" --format jsonl --stats > "$work/out" 2> "$work/err"
[[ $(cat "$work/out") == '{"title":"Write-ahead logs"}' ]] || fail "lookup: $(cat "$work/out")"
grep -q "scans: 0, key lookups: 1, rows scanned: 1" "$work/err" || fail "lookup stats: $(cat "$work/err")"
"$strata" sql "$g" "SELECT id FROM records WHERE views > 100 AND created_at >= '2026-01-05'" --format jsonl --stats > "$work/out" 2> "$work/err"
[[ $(wc -l < "$work/out") -eq 2 ]] || fail "filtered rows: $(cat "$work/out")"
grep -qF "pushed filter: \"views\" > 100 AND \"created_at\" >= TIMESTAMP '2026-01-05T00:00:00.000000Z'" "$work/err" \
  || fail "pushed filter: $(cat "$work/err")"
grep -q "columns read: id, views, created_at" "$work/err" || fail "columns: $(cat "$work/err")"

# The row cap: the rows asked for, and a warning that there were more.
"$strata" sql "$g" "SELECT id FROM records" --format jsonl --max-rows 2 > "$work/out" 2> "$work/err"
[[ $(wc -l < "$work/out") -eq 2 ]] || fail "max-rows: $(cat "$work/out")"
grep -q "warning: .*cut at 2 rows" "$work/err" || fail "max-rows warning: $(cat "$work/err")"
"$strata" sql "$g" "SELECT id FROM records" --format jsonl --max-rows 4 > "$work/out" 2> "$work/err"
[[ ! -s "$work/err" ]] || fail "max-rows without more rows: $(cat "$work/err")"

# Refused statements change nothing.
for statement in "DELETE FROM records" "UPDATE records SET views = 0" "INSERT INTO records(id) VALUES ('x')" \
  "DROP TABLE records" "CREATE TABLE t(x)" "PRAGMA writable_schema = 1" "ATTACH '$work/x.db' AS x" \
  "SELECT 1; DELETE FROM records"; do
  expect_exit 1 "$strata" sql "$g" "$statement"
  grep -q "SQL statement refused" "$work/err" || fail "$statement: $(cat "$work/err")"
done
[[ ! -e $work/x.db ]] || fail "ATTACH created a file"
expect_exit 1 "$strata" sql "$g" "SELECT nope FROM records"
grep -q "no such column: nope" "$work/err" || fail "bad column: $(cat "$work/err")"
[[ $("$strata" sql "$g" "SELECT count(*) AS n FROM records" --format jsonl) == '{"n":4}' ]] \
  || fail "rows changed"

# A rollout store through the same command.
r=$work/rollout
"$strata" rollout add "$r" "$examples/rollout-records.jsonl" --flush > /dev/null
out=$("$strata" sql "$r" "SELECT rollout_id, count(*) AS turns FROM records GROUP BY rollout_id ORDER BY rollout_id" --format csv)
[[ $out == $'rollout_id,turns\r\nr-001,4\r\nr-002,2\r' ]] || fail "rollout: $out"

# Directories without a store.
expect_exit 1 "$strata" sql "$work/none" "SELECT 1"
grep -q "no store at '$work/none'" "$work/err" || fail "missing dir: $(cat "$work/err")"
mkdir "$work/empty"
expect_exit 1 "$strata" sql "$work/empty" "SELECT 1"
grep -q "no store at" "$work/err" || fail "empty dir: $(cat "$work/err")"
[[ -z $(ls -A "$work/empty") ]] || fail "sql wrote into an empty directory"
t=$work/table
"$strata" table create "$t" --schema "$examples/rollouts.schema.json" --primary-key id > /dev/null
expect_exit 1 "$strata" sql "$t" "SELECT 1"
grep -q "holds a plain table, not a store" "$work/err" || fail "plain table: $(cat "$work/err")"

# Lost output fails the command.
expect_output_error "$strata" sql "$g" "SELECT id FROM records" --format jsonl

echo "sql cli: ok"
