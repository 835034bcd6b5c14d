#!/usr/bin/env bash
# End-to-end checks of `strata context`: create with its options, add from
# examples/context-memory.jsonl (bad input writes nothing), the visibility rules through list
# (expired, contradicted, --include-*), get by id and external id, update and delete with
# their exit statuses, upsert, related, search, retrieve with both text scorings, stats, merge,
# snapshots, forks and checkouts, the relationships migration, external payloads (put, fetch)
# and stores of another kind refused.
set -euo pipefail
strata=$1
examples=$2
source "$(dirname "$0")/../../tests/support/cli_lib.sh"
input=$examples/context-memory.jsonl
s=$work/mem
ids() { sed -n 's/.*"id":"\([^"]*\)".*/\1/p'; }

# Bad options create nothing.
expect_exit 1 "$strata" context create "$s" --dim 0
grep -q "embedding_dim must be positive, got 0" "$work/err" || fail "dim 0: $(cat "$work/err")"
expect_exit 1 "$strata" context create "$s" --metric manhattan
grep -q "invalid distance metric 'manhattan'" "$work/err" || fail "metric: $(cat "$work/err")"
[[ ! -e $s ]] || fail "a bad create made $s"
expect_exit 1 "$strata" context list "$s"
grep -q "no context store at '$s'" "$work/err" || fail "list of nothing: $(cat "$work/err")"

out=$("$strata" context create "$s" --dim 4 --metric cosine)
[[ $out == "created context store $s (embedding dim 4, metric cosine)" ]] || fail "create: $out"
expect_exit 1 "$strata" context create "$s" --dim 4
grep -q "already there" "$work/err" || fail "create twice: $(cat "$work/err")"

# Bad input writes nothing: a short embedding, a reserved content type.
printf '{"id":"x","embedding":[1,2]}\n' > "$work/short.jsonl"
expect_exit 1 "$strata" context add "$s" "$input" "$work/short.jsonl"
grep -q "column .embedding.: expected fixed_size_list<item: float32>\[4\], found array of 2 elements" "$work/err" \
  || fail "short embedding: $(cat "$work/err")"
printf '{"id":"x","content_type":"application/vnd.strata.tombstone"}\n' > "$work/tomb.jsonl"
expect_exit 1 "$strata" context add "$s" "$work/tomb.jsonl"
grep -q "is reserved for internal tombstones" "$work/err" || fail "tombstone: $(cat "$work/err")"
[[ $("$strata" context list "$s" | wc -l) -eq 0 ]] || fail "bad input wrote rows"

out=$("$strata" context add "$s" "$input")
[[ $out == "added 8 records: visible now" ]] || fail "add: $out"
expect_exit 1 "$strata" context add "$s" "$input"
grep -q "id 'mem-001' already exists" "$work/err" || fail "add twice: $(cat "$work/err")"

# Visibility: mem-007 expired on 2026-12-02, mem-008 is contradicted (still visible).
listed=$("$strata" context list "$s" | ids | tr '\n' ' ')
[[ $listed == "mem-001 mem-002 mem-003 mem-004 mem-005 mem-006 mem-008 " ]] \
  || fail "list: $listed"
[[ $("$strata" context list "$s" --include-expired | wc -l) -eq 8 ]] || fail "include-expired"
[[ $("$strata" context list "$s" --limit 2 --offset 1 | ids | tr '\n' ' ') == "mem-002 mem-003 " ]] \
  || fail "paging"
[[ $("$strata" context list "$s" --filter '{"bot_id":"coder"}' | ids | tr '\n' ' ') \
  == "mem-005 mem-006 " ]] || fail "filter bot_id"
[[ $("$strata" context list "$s" --filter '{"tags":{"contains":"europe"}}' | ids) == "mem-003" ]] \
  || fail "filter metadata contains"
expect_exit 1 "$strata" context list "$s" --filter '{"created_at":{"gt":"2026-01-01"}}'
grep -q "unsupported created_at filter operator 'gt'" "$work/err" || fail "filter: $(cat "$work/err")"
"$strata" context list "$s" --no-embedding | grep -q embedding && fail "--no-embedding printed one"

# Point reads.
[[ $("$strata" context get "$s" --external-id pref:language | ids) == "mem-001" ]] || fail "get ext"
"$strata" context get "$s" --id mem-003 | grep -q '"metadata":{"tags":\["europe","capitals"\],"topic":"geography"}' \
  || fail "metadata printed as JSON"
expect_exit 1 "$strata" context get "$s" --id mem-007
expect_exit 1 "$strata" context get "$s" --id mem-001 --external-id pref:language
grep -q "exactly one of --id and --external-id" "$work/err" || fail "two keys: $(cat "$work/err")"

# Update writes a new version that hides the old one; content is not patchable.
expect_exit 1 "$strata" context update "$s" --id mem-003 --patch '{"text_payload":"x"}'
grep -q "'text_payload' cannot be updated" "$work/err" || fail "patch content: $(cat "$work/err")"
expect_exit 1 "$strata" context update "$s" --id nope --patch '{"bot_id":"b"}'
updated=$("$strata" context update "$s" --external-id pref:language \
  --patch '{"metadata":{"topic":"preferences","lang":"fr"}}')
echo "$updated" | grep -q '"supersedes_id":"mem-001"' || fail "update: $updated"
echo "$updated" | grep -q '"replaced_id":"mem-001"' || fail "update result: $updated"
expect_exit 1 "$strata" context get "$s" --id mem-001
"$strata" context get "$s" --external-id pref:language | grep -q '"lang":"fr"' || fail "new version"

# Upsert by external id: one replaces, one inserts; all or nothing.
printf '{"id":"mem-101","external_id":"note:deadline","text_payload":"moved"}\n{"id":"mem-102","external_id":"new"}\n' \
  > "$work/up.jsonl"
expect_exit 1 "$strata" context upsert "$s" "$work/up.jsonl"
grep -q "external_id 'note:deadline' already exists" "$work/err" || fail "upsert: $(cat "$work/err")"
printf '{"id":"mem-101","external_id":"pref:language","text_payload":"English again"}\n{"id":"mem-102","external_id":"new"}\n' \
  > "$work/up.jsonl"
out=$("$strata" context upsert "$s" "$work/up.jsonl")
echo "$out" | head -1 | grep -q '"inserted":false' || fail "upsert replace: $out"
echo "$out" | tail -1 | grep -q '"inserted":true' || fail "upsert insert: $out"

# Delete: a tombstone hides the record; a second delete finds nothing.
[[ $("$strata" context delete "$s" --id mem-002) == "deleted" ]] || fail "delete"
expect_exit 1 "$strata" context delete "$s" --id mem-002
expect_exit 1 "$strata" context get "$s" --id mem-002

# Related, search, retrieve.
[[ $("$strata" context related "$s" mem-003 | ids) == "mem-004" ]] || fail "related"
[[ $("$strata" context related "$s" mem-005 --relation cites | wc -l) -eq 0 ]] || fail "relation"
top=$("$strata" context search "$s" --vector '[0.1, 0.9, 0.1, 0.0]' --limit 2 | ids | tr '\n' ' ')
[[ $top == "mem-003 mem-008 " ]] || fail "search: $top"
top=$("$strata" context search "$s" --vector '[0.1, 0.9, 0.1, 0.0]' --limit 2 --exact | ids | tr '\n' ' ')
[[ $top == "mem-003 mem-008 " ]] || fail "search --exact: $top"
expect_exit 1 "$strata" context search "$s" --vector '[1, 0]'
grep -q "query length 2 does not match embedding dimension 4" "$work/err" \
  || fail "search dim: $(cat "$work/err")"
first=$("$strata" context retrieve "$s" --text "linker error" --limit 1 | ids)
[[ $first == "mem-005" || $first == "mem-006" ]] || fail "retrieve text: $first"
"$strata" context retrieve "$s" --text "linker error" --scoring overlap --limit 1 \
  | grep -q '"text_score":1.0' || fail "overlap score"
"$strata" context retrieve "$s" --text "capital" --vector '[0.1, 0.9, 0.1, 0.0]' --limit 1 \
  | grep -q '"matched_channels":\["vector","text"\]' || fail "both channels"
expect_exit 1 "$strata" context retrieve "$s"
grep -q "retrieve requires text or vector" "$work/err" || fail "retrieve: $(cat "$work/err")"

# Stats and maintenance; the reads are the same after a merge.
before=$("$strata" context list "$s")
"$strata" context stats "$s" | grep -q '"embedding_dim":4' || fail "stats"
"$strata" context merge "$s" > /dev/null
[[ $("$strata" context list "$s") == "$before" ]] || fail "merge changed the reads"

# Snapshots, forks and checkouts: a snapshot keeps what readers saw; a branch is written to
# on its own; --branch / --snapshot / --version select where a command works.
snap=$("$strata" context snapshot "$s" before-fork)
[[ $snap == *'"label":"before-fork"'* ]] || fail "snapshot: $snap"
expect_exit 1 "$strata" context snapshot "$s" before-fork
grep -q "already exists" "$work/err" || fail "snapshot twice: $(cat "$work/err")"
expect_exit 1 "$strata" context snapshot "$s" "bad/label"
expect_exit 1 "$strata" context snapshot "$s"
grep -q "give one of LABEL, --list and --delete LABEL" "$work/err" || fail "no label"
[[ $("$strata" context snapshot "$s" --list) == *'"label":"before-fork"'* ]] || fail "snapshot --list"
fork=$("$strata" context fork "$s" trial)
[[ $fork == *'"branch":"trial"'* ]] || fail "fork: $fork"
printf '{"id":"branch-only","text_payload":"only on the branch","embedding":[0,0,1,0]}\n' \
  > "$work/branch.jsonl"
"$strata" context add "$s" "$work/branch.jsonl" --branch trial > /dev/null
"$strata" context get "$s" --id branch-only --branch trial | grep -q branch-only || fail "branch get"
expect_exit 1 "$strata" context get "$s" --id branch-only
"$strata" context delete "$s" --id mem-003 > /dev/null
expect_exit 1 "$strata" context get "$s" --id mem-003
"$strata" context get "$s" --id mem-003 --branch trial > /dev/null || fail "parent delete on branch"
"$strata" context get "$s" --id mem-003 --snapshot before-fork > /dev/null || fail "snapshot get"
[[ $("$strata" context checkout "$s" --snapshot before-fork 2> "$work/summary") == "$before" ]] \
  || fail "checkout of the snapshot differs from the list before it"
grep -q "snapshot before-fork, base version" "$work/summary" || fail "summary: $(cat "$work/summary")"
[[ $("$strata" context checkout "$s" --branch trial 2> /dev/null | ids | grep -c .) -eq \
   $(( $(echo "$before" | grep -c .) + 1 )) ]] || fail "checkout --branch"
expect_exit 1 "$strata" context checkout "$s"
expect_exit 1 "$strata" context add "$s" "$work/branch.jsonl" --branch nope
grep -q "no branch 'nope'" "$work/err" || fail "missing branch: $(cat "$work/err")"
"$strata" context search "$s" --branch trial --vector '[0, 0, 1, 0]' --limit 1 | ids \
  | grep -qx branch-only || fail "search on the branch"
[[ $("$strata" context fork "$s" --list) == *'"branch":"trial"'* ]] || fail "fork --list"
"$strata" context fork "$s" --delete trial > /dev/null
[[ -z $("$strata" context fork "$s" --list) ]] || fail "branch not deleted"
"$strata" context snapshot "$s" --delete before-fork > /dev/null
expect_exit 1 "$strata" context checkout "$s" --snapshot before-fork

# The relationships migration: a store made by `create` has the column already.
[[ $("$strata" context migrate-relationships "$s") == "the relationships column is already there" ]] \
  || fail "migrate-relationships"
expect_exit 1 "$strata" context migrate-relationships "$s" --branch nope
grep -q "no branch 'nope'" "$work/err" || fail "migrate on a missing branch: $(cat "$work/err")"

# External payloads: put prints the length and stores the bytes under the store's _payloads/;
# fetch writes the bytes a visible record's payload_uri names.
printf 'raw\000bytes' > "$work/payload.bin"
[[ $("$strata" context put-payload "$s" docs/p.bin "$work/payload.bin") == 9 ]] || fail "put-payload"
cmp -s "$work/payload.bin" "$s/_payloads/docs/p.bin" || fail "payload not under the store"
[[ $("$strata" context put-payload "$s" docs/p.bin - < "$work/payload.bin") == 9 ]] \
  || fail "a retried put-payload"
expect_exit 1 "$strata" context put-payload "$s" docs/p.bin "$work/short.jsonl"
grep -q "payload 'docs/p.bin' already exists with other content (9 bytes); payloads are immutable" \
  "$work/err" || fail "put-payload over another: $(cat "$work/err")"
expect_exit 1 "$strata" context put-payload "$s" ../escape "$work/payload.bin"
grep -q "invalid payload uri '../escape'" "$work/err" || fail "bad uri: $(cat "$work/err")"
printf '{"id":"with-payload","payload_uri":"docs/p.bin","payload_size":9}\n' > "$work/p.jsonl"
"$strata" context add "$s" "$work/p.jsonl" > /dev/null
"$strata" context fetch-payload "$s" --id with-payload > "$work/stdout.bin"
cmp -s "$work/payload.bin" "$work/stdout.bin" || fail "fetch-payload to stdout"
"$strata" context fetch-payload "$s" --id with-payload --output "$work/fetched.bin" 2> "$work/err"
cmp -s "$work/payload.bin" "$work/fetched.bin" || fail "fetch-payload --output"
grep -q "wrote 9 bytes to $work/fetched.bin" "$work/err" || fail "fetch summary: $(cat "$work/err")"
expect_exit 1 "$strata" context fetch-payload "$s" --id nope
grep -q "no visible record 'nope'" "$work/err" || fail "fetch of nothing: $(cat "$work/err")"
[[ ! -s $work/out ]] || fail "fetch of nothing printed bytes"
expect_exit 1 "$strata" context fetch-payload "$s" --id mem-004
grep -q "record 'mem-004' has no external payload reference to fetch" "$work/err" \
  || fail "fetch without payload_uri: $(cat "$work/err")"

# Another kind of store is refused without change.
g=$work/generic
"$strata" generic create "$g" --schema "$examples/generic.spec.json" > /dev/null
expect_exit 1 "$strata" context list "$g"
grep -q "not a context store: it is a generic store" "$work/err" || fail "kind: $(cat "$work/err")"
echo "context CLI: ok"
