#!/usr/bin/env bash
# End-to-end checks of `strata datagen`: append and checkpoint on examples/datagen-*.jsonl,
# every read (events, fold, tree, failures, overview, status, blob), maintenance, that bad
# input writes nothing, and that other kinds of store are refused.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"
events_of() { "$strata" datagen events "$@" --format jsonl | wc -l; }

input=$examples/datagen-events.jsonl
checkpoint=$examples/datagen-checkpoint.jsonl
s=$work/store

# Bad input writes nothing and creates no store.
printf '{"item_id":"a","item_seq":1,"checkpoint_id":"c","event_type":"ITEM_CREATED","run_id":"r"}\n' \
  > "$work/noepoch.jsonl"
expect_exit 1 "$strata" datagen append "$s" "$input" "$work/noepoch.jsonl"
grep -q "noepoch.jsonl: row 1, column 'writer_epoch'" "$work/err" \
  || fail "missing writer_epoch: $(cat "$work/err")"
printf '{"item_id":"a","item_seq":1,"checkpoint_id":"c","event_type":"ITEM_MADE","run_id":"r","writer_epoch":"w"}\n' \
  > "$work/badtype.jsonl"
expect_exit 1 "$strata" datagen append "$s" "$work/badtype.jsonl"
grep -q "unsupported datagen event type 'ITEM_MADE'" "$work/err" || fail "bad type: $(cat "$work/err")"
printf '{"item_id":"a","item_seq":2,"checkpoint_id":"c","event_type":"FIELD_SET","run_id":"r","writer_epoch":"w","step_name":"s","step_kind":"leaf","step_index":0,"field_name":"f","field_type":"int","codec_version":1,"value_kind":"int"}\n' \
  > "$work/novalue.jsonl"
expect_exit 1 "$strata" datagen append "$s" "$work/novalue.jsonl"
grep -q "value_i64 must not be null" "$work/err" || fail "no value: $(cat "$work/err")"
printf '{"event_id":"x","item_id":"a","item_seq":1,"checkpoint_id":"c","event_type":"ITEM_CREATED","run_id":"r","writer_epoch":"w"}\n{"event_id":"x","item_id":"a","item_seq":1,"checkpoint_id":"c","event_type":"ITEM_CREATED","run_id":"r2","writer_epoch":"w"}\n' \
  > "$work/reused.jsonl"
expect_exit 1 "$strata" datagen append "$s" "$work/reused.jsonl"
grep -q "event_id 'x' was reused with different content" "$work/err" \
  || fail "reused id: $(cat "$work/err")"
expect_exit 1 "$strata" datagen append "$s" "$work/missing.jsonl"
[[ ! -e $s ]] || fail "bad input created $s"

# append: one put, visible on return; the repeated line (a retried write) collapses.
distinct=$(($(grep -c . "$input") - 1))
out=$("$strata" datagen append "$s" "$input")
[[ $out == "appended $distinct events to shard 'default' (one put: durable and visible); version "* ]] \
  || fail "append: $out"
[[ $(events_of "$s" --root doc-1) -eq 9 ]] || fail "doc-1 events"
[[ $(events_of "$s" --item doc-2) -eq 5 ]] || fail "doc-2 events"
"$strata" datagen events "$s" --item doc-1 --format jsonl | grep -q value_blob && fail "events printed blobs"
# Appending the same input again changes nothing (derived ids, newest wins).
"$strata" datagen append "$s" "$input" > /dev/null
[[ $(events_of "$s" --root doc-1) -eq 9 ]] || fail "re-append duplicated events"

# checkpoint: rules checked for every checkpoint before any is written.
grep -v STEP_COMPLETED "$checkpoint" > "$work/nocompleted.jsonl"
expect_exit 1 "$strata" datagen checkpoint "$s" "$work/nocompleted.jsonl"
grep -q "checkpoint 1 (item 'doc-2/split:1'): .*requires exactly one STEP_COMPLETED event, found 0" \
  "$work/err" || fail "checkpoint without STEP_COMPLETED: $(cat "$work/err")"
grep TERMINAL "$input" | head -1 > "$work/terminal.jsonl"
cat "$checkpoint" "$work/terminal.jsonl" > "$work/mixed.jsonl"
expect_exit 1 "$strata" datagen checkpoint "$s" "$work/mixed.jsonl"
grep -q "may contain only FIELD_SET, FIELD_APPEND, and STEP_COMPLETED" "$work/err" \
  || fail "checkpoint with TERMINAL: $(cat "$work/err")"
[[ $(events_of "$s" --item doc-2/split:1) -eq 2 ]] || fail "a refused checkpoint wrote events"
out=$("$strata" datagen checkpoint "$s" "$checkpoint")
[[ $out == "appended 1 checkpoints (3 events) to shard 'default'; version "* ]] || fail "checkpoint: $out"
[[ $(events_of "$s" --item doc-2/split:1) -eq 5 ]] || fail "checkpoint events"

# fold, tree, failures, overview, status.
out=$("$strata" datagen fold "$s" doc-1)
[[ $out == '{"item_id":"doc-1","root_item_id":"doc-1","parent_item_id":null,"status":"completed","last_item_seq":6,'* ]] \
  || fail "fold doc-1: $out"
grep -q '"answer":{"set":"Paris"}' <<< "$out" || fail "fold fields: $out"
grep -q '"query_tags":{"lang":"en"}' <<< "$out" || fail "fold tags: $out"
out=$("$strata" datagen fold "$s" doc-2/split:1)
grep -q '"verdicts":{"append":\[{"ok":true}\]}' <<< "$out" || fail "fold append: $out"
grep -q '"last_attempt":1' <<< "$out" || fail "fold attempt: $out"
expect_exit 1 "$strata" datagen fold "$s" doc-9
grep -q "item 'doc-9' never started" "$work/err" || fail "fold never started: $(cat "$work/err")"
out=$("$strata" datagen tree "$s" doc-1)
[[ $out == '{"roots":["doc-1"],"nodes":{"doc-1":{'* ]] || fail "tree: $out"
grep -q '"children":\["doc-1/split:0"\]' <<< "$out" || fail "tree children: $out"
[[ $("$strata" datagen failures "$s" --format jsonl | wc -l) -eq 2 ]] || fail "failures"
[[ $("$strata" datagen failures "$s" --run run-b --format jsonl | wc -l) -eq 1 ]] || fail "failures --run"
out=$("$strata" datagen failures "$s" --item doc-2)
[[ $out == '{"at":{"step_name":"gen","step_kind":"leaf","step_index":0,"item_seq":2},"run_id":"run-a","attempt":0,"error_type":"Timeout",'* ]] \
  || fail "failures --item: $out"
out=$("$strata" datagen overview "$s")
[[ $out == '{"items":2,"running":0,"completed":1,"filtered":1,"failures":2,"failures_by_error_type":{"Timeout":1,"ValueError":1},'* ]] \
  || fail "overview: $out"
grep -q '"completed_steps":{"gen":2,"judge":2}' <<< "$out" || fail "overview steps: $out"
grep -q '"run-b":{"failures":1,"failures_by_error_type":{"ValueError":1},"sample_root_item_ids":\["doc-2"\]}' \
  <<< "$out" || fail "overview runs: $out"
expect_exit 1 "$strata" datagen events "$s"
grep -q "give exactly one of --item and --root" "$work/err" || fail "events without a selector"
expect_output_error "$strata" datagen overview "$s"
expect_output_error "$strata" datagen events "$s" --root doc-1 --format jsonl
out=$("$strata" datagen status "$s" doc-1 doc-2 doc-9)
[[ $out == '{"doc-1":"completed","doc-2":"filtered","doc-9":null}' ]] || fail "status: $out"

# blob: the bytes of the image field's event, before and after a merge.
blob_id=$("$strata" datagen fold "$s" doc-1 | sed 's/.*"blob_event_ids":{"image":"\([^"]*\)".*/\1/')
"$strata" datagen blob "$s" "$blob_id" | od -An -tx1 | tr -d ' \n' > "$work/blob"
[[ $(cat "$work/blob") == 89504e470d0a1a0a ]] || fail "blob bytes: $(cat "$work/blob")"
expect_exit 1 "$strata" datagen blob "$s" no-such-event
grep -q "no blob event 'no-such-event'" "$work/err" || fail "missing blob: $(cat "$work/err")"

# Maintenance: merge folds the pending generations into the base; reads are unchanged.
before=$("$strata" datagen overview "$s")
out=$("$strata" datagen merge "$s" --all)
[[ $out == "merged 3 generations (19 events) of shard 'default' -> version "* ]] || fail "merge: $out"
out=$("$strata" datagen stats "$s")
[[ $out == '{"base_events":19,"generation_events":0,"fragments":'* ]] || fail "stats: $out"
[[ $("$strata" datagen overview "$s") == "$before" ]] || fail "overview changed by the merge"
"$strata" datagen blob "$s" "$blob_id" -o "$work/blob.bin" 2> /dev/null
[[ $(od -An -tx1 "$work/blob.bin" | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "blob after merge"
"$strata" datagen merge "$s" | grep -q "^nothing to merge" || fail "second merge"
"$strata" datagen compact "$s" > /dev/null
out=$("$strata" datagen flush "$s")
[[ $out == "nothing to flush in shard 'default'; 0 generations pending" ]] || fail "flush: $out"
[[ $("$strata" datagen overview "$s") == "$before" ]] || fail "overview changed by compaction"

# Other kinds of store and plain tables are refused, and a datagen store is not a rollout store.
"$strata" rollout add "$work/rollouts" "$examples/rollout-records.jsonl" > /dev/null
expect_exit 1 "$strata" datagen append "$work/rollouts" "$input"
grep -q "not a datagen store: it holds a rollout store" "$work/err" \
  || fail "append to a rollout store: $(cat "$work/err")"
expect_exit 1 "$strata" datagen overview "$work/rollouts"
grep -q "not a datagen store" "$work/err" || fail "overview of a rollout store: $(cat "$work/err")"
"$strata" table create "$work/tbl" --schema '{"fields":[{"name":"id","type":"utf8","nullable":false}]}' \
  --primary-key id > /dev/null
expect_exit 1 "$strata" datagen append "$work/tbl" "$input"
grep -q "not a datagen store: it holds a plain table" "$work/err" \
  || fail "append to a table: $(cat "$work/err")"
expect_exit 1 "$strata" rollout list "$s"
grep -q "not a rollout store" "$work/err" || fail "rollout list of a datagen store: $(cat "$work/err")"
expect_exit 1 "$strata" datagen overview "$work/none"

echo "cli datagen: all checks passed"
