#!/usr/bin/env bash
# End-to-end checks of `strata arrow`: JSON -> Arrow -> JSON round trip for every codec and
# format, projection/offset/limit, inspect, and that bad input fails clearly and writes nothing.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"

schema=$examples/rollouts.schema.json
input=$examples/rollouts.jsonl
rows=$(grep -c . "$input")

# Round trip: the JSON written back must describe the same rows (compare via a canonical pass:
# convert the output again and require byte-identical JSON).
for codec in none lz4 zstd; do
  for format in file stream; do
    out=$work/r-$codec-$format.arrow
    "$strata" arrow from-json --schema "$schema" --compression "$codec" --format "$format" \
      --batch-rows 50 "$input" "$out" 2>/dev/null
    "$strata" arrow cat "$out" > "$work/back.jsonl"
    [[ $(wc -l < "$work/back.jsonl") -eq $rows ]] || fail "$codec/$format: row count"
    "$strata" arrow from-json --schema "$schema" "$work/back.jsonl" "$work/again.arrow" 2>/dev/null
    "$strata" arrow cat "$work/again.arrow" > "$work/again.jsonl"
    cmp -s "$work/back.jsonl" "$work/again.jsonl" || fail "$codec/$format: round trip differs"
  done
done
base=$work/r-zstd-file.arrow

# First row's id and reward as the input has them.
first=$("$strata" arrow cat "$base" --columns id,reward --limit 1)
[[ $first == '{"id":"r0000-s0","reward":null}' ]] || fail "projection: $first"
row8=$("$strata" arrow cat "$base" --columns id --offset 57 --limit 1)
[[ $row8 == '{"id":"r0007-s1"}' ]] || fail "offset across batches: $row8"
n=$("$strata" arrow cat "$base" --offset 230 | wc -l)
[[ $n -eq 10 ]] || fail "offset near the end gave $n rows"
"$strata" arrow cat "$base" --format table --columns id,role --limit 3 | grep -q "(3 rows)" \
  || fail "table footer"
"$strata" arrow inspect "$base" | grep -q "batches: 5, rows: 240" || fail "inspect summary"
"$strata" arrow inspect "$base" | grep -q "zstd" || fail "inspect compression"

# Bad input: clear error, non-zero exit, nothing written.
printf '{"id":"a","rollout_id":"x"}\n{"id":"b","rollout_id":"y","reward":"abc"}\n' > "$work/bad.jsonl"
if "$strata" arrow from-json --schema "$schema" "$work/bad.jsonl" "$work/bad.arrow" \
  2> "$work/err"; then
  fail "bad input accepted"
fi
grep -q "row 2, column 'reward': expected float64" "$work/err" || fail "error text: $(cat "$work/err")"
ls "$work" | grep -q "^bad.arrow" && fail "bad input left a file behind"
if "$strata" arrow cat "$schema" 2> "$work/err"; then fail "non-Arrow input accepted"; fi
grep -q "Corruption" "$work/err" || fail "non-Arrow input error: $(cat "$work/err")"
if "$strata" arrow cat "$base" --columns nope 2> "$work/err"; then fail "unknown column"; fi
grep -q "no column named 'nope'" "$work/err" || fail "unknown column error"
set +e
"$strata" arrow cat > /dev/null 2>&1
[[ $? -eq 2 ]] || fail "usage error should exit 2"
set -e

# Types nested deeper than the IPC reader accepts, and structs with two fields of one name,
# are refused with the schema, naming the column; the deepest accepted type round trips.
nested() {
  local type=$2
  for ((i = 0; i < $1; i++)); do type="list<$type>"; done
  echo "{\"fields\": [{\"name\": \"id\", \"type\": \"int64\"}, {\"name\": \"deep\", \"type\": \"$type\"}]}"
}
echo '{"id":1,"deep":null}' > "$work/one.jsonl"
"$strata" arrow from-json --schema "$(nested 60 int64)" "$work/one.jsonl" "$work/deep.arrow" \
  2>/dev/null
[[ $("$strata" arrow cat "$work/deep.arrow") == '{"id":1,"deep":null}' ]] || fail "deepest type"
expect_exit 1 "$strata" arrow from-json --schema "$(nested 61 int64)" "$work/one.jsonl" \
  "$work/deeper.arrow"
grep -q "schema field 'deep': type nests deeper than 60 levels" "$work/err" \
  || fail "deep type error: $(cat "$work/err")"
[[ ! -e $work/deeper.arrow ]] || fail "deep type wrote a file"
expect_exit 1 "$strata" arrow from-json \
  --schema '{"fields": [{"name": "s", "type": "struct<a: int64, a: utf8>"}]}' "$work/one.jsonl" \
  "$work/dup.arrow"
grep -q "schema field 's'.*struct has two fields named 'a'" "$work/err" \
  || fail "duplicate struct field error: $(cat "$work/err")"

# Output that cannot be written fails the command, whichever it is.
for args in "cat $base" "cat $base --format table" "inspect $base" "inspect $work/r-none-stream.arrow"; do
  # shellcheck disable=SC2086
  expect_output_error "$strata" arrow $args
done
set +e
"$strata" --help > /dev/full 2> "$work/err"
[[ $? -ne 0 ]] || fail "--help > /dev/full exited 0"
set -e

# Directories where files belong are named as such; so are duplicate columns and numbers
# out of range.
mkdir "$work/dir.jsonl" "$work/out.arrow"
expect_exit 1 "$strata" arrow from-json --schema "$schema" "$work/dir.jsonl" "$work/x.arrow"
grep -q "'$work/dir.jsonl' is a directory" "$work/err" || fail "input dir: $(cat "$work/err")"
expect_exit 1 "$strata" arrow from-json --schema "$work" "$input" "$work/x.arrow"
grep -q "'$work' is a directory" "$work/err" || fail "schema dir: $(cat "$work/err")"
expect_exit 1 "$strata" arrow from-json --schema "$schema" "$input" "$work/out.arrow"
grep -q "output '$work/out.arrow' is a directory" "$work/err" || fail "output dir: $(cat "$work/err")"
grep -q "$input" "$work/err" && fail "output dir error blames the input: $(cat "$work/err")"
[[ -z $(ls "$work/out.arrow") ]] || fail "output dir error left a file"
expect_exit 1 "$strata" arrow cat "$base" --columns id,reward,id
grep -q "column 'id' is given twice" "$work/err" || fail "duplicate column: $(cat "$work/err")"
expect_exit 2 "$strata" arrow cat "$base" --limit 99999999999999999999
grep -q "out of range (at most 9223372036854775807)" "$work/err" \
  || fail "huge --limit: $(cat "$work/err")"
expect_exit 2 "$strata" arrow cat "$base" --max-cell-width 0
grep -q "0 is out of range (at least 1)" "$work/err" || fail "--max-cell-width 0: $(cat "$work/err")"
(( $(wc -c < "$work/err") < 200 )) || fail "range error is long: $(cat "$work/err")"
echo "cli: all checks passed"
