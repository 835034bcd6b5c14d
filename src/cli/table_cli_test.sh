#!/usr/bin/env bash
# End-to-end checks of `strata table`: every command on the examples/ rollouts, time travel,
# corruption found by verify, repair of a lost data file, and that bad input changes nothing.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"
latest() { "$strata" table versions "$1" | tail -1 | awk '{print $1}'; }

schema=$examples/rollouts.schema.json
input=$examples/rollouts.jsonl
rows=$(grep -c . "$input")
t=$work/t

# create: a nullable primary key is refused before anything is written; then a real create,
# which a second create must not overwrite.
expect_exit 1 "$strata" table create "$t" --schema "$schema" --primary-key role
grep -q "column 'role' is nullable" "$work/err" || fail "nullable key error: $(cat "$work/err")"
[[ ! -e $t ]] || fail "refused create left $t behind"
expect_exit 1 "$strata" table create "$t" --schema "$schema" --primary-key nope
grep -q "no column named 'nope'" "$work/err" || fail "unknown key column error"
out=$("$strata" table create "$t" --schema "$schema" --primary-key id)
[[ $out == *"primary key 'id' -> version 1" ]] || fail "create: $out"
expect_exit 1 "$strata" table create "$t" --schema "$schema"
grep -q "already exists" "$work/err" || fail "second create: $(cat "$work/err")"

# append: JSON lines, then Arrow IPC (file and stream) with other ids, each one commit.
out=$("$strata" table append "$t" "$input")
[[ $out == "appended $rows rows in 1 fragments -> version 2" ]] || fail "append: $out"
head -40 "$input" | sed 's/"id": "r/"id": "x/' > "$work/more.jsonl"
"$strata" arrow from-json --schema "$schema" --batch-rows 16 "$work/more.jsonl" \
  "$work/more.arrow" 2>/dev/null
tail -20 "$input" | sed 's/"id": "r/"id": "y/' > "$work/stream.jsonl"
"$strata" arrow from-json --schema "$schema" --format stream "$work/stream.jsonl" \
  "$work/more.arrows" 2>/dev/null
out=$("$strata" table append "$t" "$work/more.arrow" "$work/more.arrows")
[[ $out == "appended 60 rows in "*" -> version 3" ]] || fail "arrow append: $out"
total=$((rows + 60))

# count, with and without a filter.
[[ $("$strata" table count "$t") -eq $total ]] || fail "count"
users=$(( $(grep -c '"role": "user"' "$input") + $(grep -c '"role": "user"' "$work/more.jsonl") \
  + $(grep -c '"role": "user"' "$work/stream.jsonl") ))
[[ $("$strata" table count "$t" --filter "role = 'user'") -eq $users ]] || fail "count --filter"

# scan: the rows come back as they went in (compared with the arrow commands' JSON).
"$strata" arrow from-json --schema "$schema" "$input" "$work/canon.arrow" 2>/dev/null
"$strata" arrow cat "$work/canon.arrow" > "$work/canon.jsonl"
"$strata" table scan "$t" --limit "$rows" > "$work/scan.jsonl"
cmp -s "$work/canon.jsonl" "$work/scan.jsonl" || fail "scan differs from the input"
first=$("$strata" table scan "$t" --columns id,reward --limit 1)
[[ $first == '{"id":"r0000-s0","reward":null}' ]] || fail "scan projection: $first"
row=$("$strata" table scan "$t" --columns id --offset 57 --limit 1)
[[ $row == '{"id":"r0007-s1"}' ]] || fail "scan offset: $row"
n=$("$strata" table scan "$t" --filter "rollout_id = 'r0010'" | wc -l)
[[ $n -eq $(grep -c '"rollout_id": "r0010"' "$input") ]] || fail "scan filter gave $n rows"
n=$("$strata" table scan "$t" --filter "id LIKE 'x%'" --offset 30 | wc -l)
[[ $n -eq 10 ]] || fail "scan filter + offset gave $n rows"
"$strata" table scan "$t" --format table --columns id,role --limit 3 | grep -q "(3 rows)" \
  || fail "scan table footer"
"$strata" table scan "$t" --columns id --limit 1 --with-row-address | grep -q '"_rowaddr":' \
  || fail "scan --with-row-address"
expect_exit 1 "$strata" table scan "$t" --filter "nope = 1"
grep -q "nope" "$work/err" || fail "bad filter error: $(cat "$work/err")"

# get: rows in the order the keys are given; a missing key is exit 1.
out=$("$strata" table get "$t" r0005-s2 --columns id,rollout_id)
[[ $out == '{"id":"r0005-s2","rollout_id":"r0005"}' ]] || fail "get: $out"
out=$("$strata" table get "$t" x0002-s1 r0001-s0 --columns id | tr '\n' ' ')
[[ $out == '{"id":"x0002-s1"} {"id":"r0001-s0"} ' ]] || fail "get order: $out"
expect_exit 1 "$strata" table get "$t" r0001-s0 nope --columns id
[[ $(cat "$work/out") == '{"id":"r0001-s0"}' ]] || fail "get with a missing key printed $(cat "$work/out")"
grep -q "no row with key 'nope'" "$work/err" || fail "missing key error: $(cat "$work/err")"

# delete by filter and by key; a delete that matches nothing commits nothing.
gone=$(grep -c '"rollout_id": "r0001"' "$input")
out=$("$strata" table delete "$t" --filter "rollout_id = 'r0001' AND id LIKE 'r%'")
[[ $out == "deleted $gone rows -> version 4" ]] || fail "delete --filter: $out"
out=$("$strata" table delete "$t" --key r0002-s0 y0027-s5 no-such-key)
[[ $out == "deleted 2 rows -> version 5" ]] || fail "delete --key: $out"
out=$("$strata" table delete "$t" --filter "rollout_id = 'nope'")
[[ $out == "deleted 0 rows; version 5 unchanged" ]] || fail "empty delete: $out"
expect_exit 1 "$strata" table get "$t" r0001-s0
expect_exit 1 "$strata" table get "$t" r0002-s0
expect_exit 1 "$strata" table get "$t" y0027-s5
live=$((total - gone - 2))
[[ $("$strata" table count "$t") -eq $live ]] || fail "count after delete"

# Time travel: old versions stay readable; checkout shows one and how to read it.
[[ $("$strata" table count "$t" --version 2) -eq $rows ]] || fail "count --version 2"
"$strata" table get "$t" r0001-s0 --version 3 --columns id | grep -q r0001-s0 \
  || fail "get --version 3"
"$strata" table checkout "$t" 2 > "$work/out"
grep -q "rows: $rows, fragments: 1" "$work/out" || fail "checkout summary: $(cat "$work/out")"
grep -q "scan $t --version 2" "$work/out" || fail "checkout hint"
expect_exit 1 "$strata" table checkout "$t" 99
expect_exit 1 "$strata" table scan "$t" --version 99

# versions: one line per version with an RFC 3339 time and the operation.
"$strata" table versions "$t" > "$work/versions"
[[ $(wc -l < "$work/versions") -eq 5 ]] || fail "versions: $(cat "$work/versions")"
grep -Eq '^ +1  [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z  create' "$work/versions" \
  || fail "versions line: $(head -1 "$work/versions")"
tail -1 "$work/versions" | grep -q delete || fail "last version is not the delete"

# compact: same rows (and keys still found) afterwards.
"$strata" table scan "$t" | sort > "$work/before"
out=$("$strata" table compact "$t")
[[ $out == "compacted "*" -> version 6" ]] || fail "compact: $out"
"$strata" table scan "$t" | sort > "$work/after"
cmp -s "$work/before" "$work/after" || fail "compaction changed the rows"
"$strata" table get "$t" x0003-s0 --columns id | grep -q x0003-s0 || fail "get after compact"
out=$("$strata" table compact "$t" --target-rows 10 --max-source-fragments 0 --no-materialize-deletions)
[[ $out == "nothing to compact; version 6 unchanged" || $out == "compacted "* ]] \
  || fail "second compact: $out"

# inspect: schema, stats, fragments with their files, the key index, metadata.
"$strata" table inspect "$t" > "$work/inspect"
for want in "schema:" "strata:primary-key" "rows: $live live" "fragments:" "data/" "key_idx" \
  "table metadata:"; do
  grep -q -- "$want" "$work/inspect" || fail "inspect lacks '$want': $(cat "$work/inspect")"
done
"$strata" table inspect "$t" --version 2 | grep -q "rows: $rows live" || fail "inspect --version"

# add-columns: existing rows read null; new rows can fill them.
out=$("$strata" table add-columns "$t" --column 'score: float64' --column 'note : utf8')
[[ $out == "added columns score, note -> version "* ]] || fail "add-columns: $out"
row=$("$strata" table scan "$t" --columns id,score,note --limit 1)
[[ $row == '{"id":"r0000-s0","score":null,"note":null}' ]] || fail "added column: $row"
echo '{"id":"z1","rollout_id":"z","score":0.25,"note":"hi"}' > "$work/scored.jsonl"
"$strata" table append "$t" "$work/scored.jsonl" > /dev/null
row=$("$strata" table get "$t" z1 --columns id,score,note)
[[ $row == '{"id":"z1","score":0.25,"note":"hi"}' ]] || fail "new column value: $row"
expect_exit 1 "$strata" table add-columns "$t" --column 'x: int32 not null'
grep -q "must be nullable" "$work/err" || fail "non-nullable add: $(cat "$work/err")"
expect_exit 1 "$strata" table add-columns "$t" --column 'score: int32'
expect_exit 1 "$strata" table add-columns "$t" --column 'oops'
live=$((live + 1))

# Bad input anywhere in an append writes nothing: same version, same rows.
before=$(latest "$t")
printf '{"id":"b1","rollout_id":"x"}\n{"id":"b2","rollout_id":"y","reward":"abc"}\n' \
  > "$work/bad.jsonl"
expect_exit 1 "$strata" table append "$t" "$work/scored.jsonl" "$work/bad.jsonl"
grep -q "row 2, column 'reward': expected float64" "$work/err" || fail "bad JSON error: $(cat "$work/err")"
expect_exit 1 "$strata" table append "$t" "$work/scored.jsonl" "$work/missing.jsonl"
echo '{"id":null,"rollout_id":"x"}' > "$work/nullkey.jsonl"
expect_exit 1 "$strata" table append "$t" "$work/nullkey.jsonl"
[[ $(latest "$t") == "$before" ]] || fail "bad input committed a version"
[[ $("$strata" table count "$t") -eq $live ]] || fail "bad input changed the rows"

# verify: a clean table passes; one flipped byte in a data file is found (exit 1).
"$strata" table verify "$t" | grep -q ": ok$" || fail "verify of a clean table"
"$strata" table verify "$t" --all-versions | grep -q ": ok$" || fail "verify --all-versions"
cp -r "$t" "$work/corrupt"
file=$work/corrupt/$(grep -o 'data/[^ ]*\.arrow' "$work/inspect" | head -1)
size=$(stat -c %s "$file")
offset=$((size / 2))
byte=$(od -An -tu1 -j "$offset" -N1 "$file" | tr -d ' ')
printf "\\$(printf %03o $((byte ^ 0x55)))" | dd of="$file" bs=1 seek="$offset" conv=notrunc 2>/dev/null
expect_exit 1 "$strata" table verify "$work/corrupt"
grep -q "data/" "$work/out" || fail "verify did not name the file: $(cat "$work/out")"
grep -q "problems found" "$work/err" || fail "verify error: $(cat "$work/err")"

# repair: a lost data file drops its fragment in a new version, which then verifies.
cp -r "$t" "$work/lost"
"$strata" table inspect "$work/lost" > "$work/lost-inspect"
rm "$work/lost/$(grep -o 'data/[^ ]*\.arrow' "$work/lost-inspect" | head -1)"
expect_exit 1 "$strata" table verify "$work/lost"
"$strata" table repair "$work/lost" > "$work/out"
grep -q "^dropped fragment [0-9]* ([0-9]* rows): missing data/" "$work/out" \
  || fail "repair: $(cat "$work/out")"
grep -q "^-> version" "$work/out" || fail "repair committed no version"
"$strata" table verify "$work/lost" > /dev/null || fail "verify after repair"
[[ $("$strata" table count "$work/lost") -lt $live ]] || fail "repair kept the lost rows"
"$strata" table repair "$t" | grep -q "nothing to repair" || fail "repair of a clean table"

# A missing newest manifest: the table reads the version before it but warns on stderr, and
# verify names the missing manifest. A missing middle manifest: verify --all-versions names it.
manifest() { printf '%s/_versions/%020d.manifest' "$1" "$2"; }
n=$(latest "$t")
cp -r "$t" "$work/nonewest"
rm "$(manifest "$work/nonewest" "$n")"
expect_exit 0 "$strata" table count "$work/nonewest"
grep -q "^strata: warning: .*hint names version $n .*reading version $((n - 1))" "$work/err" \
  || fail "no warning for a missing newest manifest: $(cat "$work/err")"
expect_exit 1 "$strata" table verify "$work/nonewest"
grep -q "^version $n: _versions/$(printf %020d "$n").manifest: missing from storage" \
  "$work/out" || fail "verify of a missing newest manifest: $(cat "$work/out")"
cp -r "$t" "$work/nomiddle"
rm "$(manifest "$work/nomiddle" 2)"
expect_exit 0 "$strata" table verify "$work/nomiddle"
[[ ! -s $work/err ]] || fail "a missing middle manifest warned: $(cat "$work/err")"
expect_exit 1 "$strata" table verify "$work/nomiddle" --all-versions
grep -q "^version 2: _versions/00000000000000000002.manifest: missing from storage" \
  "$work/out" || fail "verify --all-versions of a missing middle manifest: $(cat "$work/out")"

# A corrupt newest manifest: the table does not open; repair says what it would drop and
# changes nothing, and with --drop-corrupt-versions commits the newest intact version's
# content as a new version, deleting no data file.
cp -r "$t" "$work/badnewest"
b=$work/badnewest
ls "$b/data" > "$work/data-before"
printf 'garbage' | dd of="$(manifest "$b" "$n")" bs=1 seek=40 conv=notrunc 2>/dev/null
expect_exit 1 "$strata" table count "$b"
grep -q "Corruption" "$work/err" || fail "count of a corrupt table: $(cat "$work/err")"
expect_exit 1 "$strata" table verify "$b"
grep -q "strata table repair" "$work/err" || fail "verify names no way out: $(cat "$work/err")"
ls -l "$b/_versions" > "$work/versions-before"
expect_exit 1 "$strata" table repair "$b"
grep -q "^version $n: corrupt: " "$work/out" || fail "repair report: $(cat "$work/out")"
grep -q -- "--drop-corrupt-versions" "$work/err" || fail "repair without the flag: $(cat "$work/err")"
ls -l "$b/_versions" | cmp -s - "$work/versions-before" || fail "repair without the flag wrote"
expect_exit 0 "$strata" table repair "$b" --drop-corrupt-versions
grep -q "^dropped version $n (corrupt: .*); table now at version $((n + 1)) with the content of \
version $((n - 1))$" "$work/out" || fail "repair --drop-corrupt-versions: $(cat "$work/out")"
[[ $(latest "$b") == $((n + 1)) ]] || fail "rollback version: $(latest "$b")"
[[ $("$strata" table count "$b") -eq $("$strata" table count "$t" --version $((n - 1))) ]] \
  || fail "rolled back to other rows"
"$strata" table verify "$b" --all-versions > /dev/null || fail "verify after the rollback"
ls "$b/data" | cmp -s - "$work/data-before" || fail "the rollback deleted data files"
"$strata" table repair "$b" | grep -q "nothing to repair" || fail "repair after the rollback"

# cleanup: old versions go, the latest stays readable and verifies.
versions=$("$strata" table versions "$t" | wc -l)
out=$("$strata" table cleanup "$t" --older-than 0s --keep 2 --delete-unreferenced)
[[ $out == "removed $((versions - 2)) versions and "* ]] || fail "cleanup: $out"
[[ $("$strata" table versions "$t" | wc -l) -eq 2 ]] || fail "versions after cleanup"
expect_exit 1 "$strata" table count "$t" --version 2
[[ $("$strata" table count "$t") -eq $live ]] || fail "count after cleanup"
"$strata" table verify "$t" --all-versions > /dev/null || fail "verify after cleanup"
out=$("$strata" table cleanup "$t")
[[ $out == "removed 0 versions and 0 files (0 B)" ]] || fail "cleanup of recent versions: $out"

# A table without a primary key: get and delete --key say so.
"$strata" table create "$work/nokey" --schema "$schema" > /dev/null
expect_exit 1 "$strata" table get "$work/nokey" a
grep -q "no primary key" "$work/err" || fail "get without key: $(cat "$work/err")"

# An integer key, an inline schema and JSON from stdin.
"$strata" table create "$work/ints" --primary-key k \
  --schema '{"fields": [{"name": "k", "type": "int64", "nullable": false}, {"name": "v", "type": "utf8"}]}' \
  > /dev/null
printf '{"k":1,"v":"a"}\n{"k":-2,"v":"b"}\n' | "$strata" table append "$work/ints" - > /dev/null
[[ $("$strata" table get "$work/ints" -- -2 1 | tr '\n' ' ') == '{"k":-2,"v":"b"} {"k":1,"v":"a"} ' ]] \
  || fail "get by integer key"
expect_exit 1 "$strata" table get "$work/ints" abc
grep -q "key 'abc' is not an integer" "$work/err" || fail "non-integer key: $(cat "$work/err")"

# The base table of a rollout store: table commands that would break the store refuse it,
# name the store and say what to use instead, and change nothing; the store's own
# maintenance (compact, cleanup) and reads still work.
rs=$work/rs
"$strata" rollout add "$rs" "$examples/rollout-records.jsonl" --flush > /dev/null
"$strata" rollout merge "$rs" > /dev/null
rs_versions=$("$strata" table versions "$rs" | wc -l)
expect_exit 1 "$strata" table add-columns "$rs" --column 'x: int32'
grep -q "'$rs' is a rollout store, not a plain table: .*\`strata rollout\` commands" "$work/err" \
  || fail "add-columns on a rollout store: $(cat "$work/err")"
printf '{"id":"rs-new","rollout_id":"x","problem_id":"p"}\n' > "$work/rs-row.jsonl"
expect_exit 1 "$strata" table append "$rs" "$work/rs-row.jsonl"
grep -q "use \`strata rollout add\`" "$work/err" || fail "append on a rollout store: $(cat "$work/err")"
expect_exit 1 "$strata" table delete "$rs" --filter true
grep -q "is a rollout store" "$work/err" || fail "delete on a rollout store: $(cat "$work/err")"
expect_exit 1 "$strata" table compact "$rs" --no-materialize-deletions
grep -q "use \`strata rollout compact\`" "$work/err" \
  || fail "compact --no-materialize-deletions on a rollout store: $(cat "$work/err")"
[[ $("$strata" table versions "$rs" | wc -l) -eq $rs_versions ]] || fail "a refused command committed"
"$strata" table compact "$rs" > /dev/null
"$strata" table cleanup "$rs" > /dev/null
"$strata" table count "$rs" > /dev/null
printf '{"id":"rs-new","rollout_id":"x","problem_id":"p"}\n' | "$strata" rollout add "$rs" --flush \
  > /dev/null || fail "the rollout store no longer accepts rows"

# Input that cannot work is refused at the door: types nested deeper than the IPC reader
# accepts and structs with two fields of one name fail at create, naming the column; a create
# that fails leaves no directory behind (and an empty one empty).
deep=int64
for ((i = 0; i < 61; i++)); do deep="list<$deep>"; done
expect_exit 1 "$strata" table create "$work/deep" \
  --schema "{\"fields\": [{\"name\": \"d\", \"type\": \"$deep\"}]}"
grep -q "schema field 'd': type nests deeper than 60 levels" "$work/err" \
  || fail "deep type: $(cat "$work/err")"
[[ ! -e $work/deep ]] || fail "refused deep create left a directory"
expect_exit 1 "$strata" table create "$work/dup" \
  --schema '{"fields": [{"name": "s", "type": "struct<a: int64, a: utf8>"}]}'
grep -q "schema field 's'.*struct has two fields named 'a'" "$work/err" \
  || fail "duplicate struct field: $(cat "$work/err")"
float_key='{"fields": [{"name": "k", "type": "float64", "nullable": false}]}'
expect_exit 1 "$strata" table create "$work/floatkey" --schema "$float_key" --primary-key k
grep -q "primary-key column 'k' has type float64" "$work/err" || fail "float key: $(cat "$work/err")"
[[ ! -e $work/floatkey ]] || fail "failed create left $work/floatkey behind"
expect_exit 1 "$strata" table create "$work/new/parents/t" --schema "$float_key" --primary-key k
[[ ! -e $work/new ]] || fail "failed create left the parents it made behind"
mkdir "$work/empty"
expect_exit 1 "$strata" table create "$work/empty" --schema '{"fields": []}'
[[ -d $work/empty && -z $(ls -A "$work/empty") ]] || fail "failed create changed an empty directory"

# Output that cannot be written fails the command (the data it committed stays committed).
cp -r "$t" "$work/full"
for args in "count $t" "versions $t" "checkout $t $(latest "$t")" "inspect $t" "verify $t" \
  "scan $t --limit 2" "get $t r0005-s2" "append $work/full $work/scored.jsonl" \
  "create $work/full-new --schema $schema"; do
  # shellcheck disable=SC2086
  expect_output_error "$strata" table $args
done
[[ ! -e $work/full-new ]] || fail "create that failed to print kept its table"
"$strata" table append "$work/full" "$work/scored.jsonl" > /dev/full 2> "$work/err" || true
grep -q "No space left on device; the 1 rows were appended -> version" "$work/err" \
  || fail "append > /dev/full does not say the rows were appended: $(cat "$work/err")"

# Version numbers out of range, duplicate columns and directories as input files are named.
expect_exit 2 "$strata" table count "$t" --version 0
grep -q "0 is out of range (at least 1)" "$work/err" || fail "--version 0: $(cat "$work/err")"
(( $(wc -c < "$work/err") < 200 )) || fail "--version 0 error is long: $(cat "$work/err")"
expect_exit 2 "$strata" table checkout "$t" 0
expect_exit 2 "$strata" table scan "$t" --version 99999999999999999999
grep -q "out of range (at most 18446744073709551615)" "$work/err" \
  || fail "20-digit version: $(cat "$work/err")"
expect_exit 2 "$strata" table inspect "$t" --version 18446744073709551616
expect_exit 2 "$strata" table scan "$t" --offset -1
expect_exit 1 "$strata" table scan "$t" --columns id,id
grep -q "column 'id' is given twice" "$work/err" || fail "scan --columns id,id: $(cat "$work/err")"
expect_exit 1 "$strata" table get "$t" r0005-s2 --columns id,id
grep -q "column 'id' is given twice" "$work/err" || fail "get --columns id,id: $(cat "$work/err")"
mkdir "$work/rows.jsonl"
expect_exit 1 "$strata" table append "$t" "$work/rows.jsonl"
grep -q "'$work/rows.jsonl' is a directory" "$work/err" || fail "input dir: $(cat "$work/err")"

# Runtime errors exit 1 and do not create directories; usage errors exit 2.
expect_exit 1 "$strata" table scan "$work/none"
[[ ! -e $work/none ]] || fail "scan created a directory"
mkdir "$work/junk" && touch "$work/junk/file"
expect_exit 1 "$strata" table create "$work/junk" --schema "$schema"
expect_exit 2 "$strata" table
expect_exit 2 "$strata" table scan
expect_exit 2 "$strata" table delete "$t"
expect_exit 2 "$strata" table delete "$t" --filter true --key a
expect_exit 2 "$strata" table scan "$t" --format xml
expect_exit 2 "$strata" table cleanup "$t" --older-than soon
expect_exit 2 "$strata" table checkout "$t"
echo "cli table: all checks passed"
