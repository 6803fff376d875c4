#!/bin/sh
# Under replication (3 nodes on 127.0.0.1, rf 3, r = w = 2), a pipelined
# DEL, EXPIRE or PERSIST is decided against a quorum read of its key, so it
# must start only once the connection's earlier write of that key has
# completed, and a later write of the key only once it has: each pipeline,
# sent in one packet, answers as Redis does, run through every node and in
# both conflicts modes:
#
#   SET k v, DEL k, GET k                 +OK :1 nil
#   SET k v, EXPIRE k 1000, TTL k         +OK :1 :1000 (or 999)
#   SETEX k 1000 v, PERSIST k, TTL k      +OK :1 :-1
#   MSET k1 1 k2 2, DEL k1 k2, EXISTS ..  +OK :2 :0
#   (k holds v0) DEL k, SET k v1, GET k   :1 +OK v1, and v1 still later
#   (k holds v0) EXPIRE k 1000, SET k v1  :1 +OK, TTL -1, GET v1
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

# pipe PORT COMMAND...: the commands (inline, ';'-separated) sent in one packet; the replies
# as one line, each reply's RESP text with CRLF removed, separated by '|'.
pipe() {
    python3 - "$@" << 'PY'
import socket, sys
port, cmds = int(sys.argv[1]), sys.argv[2].split(";")
s = socket.create_connection(("127.0.0.1", port), timeout=20)
s.sendall(b"".join(c.strip().encode() + b"\r\n" for c in cmds))
buf, out = b"", []
while len(out) < len(cmds):
    while b"\r\n" not in buf:
        data = s.recv(65536)
        if not data:
            sys.exit("closed")
        buf += data
    line, buf = buf.split(b"\r\n", 1)
    if line[:1] == b"$" and int(line[1:]) >= 0:
        n = int(line[1:])
        while len(buf) < n + 2:
            buf += s.recv(65536)
        line, buf = line + b" " + buf[:n], buf[n + 2:]
    out.append(line.decode())
print("|".join(out))
PY
}

run() { # run MODE
    mode=$1
    it_cluster 3 --conflicts "$mode"
    # shellcheck disable=SC2046 # one port a word
    IT_WAIT=60 it_wait it_ask converged 3 $(it_ports 3) || it_fail "$mode: 3 nodes did not converge"
    for n in n1 n2 n3; do
        port=$(it_var $n CLIENT)
        i=0
        while [ $i -lt 3 ]; do
            k="$mode.$n.$i"
            it_expect_eq "$mode $n: SET, DEL, GET" "$(pipe "$port" "SET a$k v; DEL a$k; GET a$k")" \
                '+OK|:1|$-1'
            got=$(pipe "$port" "SET b$k v; EXPIRE b$k 1000; TTL b$k")
            case $got in '+OK|:1|:1000' | '+OK|:1|:999') ;;
            *) it_fail "$mode $n: SET, EXPIRE, TTL: '$got', want +OK|:1|:1000" ;; esac
            it_expect_eq "$mode $n: SETEX, PERSIST, TTL" \
                "$(pipe "$port" "SETEX c$k 1000 v; PERSIST c$k; TTL c$k")" '+OK|:1|:-1'
            it_expect_eq "$mode $n: MSET, DEL, EXISTS" \
                "$(pipe "$port" "MSET d$k 1 e$k 2; DEL d$k e$k; EXISTS d$k e$k")" '+OK|:2|:0'
            it_expect_eq "$mode $n: SET f v0" "$(pipe "$port" "SET f$k v0")" '+OK'
            it_expect_eq "$mode $n: DEL, SET, GET" "$(pipe "$port" "DEL f$k; SET f$k v1; GET f$k")" \
                ':1|+OK|$2 v1'
            it_expect_eq "$mode $n: SET g v0" "$(pipe "$port" "SET g$k v0")" '+OK'
            it_expect_eq "$mode $n: EXPIRE, SET, TTL, GET" \
                "$(pipe "$port" "EXPIRE g$k 1000; SET g$k v1; TTL g$k; GET g$k")" ':1|+OK|:-1|$2 v1'
            i=$((i + 1))
        done
    done
    # the last writes stay, read through another node once the replicas settled
    for n in n1 n2 n3; do
        i=0
        while [ $i -lt 3 ]; do
            it_expect_eq "$mode: GET f$mode.$n.$i through n1" "$(it_cli n1 GET "f$mode.$n.$i")" v1
            it_expect_eq "$mode: GET g$mode.$n.$i through n2" "$(it_cli n2 GET "g$mode.$n.$i")" v1
            i=$((i + 1))
        done
    done
    it_log "$mode: pipelined DEL, EXPIRE and PERSIST ordered after and before the writes of their key"
    for n in n1 n2 n3; do it_stop $n TERM; done
    for n in n1 n2 n3; do
        it_setvar $n DATA "$IT_DIR/$n.$mode-2"
        it_setvar $n CLIENT ""
        it_setvar $n PEER ""
    done
}

run siblings
run lww
it_pass "pipelined DEL, EXPIRE and PERSIST answer as Redis under replication"
