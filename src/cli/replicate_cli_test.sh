#!/usr/bin/env bash
# End-to-end checks of `strata replicate`: mark -> writes -> export -> apply -> verify on a
# rollout, a generic and a datagen store; refusals (replay, altered byte, existing name, keyed
# bundles, local writes, unmarked source) leave the replica unchanged; trim, status, follow,
# promote.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"
w=$work

# --- rollout: the whole round trip ------------------------------------------------------------
src=$w/src rep=$w/rep b=$w/bundles
"$strata" rollout add "$src" "$examples/rollout-records.jsonl" > /dev/null
"$strata" rollout flush "$src" > /dev/null
expect_exit 1 "$strata" replicate export "$src" "$b"
grep -q "refused (NotMarked)" "$w/err" || fail "unmarked: $(cat "$w/err")"
out=$("$strata" replicate mark-base "$src" --token nightly)
[[ $out == *"base state 0.0"*"6 rows"* ]] || fail "mark: $out"
expect_exit 1 "$strata" replicate mark-base "$src" --token nightly
grep -q "already marked" "$w/err" || fail "mark twice: $(cat "$w/err")"
out=$("$strata" replicate export "$src" "$b" --full)
[[ $out == *"exported 6 rows and 0 deletions"* ]] || fail "full export: $out"
out=$("$strata" replicate apply "$rep" "$b")
[[ $out == *"applied 1 bundles: 6 rows"* ]] || fail "apply: $out"
"$strata" replicate verify "$rep" | grep -q "^matches state 1.0" || fail "verify"
diff <("$strata" rollout list "$src" --limit 100) <("$strata" rollout list "$rep" --limit 100) \
  || fail "replica rows differ"

# Local writes to a replica are refused and write nothing.
expect_exit 1 "$strata" rollout add "$rep" "$examples/rollout-records.jsonl"
grep -q "is a replica" "$w/err" || fail "local write: $(cat "$w/err")"

# Changes travel: an update and a new row; unchanged rows do not.
sed 's/"r-001-0"/"r-009-0"/' "$examples/rollout-records.jsonl" | head -1 > "$w/more.jsonl"
"$strata" rollout add "$src" "$w/more.jsonl" > /dev/null
"$strata" rollout flush "$src" > /dev/null
out=$("$strata" replicate export "$src" "$b" --since 1 --consumer rep)
[[ $out == *"exported 1 rows and 0 deletions"* ]] || fail "incremental: $out"
bundle=$(ls "$b" | grep -v '^full-' | head -1)
# An altered byte is refused before anything is installed.
cp "$b/$bundle" "$w/bad.bundle"
printf 'X' | dd of="$w/bad.bundle" bs=1 seek=100 conv=notrunc status=none
expect_exit 1 "$strata" replicate apply "$rep" "$w/bad.bundle"
grep -q "refused (Digest)" "$w/err" || fail "digest: $(cat "$w/err")"
"$strata" replicate apply "$rep" "$b/$bundle" > /dev/null
# Replayed: refused as Cursor.
expect_exit 1 "$strata" replicate apply "$rep" "$b/$bundle"
grep -q "refused (Cursor)" "$w/err" || fail "replay: $(cat "$w/err")"
"$strata" replicate verify "$rep" > /dev/null || fail "verify after incremental"
[[ $("$strata" rollout list "$rep" --limit 100 | wc -l) -eq 7 ]] || fail "7 rows expected"
# Nothing changed: nothing published.
out=$("$strata" replicate export "$src" "$b")
[[ $out == "nothing changed since 2.0"* ]] || fail "idle export: $out"

# Status and trim: the consumer's cursor is the floor.
out=$("$strata" replicate status "$src")
[[ $out == *"consumers (1):"*"rep  cursor 1"* ]] || fail "status: $out"
out=$("$strata" replicate trim "$src")
[[ $out == "trim floor 1: removed 1 states"* ]] || fail "trim: $out"
expect_exit 1 "$strata" replicate export "$src" "$b" --since 0
grep -q "refused (TooOld)" "$w/err" || fail "too old: $(cat "$w/err")"

# Keyed bundles need the secret.
printf 's3cret\n' > "$w/secret"
"$strata" replicate export "$src" "$w/keyed" --full --secret-file "$w/secret" > /dev/null
expect_exit 1 "$strata" replicate apply "$w/keyed-rep" "$w/keyed"
grep -q "refused (Digest)" "$w/err" || fail "keyed without secret: $(cat "$w/err")"
"$strata" replicate apply "$w/keyed-rep" "$w/keyed" --secret-file "$w/secret" > /dev/null
"$strata" replicate verify "$w/keyed-rep" > /dev/null || fail "keyed verify"

# Promote makes the replica writable; verify then reports no chain state.
"$strata" replicate promote "$w/keyed-rep" | grep -q "promoted" || fail "promote"
"$strata" rollout add "$w/keyed-rep" "$w/more.jsonl" > /dev/null
"$strata" replicate unmark "$src" > /dev/null
"$strata" replicate status "$src" | grep -q "not marked" || fail "unmark"

# --- generic: follow rounds ---------------------------------------------------------------
g=$w/g
"$strata" generic create "$g" --schema "$examples/generic.spec.json" > /dev/null
"$strata" generic add "$g" "$examples/generic-rows.jsonl" > /dev/null
"$strata" generic flush "$g" > /dev/null
"$strata" replicate mark-base "$g" --token t > /dev/null
out=$("$strata" replicate follow "$g" "$w/g-rep" --bundles "$w/g-bundles" --rounds 2 --interval 0)
[[ $(grep -c '^round' <<< "$out") -eq 2 ]] || fail "follow: $out"
[[ $out == *"round 2: cursor 1.0  applied 0 bundles"*"0 rows behind"* ]] || fail "follow: $out"
diff <("$strata" generic list "$g" --limit 1000) <("$strata" generic list "$w/g-rep" --limit 1000) \
  || fail "generic replica differs"

# --- datagen ---------------------------------------------------------------------------------
d=$w/d
"$strata" datagen append "$d" "$examples/datagen-events.jsonl" > /dev/null
"$strata" datagen flush "$d" > /dev/null
"$strata" replicate mark-base "$d" --token t > /dev/null
"$strata" replicate follow "$d" "$w/d-rep" --bundles "$w/d-bundles" --rounds 1 > /dev/null
"$strata" replicate verify "$w/d-rep" > /dev/null || fail "datagen verify"
diff <("$strata" datagen overview "$d") <("$strata" datagen overview "$w/d-rep") \
  || fail "datagen replica differs"

# Usage errors exit 2.
expect_exit 2 "$strata" replicate export "$src"
expect_exit 2 "$strata" replicate export "$src" "$b" --max-rows 0
echo OK
