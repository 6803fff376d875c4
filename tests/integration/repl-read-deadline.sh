#!/bin/sh
# A read waits at most request-timeout (coord.h: "Every peer request ends
# within request-timeout, so a request never waits longer"; README:
# "A request that cannot reach its quorum within request-timeout gets
# -NOREPLICAS or -TRYAGAIN").  read_answer() asks a spare replica when one
# fails, with a request-timeout of its own, and forward_answer() forwards a
# failed read to the next replica, each with its own: a read with two
# paused replicas takes 2 x request-timeout, a forwarded one up to rf x.
#
# Pass: 3 nodes, request-timeout 2s, n2 and n3 paused (SIGSTOP, still
# seen up): GET through n1 answers TRYAGAIN within 3.5 s.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3 --request-timeout 2s
it_wait_converged
it_cli n1 SET k v > /dev/null || it_fail "SET k"
kill -STOP "$N2_PID" "$N3_PID"
out=$(python3 - "$N1_CLIENT" << 'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
t = time.monotonic()
s.sendall(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
line = s.makefile("rb").readline().decode().strip()
print("%.2f %s" % (time.monotonic() - t, line))
PY
)
kill -CONT "$N2_PID" "$N3_PID"
it_log "GET k with n2 and n3 paused: $out"
case $out in *TRYAGAIN*) ;; *) it_fail "GET k with two replicas paused: $out" ;; esac
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 3.5 else 1)' "${out%% *}" ||
    it_fail "the read took ${out%% *} s, over request-timeout (2 s) plus 1.5 s"
it_pass "a read ends within request-timeout"
