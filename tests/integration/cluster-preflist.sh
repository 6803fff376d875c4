#!/bin/sh
# `ringkv preflist` on a real cluster: six ringkvd processes on addresses of
# their own (127.x.y.11 .. 16), in racks r1 r2 r3 twice over, rf 3.
#
#   - for KEYS keys, asked through n1: three replicas, all up, in three
#     distinct racks, no fallback, the first one the primary, every skipped
#     step a known reason, and the same answer through n6;
#   - n4 (rack r1) stopped with SIGSTOP: once every other node sees it down,
#     every key whose preference list holds n4 shows it down with exactly
#     one fallback standing for it, up, and the up nodes of the list in
#     three distinct racks (n1, n4's rack-mate, is the only r1 node left);
#     the walk's skips name n4 as down and replaced by that fallback;
#   - the table form shows the fallback and what it stands for (printed
#     into the log).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=300

it_cluster 6 --rf 3
PORTS=$(it_ports 6)
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 6 $PORTS || it_fail "6 nodes did not converge"

# check PHASE HOST: every key's preference list through HOST, as PHASE expects.
check() {
    python3 - "$RINGKV" "$1" "$2" "$KEYS" > "$IT_DIR/check-$1.out" 2>&1 <<'EOF' ||
import json, subprocess, sys

ringkv, phase, host, keys = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
racks = {"n1": "r1", "n2": "r2", "n3": "r3", "n4": "r1", "n5": "r2", "n6": "r3"}
reasons = {"same_node", "rack_used", "down", "used"}
held = 0

def fail(key, why, p):
    sys.exit("key %s: %s: %s" % (key, why, json.dumps(p)))

for i in range(keys):
    key = "key:%d" % i
    out = subprocess.run([ringkv, "-H", host, "-t", "5", "preflist", "--json", key],
                         capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        sys.exit("key %s: ringkv preflist exited %d: %s" % (key, out.returncode, out.stderr))
    p = json.loads(out.stdout)
    nodes = p["replicas"]
    reps = [n for n in nodes if n["role"] != "fallback"]
    fbs = [n for n in nodes if n["role"] == "fallback"]
    up = [n for n in nodes if n["up"]]
    if p["rf"] != 3 or not p["sloppy"] or len(reps) != 3 or reps[0]["role"] != "primary":
        fail(key, "not three replicas, primary first, rf 3, sloppy", p)
    if any(racks[n["node"]] != n["rack"] for n in nodes):
        fail(key, "a node in the wrong rack", p)
    if len({n["rack"] for n in reps}) != 3:
        fail(key, "a rack repeated among the replicas", p)
    if len({n["rack"] for n in up}) != len(up) or len({n["node"] for n in nodes}) != len(nodes):
        fail(key, "a rack or a node repeated among the up nodes", p)
    if any(s["reason"] not in reasons for s in p["skipped"]):
        fail(key, "an unknown skip reason", p)
    if phase == "all-up":
        if fbs or not all(n["up"] for n in reps) or any(s["reason"] == "down" for s in p["skipped"]):
            fail(key, "a node down or a fallback with every node up", p)
        continue
    down = [n for n in reps if not n["up"]]
    if [n["node"] for n in down] != (["n4"] if any(n["node"] == "n4" for n in reps) else []):
        fail(key, "down replicas other than n4", p)
    if not down:
        if fbs:
            fail(key, "a fallback with no replica down", p)
        continue
    held += 1
    if len(fbs) != 1 or fbs[0]["stands_for"] != "n4" or not fbs[0]["up"] or fbs[0]["node"] != "n1":
        fail(key, "n4 down without n1, its rack-mate, standing for it", p)
    skip = [s for s in p["skipped"] if s["node"] == "n4" and s["reason"] == "down"]
    if len(skip) != 1 or skip[0]["replaced_by"] != "n1":
        fail(key, "no skip naming n4 down and replaced by n1", p)
print("%d keys, %d with n4 among their replicas" % (keys, held))
if phase == "n4-down" and held == 0:
    sys.exit("no key has n4 among its replicas: nothing was tested")
EOF
        it_fail "$1 through $2: $(cat "$IT_DIR/check-$1.out")"
    it_log "$1 through $2: $(cat "$IT_DIR/check-$1.out")"
}

check all-up "$(it_addr n1):$N1_CLIENT"
"$RINGKV" -H "$(it_addr n1):$N1_CLIENT" preflist --json key:7 > "$IT_DIR/n1.json"
"$RINGKV" -H "$(it_addr n6):$N6_CLIENT" preflist --json key:7 > "$IT_DIR/n6.json"
cmp -s "$IT_DIR/n1.json" "$IT_DIR/n6.json" || it_fail "n1 and n6 disagree on key:7's preference list"

# n4 paused: seen down by the five others, then replaced by n1 wherever it is a replica.
others=$(echo "$PORTS" | tr ' ' '\n' | grep -vx "$(it_addr n4):$N4_CLIENT" | tr '\n' ' ')
kill -STOP "$N4_PID"
IT_WAIT=$(it_rounds_s "$IT_DOWN_ROUNDS") it_wait it_ask state down n4 $others ||
    it_fail "paused n4 not marked down within $IT_DOWN_ROUNDS rounds"
check n4-down "$(it_addr n2):$N2_CLIENT"

# The table form: find a key n4 holds and look for its fallback line.
i=0
while [ "$i" -lt "$KEYS" ]; do
    "$RINGKV" -H "$(it_addr n2):$N2_CLIENT" preflist "key:$i" > "$IT_DIR/table.out"
    grep -q '^n4 .* down' "$IT_DIR/table.out" && break
    i=$((i + 1))
done
grep -Eq '^n1 +r1 +fallback +up +n4$' "$IT_DIR/table.out" ||
    it_fail "no fallback line in the table for key:$i: $(cat "$IT_DIR/table.out")"
grep -Eq ' n4 +r1 +down, replaced by n1$' "$IT_DIR/table.out" ||
    it_fail "no skip line naming n4 replaced by n1: $(cat "$IT_DIR/table.out")"
it_log "ringkv preflist key:$i through n2, n4 paused:"
cat "$IT_DIR/table.out"
kill -CONT "$N4_PID"
it_pass "every preference list held three racks; n4 paused was replaced by n1 in each of its lists"
