#!/bin/sh
# `ringkv transfers`, `ringkv leave` and `ringkv status` through a join and
# a leave, with real ringkvd processes:
#
#   - 3 nodes (rf 3, one token each) hold 1200 keys of 1 KiB; a 4th (one
#     token) starts with --handoff-rate 64KB, so its join lasts several
#     seconds and each arc it gains takes more than one batch (256 KiB) a
#     few seconds apart: a transfer shows keys while it streams, for
#     seconds, not only in the moment between an arc's one batch and its
#     end (with 256 tokens the join could end between two looks): `ringkv
#     transfers --json` on it shows incoming transfers (from one of the
#     three, to n4, with keys), `ringkv status` shows it joining (UJ) and
#     "converged  no (a change is under way)", and `ringkv transfers
#     --watch 120` exits 0 once the join is done;
#   - `ringkv status --wait converged` then returns 0 with n4 normal;
#   - `ringkv leave` refuses an unknown member (exit 1, one line);
#     `ringkv leave --dry-run n4` prints the figures (arcs, keys, each
#     member's share before and after) and changes nothing;
#     `ringkv leave n4`, asked of n1, makes n4 leave: n4 turns leaving,
#     hands its arcs over and exits 0; `ringkv status --wait converged` on
#     n1 returns 0, with n4 left and every key still readable.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
KEYS=1200
CONVERGE_S=$(it_rounds_s 60)
it_cluster 3 --tokens 1
it_wait_converged

# KEYS keys of 1 KiB through n1, in one pipe.
python3 - "$KEYS" > "$IT_DIR/load.resp" << 'EOF'
import sys
v = b"v" * 1024
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    k = b"key:%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
EOF
redis-cli -p "$N1_CLIENT" --pipe < "$IT_DIR/load.resp" > "$IT_DIR/load.out" 2>&1 ||
    it_fail "loading $KEYS keys: $(cat "$IT_DIR/load.out")"
grep -q "errors: 0, replies: $KEYS" "$IT_DIR/load.out" || it_fail "loading: $(cat "$IT_DIR/load.out")"
it_log "$KEYS keys of 1 KiB written"

# n4 joins at 64 KB/s.
it_setvar n4 PEER "$(it_free_port)"
it_node n4 --rack r1 --tokens 1 --seeds "127.0.0.1:$N1_PEER" --handoff-rate 64KB
it_wait_ping n4
N4="127.0.0.1:$N4_CLIENT"

# incoming: the JSON of RINGKV TRANSFERS on n4 names an incoming transfer with keys
incoming() {
    "$RINGKV" -H "$N4" transfers --json > "$IT_DIR/transfers.json" || return 1
    python3 - "$IT_DIR/transfers.json" << 'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
assert t["node"] == "n4" and t["status"] == "joining" and t["changing"] is True, t
assert isinstance(t["agreed"], bool) and t["ring"] != t["target"], t
rows = [x for x in t["transfers"] if x["direction"] == "in" and x["keys"] > 0]
assert rows, t
for x in rows:
    assert x["to"] == "n4" and x["from"] in ("n1", "n2", "n3"), x
    assert x["kind"] == "join" and x["state"] in ("checking", "streaming", "verifying"), x
    assert set(x) >= {"start", "end", "keys_total", "bytes", "rate_bps", "eta_s"}, x
EOF
}
IT_WAIT=30 it_wait incoming || it_fail "no incoming transfer with keys on n4: $(cat "$IT_DIR/transfers.json")"
it_log "transfers --json on n4: an incoming transfer with keys"

"$RINGKV" -H "$N4" transfers > "$IT_DIR/transfers.txt" || it_fail "ringkv transfers failed"
grep -q '^node n4 (joining): ring [0-9a-f]\{16\}, target [0-9a-f]\{16\}$' "$IT_DIR/transfers.txt" ||
    it_fail "transfers header: $(cat "$IT_DIR/transfers.txt")"
grep -q '^join  in ' "$IT_DIR/transfers.txt" || it_fail "no join row: $(cat "$IT_DIR/transfers.txt")"
rc=0
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" status > "$IT_DIR/status.txt" || rc=$?
it_expect_eq "exit status of status during the join" "$rc" 3
grep -q '^UJ  n4 ' "$IT_DIR/status.txt" || it_fail "n4 not shown joining: $(cat "$IT_DIR/status.txt")"
grep -qx 'converged  no (a change is under way)' "$IT_DIR/status.txt" ||
    it_fail "converged line during the join: $(cat "$IT_DIR/status.txt")"
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" status --json | grep -q '"target": "[0-9a-f]\{16\}"' ||
    it_fail "no target in status --json"
it_log "status during the join: n4 UJ, not converged while a change is under way"

start=$(date +%s)
rc=0
"$RINGKV" -H "$N4" transfers --watch 120 > "$IT_DIR/watch.txt" 2> "$IT_DIR/watch.err" || rc=$?
it_expect_eq "exit status of transfers --watch (join; $(tail -n 3 "$IT_DIR/watch.err"))" "$rc" 0
tail -n 3 "$IT_DIR/watch.txt" | grep -q '^no change under way$' ||
    it_fail "last frame of the watch: $(tail -n 5 "$IT_DIR/watch.txt")"
it_log "transfers --watch ended with the join after $(($(date +%s) - start)) s"

IT_WAIT=$CONVERGE_S
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" -t "$CONVERGE_S" status --wait converged > "$IT_DIR/status.txt" ||
    it_fail "status --wait converged after the join: $(cat "$IT_DIR/status.txt")"
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$CONVERGE_S it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"
it_ask status normal n4 $(it_ports 4) || it_fail "n4 is not normal everywhere"
[ "$(it_info_field n4 ringkv_handoff_keys_received)" -gt 0 ] || it_fail "n4 received no keys"
it_log "join done: 4 nodes converged, n4 normal"

# leave: refusals, then n4 through n1.
rc=0
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" leave nosuch > /dev/null 2> "$IT_DIR/leave.err" || rc=$?
it_expect_eq "exit status of leave nosuch" "$rc" 1
grep -q "no member 'nosuch' in the table of n1" "$IT_DIR/leave.err" || it_fail "leave nosuch: $(cat "$IT_DIR/leave.err")"
# a dry run first: the figures, and nothing changes
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" leave --dry-run n4 > "$IT_DIR/plan.out" 2>&1 ||
    it_fail "leave --dry-run n4: $(cat "$IT_DIR/plan.out")"
grep -q "^dry run: leave n4 (nothing is changed)" "$IT_DIR/plan.out" &&
    grep -q "arcs to copy, about [0-9]* keys" "$IT_DIR/plan.out" &&
    grep -q "^n4  *[0-9.]*%  *0.0%" "$IT_DIR/plan.out" ||
    it_fail "leave --dry-run n4 said: $(cat "$IT_DIR/plan.out")"
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" leave --dry-run --json n4 |
    python3 -c 'import json,sys; p=json.load(sys.stdin); assert p["change"]=="leave" and p["member"]=="n4" and p["arcs"]>0 and p["keys"]>0, p' ||
    it_fail "leave --dry-run --json n4"
[ "$(it_cli n4 RINGKV TRANSFERS | sed -n 4p)" = normal ] || it_fail "a dry run changed n4's status"
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" leave n4 > "$IT_DIR/leave.out" 2>&1 ||
    it_fail "leave n4: $(cat "$IT_DIR/leave.out")"
grep -q "^n4 at 127.0.0.1:$N4_CLIENT is leaving: .*transfers --watch" "$IT_DIR/leave.out" ||
    it_fail "leave n4 said: $(cat "$IT_DIR/leave.out")"
IT_WAIT=60 it_wait sh -c "! kill -0 $N4_PID" || it_fail "n4 did not stop after leaving"
it_stop n4
it_expect_eq "exit status of n4 after leaving" "$IT_STATUS" 0
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" -t "$CONVERGE_S" status --wait converged > "$IT_DIR/status.txt" ||
    it_fail "status --wait converged after the leave: $(cat "$IT_DIR/status.txt")"
grep -q '^departed   n4 (left)' "$IT_DIR/status.txt" || it_fail "n4 not shown left: $(cat "$IT_DIR/status.txt")"
for i in 0 $((KEYS / 2)) $((KEYS - 1)); do
    [ "$(it_cli n2 STRLEN "key:$i")" = 1024 ] || it_fail "key:$i lost after the leave"
done
it_log "leave n4 through n1: n4 left and stopped, the rest converged, keys readable"
it_pass
