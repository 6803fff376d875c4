#!/bin/sh
# Peer requests against a peer that holds the cluster key and breaks the
# rules (tests/integration/peer_forge), on real ringkvd processes.
#
#   - forged RESPONSEs (ids never asked, the largest id) are
#     ignored and counted as unknown, and the connection stays;
#   - REQUESTs with an unknown operation get result 1, a STATUS request
#     with a body nested 8 deep is served, one nested 9 deep closes the
#     connection (a malformed message);
#   - a member that never answers (the forging peer standing in for n2
#     after n2 is killed): 1030 clients ask RINGKV STATUS DEEP at once;
#     1024 requests go out, the 6 past RPC_OUTSTANDING_MAX are answered at
#     once as overloaded and counted as such (not as closed: nothing
#     closed);
#   - the member is killed with SIGKILL: each of the 1024 outstanding
#     requests fails exactly once, as closed, and each client gets exactly
#     one reply.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
# a two-node cluster, and the forged peer announces rf 3: both nodes run rf 3
IT_RF=3
FORGE="$top_builddir/tests/integration/peer_forge"
CLIENTS=1030
OUTSTANDING_MAX=1024
# The node and the clients need a descriptor per client, past the usual soft limit of 1024.
ulimit -n 4096 2> /dev/null || {
    echo "peer-requests: cannot raise the open-file limit to 4096: skipped"
    exit 77
}

it_setvar n1 PEER "$(it_free_port)"
it_setvar n2 PEER "$(it_free_port)"
# request-timeout far above the test's length: only a close may end a request here.
# maxclients 2048: the descriptors the settings need stay within that limit (README).
it_node n1 --rack r1 --request-timeout 300s --maxclients 2048
it_node n2 --rack r2 --seeds "127.0.0.1:$N1_PEER" --maxclients 2048
it_wait_ping n1
it_wait_ping n2
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 2 "$N1_CLIENT" "$N2_CLIENT" ||
    it_fail "n1 and n2 did not converge"
forge() { "$FORGE" "$IT_DIR/key" "127.0.0.1:$N1_PEER" "$@"; }
info_requests() { it_cli n1 INFO requests | tr -d '\r'; }

# Responses nobody asked for: ignored, counted, the connection kept.
out=$(forge resp=5,0 resp=18446744073709551615,7 resp=5,0 ping)
[ "$out" = pong ] || it_fail "forged responses: $out"
info_requests | grep -q '^ringkv_responses_unknown:3$' || it_fail "unknown responses: $(info_requests)"

# Requests: an unknown operation answered with result 1; a body 8 deep served, 9 deep refused.
out=$(forge req=1,99 req=2,0 req=3,4294967295 raw=940704019191919191919191c0 read=1000)
for want in "id=1 code=1" "id=2 code=1" "id=3 code=1" "id=4 code=0"; do
    echo "$out" | grep -q "^msg type=8 $want$" || it_fail "no response '$want': $out"
done
out=$(forge raw=94070101919191919191919191c0 read=3000)
echo "$out" | grep -q '^closed$' || it_fail "a body nested 9 deep did not close the connection: $out"

# n2 killed; the forging peer takes its place and never answers.
it_stop n2 KILL
"$FORGE" "$IT_DIR/key" "127.0.0.1:$N1_PEER" --id n2 --peer-addr "127.0.0.1:$N2_PEER" answer=90000,0 \
    > "$IT_DIR/forge.out" 2>&1 &
FORGE_PID=$!
IT_PIDS="$IT_PIDS $FORGE_PID"
it_wait grep -q "^msg type=1$" "$IT_DIR/forge.out" || it_fail "the forging peer got no IDENT"

python3 - "$N1_CLIENT" "$CLIENTS" "$OUTSTANDING_MAX" "$FORGE_PID" "$IT_DIR/forge.out" << 'EOF' ||
import os, selectors, signal, socket, sys, time
port, clients, most, forge_pid = (int(a) for a in sys.argv[1:5])
def wait_for(what, pred, limit=60):
    end = time.time() + limit
    while not pred():
        if time.time() > end:
            sys.exit("timed out waiting for " + what)
        time.sleep(0.05)
def sent():
    return sum(1 for l in open(sys.argv[5]) if l.startswith("msg type=7 "))
socks = []
for i in range(clients):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"RINGKV STATUS DEEP\r\nPING\r\n")
    socks.append(s)
replies = {s: b"" for s in socks}
sel = selectors.DefaultSelector()  # epoll: select() stops at descriptor 1024
for s in socks:
    sel.register(s, selectors.EVENT_READ)
def pump(limit):
    end = time.time() + limit
    while time.time() < end:
        for key, _ in sel.select(0.1):
            d = key.fileobj.recv(65536)
            if not d:
                sel.unregister(key.fileobj)
            replies[key.fileobj] += d
def done(s):
    return replies[s].endswith(b"+PONG\r\n")
wait_for("%d requests sent" % most, lambda: sent() >= most)
end = time.time() + 30
while sum(map(done, socks)) < clients - most and time.time() < end:
    pump(0.2)
early = [s for s in socks if done(s)]
assert len(early) == clients - most, "%d answered before any close" % len(early)
for s in early:
    assert replies[s].count(b"overloaded") == 1, replies[s]
    assert b"too many requests outstanding" in replies[s], replies[s]
pump(0.5)
assert sent() == most, "%d requests sent to one member" % sent()
assert sum(map(done, socks)) == clients - most, "an answer without a close"
os.kill(forge_pid, signal.SIGKILL)
end = time.time() + 60
while not all(map(done, socks)) and time.time() < end:
    pump(0.2)
pump(0.5)
rest = [s for s in socks if s not in early]
for s in rest:
    assert done(s), "no reply: %r" % replies[s]
    # exactly one reply, then the PONG
    assert replies[s].count(b"$6\r\nresult\r\n") == 2, replies[s]
    assert replies[s].count(b"$6\r\nclosed\r\n") == 1, replies[s]
for s in socks:
    s.close()
EOF
    it_fail "1030 DEEP clients against a member that never answers"
info_requests > "$IT_DIR/info.txt"
grep -q "^ringkv_requests_status:ok=[0-9]*,refused=0,timeout=0,closed=$OUTSTANDING_MAX,unsupported=0,unreachable=0,overloaded=$((CLIENTS - OUTSTANDING_MAX))," \
    "$IT_DIR/info.txt" || it_fail "requests counted: $(cat "$IT_DIR/info.txt")"
it_alive n1 || it_fail "n1 exited"
it_pass
