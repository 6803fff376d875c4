#!/bin/sh
# DEL, EXPIRE and PERSIST coordinated by a replica whose own copy is stale
# (it missed the key's latest write) are decided against the quorum read,
# not against that copy: 3 nodes on 127.0.0.1, rf 3, r = w = 2, run once
# with conflicts siblings and once with conflicts lww.
#
#   - d2, e1 and p1 (with an expiry) written through n1 and held by all 3;
#   - n3 stopped (SIGSTOP) and seen down; through n1: d1 written for the
#     first time, e1 and p1 written again (p1 with another expiry): n1 and
#     n2 hold them, n1 keeps hints for n3;
#   - n1 stopped in turn, n3 continued: n3 holds nothing of d1 and the old
#     e1 and p1, and the hints for it wait on n1.  Through n3, with n1 seen
#     down (the quorum is n3 and n2): `DEL d1 d2 d3` answers 2 (d1 and d2
#     held a value, d3 none), `EXPIRE e1 1000` and `PERSIST p1` answer 1;
#   - n1 continued, every hint delivered: through every node GET d1 and d2
#     are nil, e1 is the new value with a TTL of about 1000 s, p1 the new
#     value with no expiry (TTL -1); `ringkv replicas` shows each key the
#     same on all 3 replicas, one sibling each, d1 and d2 tombstones.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

DOWN_S=$(it_rounds_s $((IT_DOWN_ROUNDS * 2)))
# A node continued after SIGSTOP has its pause in every member's arrival history, which
# slows its detector's first finding (8.4 s for n1 on a loaded machine): twice the bound.
BACK_S=$((DOWN_S * 2))

hints_total() { it_hints_total n1 n2 n3; }
wait_no_hints() { it_wait_no_hints "$1" n1 n2 n3; }
# json_get EXPR: the Python expression EXPR over the JSON document on stdin (j).
json_get() { python3 -c 'import json, sys; j = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# replicas KEY: `ringkv replicas --json KEY` through n2
replicas() { "$RINGKV" -H "127.0.0.1:$N2_CLIENT" replicas --json "$1"; }
# state WHO STATE MEMBER: node WHO sees MEMBER in STATE
state() { it_ask state "$2" "$3" "$(it_var "$1" CLIENT)"; }
# sees WHO ID=STATE...: node WHO sees each member ID in its STATE, all in one look (a node
# continued after SIGSTOP sees every member down for a moment, then up, before the
# detector finds again the one that is stopped)
sees() {
    who=$1
    shift
    "$RINGKV" -H "127.0.0.1:$(it_var "$who" CLIENT)" members --json | python3 -c '
import json, sys
seen = {m["id"]: m["state"] for m in json.load(sys.stdin)["members"]}
sys.exit(any(seen.get(w.split("=")[0]) != w.split("=")[1] for w in sys.argv[1:]))' "$@"
}
run() { # run MODE: the whole scenario on a fresh cluster with conflicts MODE
    mode=$1
    it_cluster 3 --conflicts "$mode"
    # shellcheck disable=SC2046 # one port a word
    IT_WAIT=60 it_wait it_ask converged 3 $(it_ports 3) || it_fail "$mode: 3 nodes did not converge"
    it_expect_eq "$mode: SET d2" "$(it_cli n1 SET d2 gone)" OK
    it_expect_eq "$mode: SET e1" "$(it_cli n1 SET e1 old-e)" OK
    it_expect_eq "$mode: SET p1 EX 5000" "$(it_cli n1 SET p1 old-p EX 5000)" OK
    for k in d2 e1 p1; do
        it_wait replicas $k > /dev/null || it_fail "$mode: the replicas of $k never agreed: $(replicas $k)"
    done

    kill -STOP "$N3_PID"
    IT_WAIT=$DOWN_S it_wait state n1 down n3 || it_fail "$mode: n1 never saw n3 down"
    IT_WAIT=$DOWN_S it_wait state n2 down n3 || it_fail "$mode: n2 never saw n3 down"
    it_expect_eq "$mode: SET d1 with n3 stopped" "$(it_cli n1 SET d1 live)" OK
    it_expect_eq "$mode: SET e1 with n3 stopped" "$(it_cli n1 SET e1 new-e)" OK
    it_expect_eq "$mode: SET p1 EX 4000 with n3 stopped" "$(it_cli n1 SET p1 new-p EX 4000)" OK

    kill -STOP "$N1_PID"
    kill -CONT "$N3_PID"
    IT_WAIT=$BACK_S it_wait sees n3 n1=down n2=alive || it_fail "$mode: n3 never saw n1 down, n2 up"
    IT_WAIT=$BACK_S it_wait sees n2 n1=down n3=alive || it_fail "$mode: n2 never saw n1 down, n3 up"
    got=$(replicas d1 | json_get "[(r['node'], r['present']) for r in j['replicas'] if r['node'] == 'n3']")
    it_expect_eq "$mode: n3's copy of d1 before the DEL" "$got" "[('n3', False)]"
    it_expect_eq "$mode: DEL d1 d2 d3 through n3 (stale)" "$(it_cli n3 DEL d1 d2 d3 2>&1)" 2
    it_expect_eq "$mode: EXPIRE e1 1000 through n3 (stale)" "$(it_cli n3 EXPIRE e1 1000 2>&1)" 1
    it_expect_eq "$mode: PERSIST p1 through n3 (stale)" "$(it_cli n3 PERSIST p1 2>&1)" 1

    kill -CONT "$N1_PID"
    # shellcheck disable=SC2046 # one port a word
    IT_WAIT=60 it_wait it_ask converged 3 $(it_ports 3) || it_fail "$mode: n1 did not come back"
    wait_no_hints "$mode"
    for n in n1 n2 n3; do
        it_expect_eq "$mode: GET d1 through $n" "$(it_cli $n GET d1 2>&1)" ""
        it_expect_eq "$mode: GET d2 through $n" "$(it_cli $n GET d2 2>&1)" ""
        it_expect_eq "$mode: GET e1 through $n" "$(it_cli $n GET e1 2>&1)" new-e
        it_expect_eq "$mode: GET p1 through $n" "$(it_cli $n GET p1 2>&1)" new-p
        ttl=$(it_cli $n TTL e1 2>&1)
        case $ttl in 9[0-9][0-9] | 1000) ;; *) it_fail "$mode: TTL e1 through $n: '$ttl', want 900..1000" ;; esac
        it_expect_eq "$mode: TTL p1 through $n" "$(it_cli $n TTL p1 2>&1)" -1
        it_expect_eq "$mode: KGET d1 R 3 through $n: the context alone, no value" \
            "$(it_cli $n KGET d1 R 3 | sed 1d | tr -d '\r\n')" ""
    done
    for k in d1 d2 e1 p1; do
        replicas $k > "$IT_DIR/$mode.$k.json" || it_fail "$mode: the replicas of $k disagree: $(cat "$IT_DIR/$mode.$k.json")"
        want=False
        case $k in d*) want=True ;; esac
        it_expect_eq "$mode: $k on each replica: answered, siblings, tombstone" \
            "$(json_get "sorted(set((r['answered'], r['siblings'], r['tombstone']) for r in j['replicas']))" < "$IT_DIR/$mode.$k.json")" \
            "[(True, 1, $want)]"
    done
    it_log "$mode: DEL, EXPIRE and PERSIST through a stale replica superseded the latest writes"
    for n in n1 n2 n3; do it_stop $n TERM; done
    for n in n1 n2 n3; do
        it_setvar $n DATA "$IT_DIR/$n.lww"
        it_setvar $n CLIENT ""
        it_setvar $n PEER ""
    done
}

run siblings
run lww
it_pass "DEL, EXPIRE and PERSIST decided against the quorum read, siblings and lww"
