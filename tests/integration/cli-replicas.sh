#!/bin/sh
# `ringkv replicas KEY` and `ringkv hints` against 3 real nodes on 127.0.0.1
# (3 racks, rf 3, r = w = 2, sloppy on):
#
#   - a key written through n1: `replicas --json` through n2 shows its 3
#     replicas, each up, answered and present with the same vclock and
#     digest ("agree": true, exit 0), and the table says all 3 agree;
#     `hints --all` asks all 3 nodes (exit 0), none holds a hint, and
#     `replicas` shows 0 hints held elsewhere for each replica (3 nodes
#     asked, 3 answered);
#   - n3 stopped (SIGSTOP); once n1 and n2 see it down, the key written
#     again through n1 (which coordinates: every node is a replica): the
#     write is acknowledged by n1 and n2, `replicas` shows n3 up false and
#     not answered (exit 3) and the others agreeing on the new digest, and
#     `hints --json` on n1 shows a backlog for n3, which it sees down, and
#     `replicas` shows that hint held elsewhere for n3 (column "hints",
#     field `hints`; n3, down, not asked: 2 of 3 nodes answered);
#   - n3 continued (SIGCONT): within HANDOFF_S the backlog on n1 is 0 and
#     the 3 replicas agree again, on the new value, with 0 hints held
#     elsewhere for any of them.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

# Hints go out once a second to a target seen up again (README: Replication); the
# bound is that, the detector seeing n3 alive again and a loaded 2-core machine.
HANDOFF_S=30

# json_get EXPR: evaluate the Python expression EXPR over the JSON document on stdin (j).
json_get() { python3 -c 'import json, sys; j = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# on NODE VERB ARGS...: the CLI against NODE's client port
on() {
    node=$1
    shift
    "$RINGKV" -H "127.0.0.1:$(it_var "$node" CLIENT)" "$@"
}
# backlog NODE TARGET: the hints NODE holds for TARGET (0 when none)
backlog() {
    on "$1" hints --json | json_get "sum(t['hints'] for n in j['nodes'] for t in n['targets'] if t['target'] == '$2')"
}
agree() { on n2 replicas --json cr1 | json_get "j['agree']" | grep -qx True; }

it_cluster 3
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"

# 1. all replicas present, one digest
it_expect_eq "SET cr1 through n1" "$(it_cli n1 SET cr1 first-value)" OK
on n2 replicas --json cr1 > "$IT_DIR/r1.json"
rc=$?
it_expect_eq "replicas exit code with every replica up" "$rc" 0
it_expect_eq "key" "$(json_get "j['key']" < "$IT_DIR/r1.json")" cr1
it_expect_eq "replicas" "$(json_get "sorted(r['node'] for r in j['replicas'])" < "$IT_DIR/r1.json")" \
    "['n1', 'n2', 'n3']"
it_expect_eq "up, answered, present, not tombstones" \
    "$(json_get "[(r['up'], r['answered'], r['present'], r['tombstone']) for r in j['replicas']]" < "$IT_DIR/r1.json")" \
    "[(True, True, True, False), (True, True, True, False), (True, True, True, False)]"
it_expect_eq "digests and vclocks" \
    "$(json_get "len(set((r['digest'], r['vclock']) for r in j['replicas']))" < "$IT_DIR/r1.json")" 1
it_expect_eq "value size" "$(json_get "[r['value_size'] for r in j['replicas']]" < "$IT_DIR/r1.json")" \
    "[11, 11, 11]"
it_expect_eq "agree" "$(json_get "j['agree']" < "$IT_DIR/r1.json")" True
digest1=$(json_get "j['replicas'][0]['digest']" < "$IT_DIR/r1.json")
on n2 replicas cr1 > "$IT_DIR/r1.txt" || it_fail "replicas (table) exit $?"
grep -q "^all 3 replicas agree: vclock .*, digest $digest1, 11 B$" "$IT_DIR/r1.txt" ||
    it_fail "no verdict 'all 3 replicas agree' in: $(cat "$IT_DIR/r1.txt")"
on n1 hints --all --json > "$IT_DIR/h1.json"
rc=$?
it_expect_eq "hints --all exit code with every node up" "$rc" 0
it_expect_eq "hints --all: nodes that answered" \
    "$(json_get "sorted(n['node'] for n in j['nodes'] if n['answered'])" < "$IT_DIR/h1.json")" \
    "['n1', 'n2', 'n3']"
it_expect_eq "hints --all: total" "$(json_get "j['hints']" < "$IT_DIR/h1.json")" 0
it_expect_eq "replicas: hints held elsewhere, nodes asked and answered" \
    "$(json_get "([r['hints'] for r in j['replicas']], j['hints_nodes'], j['hints_answered'])" < "$IT_DIR/r1.json")" \
    "([0, 0, 0], 3, 3)"
it_log "cr1 on its 3 replicas with digest $digest1; no hints anywhere"

# 2. n3 stopped: not answered, and a backlog for it on the coordinator
kill -STOP "$(it_var n3 PID)"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait it_ask state down n3 \
    "$(it_var n1 CLIENT)" "$(it_var n2 CLIENT)" || it_fail "n1 and n2 never saw n3 down"
it_expect_eq "SET cr1 through n1 with n3 stopped" "$(it_cli n1 SET cr1 second-value-)" OK
on n1 replicas --json cr1 > "$IT_DIR/r2.json"
rc=$?
it_expect_eq "replicas exit code with n3 stopped" "$rc" 3
it_expect_eq "n3: up, answered" \
    "$(json_get "[(r['up'], r['answered']) for r in j['replicas'] if r['node'] == 'n3']" < "$IT_DIR/r2.json")" \
    "[(False, False)]"
it_expect_eq "n1 and n2: one digest, of 13 bytes" \
    "$(json_get "sorted(set((r['digest'], r['value_size']) for r in j['replicas'] if r['node'] != 'n3'))" < "$IT_DIR/r2.json" | sed 's/[0-9a-f]\{16\}/D/')" \
    "[('D', 13)]"
digest2=$(json_get "[r['digest'] for r in j['replicas'] if r['node'] == 'n1'][0]" < "$IT_DIR/r2.json")
[ "$digest2" != "$digest1" ] || it_fail "the new value has the old digest $digest1"
it_expect_eq "agree with n3 stopped" "$(json_get "j['agree']" < "$IT_DIR/r2.json")" False
on n1 replicas cr1 > "$IT_DIR/r2.txt"
grep -q "^  n3: did not answer$" "$IT_DIR/r2.txt" || it_fail "the table does not say n3 did not answer: $(cat "$IT_DIR/r2.txt")"
it_expect_eq "replicas with n3 stopped: hints held elsewhere for n1, n2, n3; nodes asked, answered" \
    "$(json_get "([sum(r['hints'] for r in j['replicas'] if r['node'] == n) for n in ('n1', 'n2', 'n3')], j['hints_nodes'], j['hints_answered'])" < "$IT_DIR/r2.json")" \
    "([0, 0, 1], 3, 2)"
grep -Eq "^n3 .* 1$" "$IT_DIR/r2.txt" || it_fail "the table's row of n3 does not end with its 1 hint: $(cat "$IT_DIR/r2.txt")"
grep -q "^hints: 2 of 3 nodes answered" "$IT_DIR/r2.txt" ||
    it_fail "the table does not say 2 of 3 nodes answered for hints: $(cat "$IT_DIR/r2.txt")"
on n1 hints --json > "$IT_DIR/h2.json"
rc=$?
it_expect_eq "hints exit code on n1" "$rc" 0
it_expect_eq "n1's hints for n3: the node, its view of n3" \
    "$(json_get "[(n['node'], t['up']) for n in j['nodes'] for t in n['targets'] if t['target'] == 'n3']" < "$IT_DIR/h2.json")" \
    "[('n1', False)]"
held=$(backlog n1 n3)
[ "$held" -ge 1 ] || it_fail "n1 holds no hint for n3: $(cat "$IT_DIR/h2.json")"
on n1 hints | grep -Eq "^n1 +n3 +$held +down$" || it_fail "the hints table has no row 'n1 n3 $held down': $(on n1 hints)"
on n1 -t 1 hints --all > "$IT_DIR/h3.txt"
rc=$?
it_expect_eq "hints --all exit code with n3 stopped" "$rc" 3
grep -q "^n3 (127.0.0.1:$(it_var n3 CLIENT)): " "$IT_DIR/h3.txt" || it_fail "hints --all does not name n3 as silent: $(cat "$IT_DIR/h3.txt")"
it_log "n3 stopped: replicas shows it silent (exit 3), n1 holds $held hint(s) for it"

# 3. n3 continued: the backlog is delivered and the replicas agree
kill -CONT "$(it_var n3 PID)"
deadline=$(($(date +%s) + HANDOFF_S))
while [ "$(backlog n1 n3)" != 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || it_fail "n1 still holds $(backlog n1 n3) hint(s) for n3 after $HANDOFF_S s"
    sleep 0.2
done
IT_WAIT=$HANDOFF_S it_wait agree || it_fail "the replicas do not agree after the handoff: $(on n2 replicas cr1)"
on n2 replicas --json cr1 > "$IT_DIR/r3.json" || it_fail "replicas exit $? after SIGCONT"
it_expect_eq "digests after the handoff" \
    "$(json_get "sorted(set(r['digest'] for r in j['replicas']))" < "$IT_DIR/r3.json")" "['$digest2']"
it_expect_eq "hints held elsewhere after the handoff" \
    "$(json_get "[r['hints'] for r in j['replicas']]" < "$IT_DIR/r3.json")" \
    "[0, 0, 0]"
it_pass "replicas and hints show a stopped replica, its backlog, and the handoff"
