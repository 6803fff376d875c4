#!/bin/sh
# Expiry (SET EX/PX/EXAT/PXAT/KEEPTTL, SETEX, PSETEX, EXPIRE, PEXPIRE, EXPIREAT,
# PEXPIREAT, PERSIST, TTL, PTTL) on nodes whose wall clock libfaketime moves
# (it_faketime, it_skew), since an expiry is an absolute wall-clock time:
#
#   1. one node (rf 1): each command's reply and TTL, the errors Redis gives
#      for bad times; then the clock moved 2 hours ahead: every value that
#      expired within them reads as absent to GET, MGET, EXISTS, TTL, TYPE,
#      STRLEN, KGET, SCAN and DBSIZE, the others (persisted, longer) stay
#      with their TTL reduced by 2 hours; and the expired values are
#      collected like tombstones after tombstone-grace (INFO keyspace counts
#      only the live ones again);
#   2. three nodes, rf 3: an expiry set through one node is read through the
#      others, and with its writer stopped the other two still hold it (it
#      travelled with the version); EXPIRE and PERSIST through one node are
#      new versions the others read; with every clock moved 2 hours ahead the
#      expired keys read as absent through every node, and are collected on
#      every replica after tombstone-grace.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_faketime

# want ID EXPECTED CMD...: CMD through node ID answers EXPECTED (redis-cli's text).
want() {
    id=$1
    expected=$2
    shift 2
    got=$(it_cli "$id" "$@" 2>&1)
    [ "$got" = "$expected" ] || it_fail "$id: $*: '$got', want '$expected'"
}

# in_range ID LO HI CMD...: whether CMD through node ID answers an integer in [LO, HI].
in_range() {
    id=$1
    lo=$2
    hi=$3
    shift 3
    got=$(it_cli "$id" "$@" 2>&1)
    case $got in '' | *[!0-9-]*) return 1 ;; esac
    [ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ]
}

# within ID LO HI CMD...: CMD through node ID answers an integer in [LO, HI].
within() {
    in_range "$@" || it_fail "$1: $(echo "$@" | cut -d' ' -f4-): '$got', want $2 .. $3"
}

# expired ID KEY: KEY reads as absent through node ID.
expired() { [ -z "$(it_cli "$1" GET "$2")" ] && [ "$(it_cli "$1" TTL "$2")" = -2 ]; }

# --- 1. one node ------------------------------------------------------------------------
it_node n1 --rf 1 --r 1 --w 1 --tombstone-grace 1s
it_wait_ping n1
now=$(date +%s)
want n1 OK SET a v EX 100
within n1 99 100 TTL a
within n1 98000 100000 PTTL a
want n1 OK SET b v PX 3600000
within n1 3599 3600 TTL b
want n1 OK SET c v EXAT $((now + 50))
within n1 40 50 TTL c
want n1 OK SET d v PXAT $(((now + 3000) * 1000))
within n1 2990 3000 TTL d
want n1 OK SETEX e 60 v
within n1 59 60 TTL e
want n1 OK PSETEX f 60000 v
within n1 59000 60000 PTTL f
# g: no expiry, then EXPIRE, PERSIST (twice: the second finds nothing to remove)
want n1 OK SET g v
want n1 -1 TTL g
want n1 1 EXPIRE g 5000
within n1 4999 5000 TTL g
want n1 1 PERSIST g
want n1 -1 TTL g
want n1 0 PERSIST g
want n1 1 PEXPIREAT g $(((now + 20) * 1000))
within n1 10 20 TTL g
want n1 1 EXPIREAT g $((now + 100000))
want n1 1 PEXPIRE g 99000000
want n1 1 PERSIST g
# h: KEEPTTL keeps the expiry, a plain SET drops it
want n1 OK SET h v1 EX 10000
want n1 OK SET h v2 KEEPTTL
within n1 9999 10000 TTL h
want n1 v2 GET h
want n1 OK SET h v3
want n1 -1 TTL h
want n1 1 EXPIRE h 10000
# absent keys; a time already past deletes, as in Redis
want n1 0 EXPIRE missing 10
want n1 -2 TTL missing
want n1 -2 PTTL missing
want n1 0 PERSIST missing
want n1 OK SET i v
want n1 1 EXPIRE i -1
want n1 "" GET i
want n1 0 EXISTS i
# the errors Redis gives
want n1 "ERR invalid expire time in 'set' command" SET x v EX 0
want n1 "ERR invalid expire time in 'set' command" SET x v PX -5
want n1 "ERR invalid expire time in 'set' command" SET x v EX abc
want n1 "ERR syntax error" SET x v EX 10 PX 10
want n1 "ERR syntax error" SET x v KEEPTTL EX 10
want n1 "ERR syntax error" SET x v EX
want n1 "ERR invalid expire time in 'setex' command" SETEX x 0 v
want n1 "ERR value is not an integer or out of range" EXPIRE x 1.5
want n1 -2 TTL x
# inside MULTI, EXPIRE and PERSIST are writes of the EXEC's group like any other
got=$(printf 'MULTI\nSET t 1\nEXPIRE t 500\nEXPIRE nope 5\nSET u 1 EX 10\nPERSIST u\nEXEC\n' |
    timeout 10 redis-cli -h 127.0.0.1 -p "$N1_CLIENT" | tr '\n' ' ')
[ "$got" = "OK QUEUED QUEUED QUEUED QUEUED QUEUED OK 1 0 OK 1 " ] ||
    it_fail "MULTI with EXPIRE and PERSIST: '$got'"
within n1 499 500 TTL t
want n1 -1 TTL u
it_log "one node: SET options, SETEX, PSETEX, EXPIRE family, PERSIST, TTL, PTTL, errors, MULTI"
want n1 10 DBSIZE # a .. h, t, u

# the clock 2 hours ahead: a c e f t (seconds), b d (an hour or less) expire; g h u stay
it_skew n1 +7200
it_wait expired n1 a || it_fail "a (EX 100) still reads 2 hours later: $(it_cli n1 GET a)"
for k in a b c d e f t; do
    expired n1 "$k" || it_fail "$k still reads 2 hours later"
    want n1 none TYPE "$k"
    want n1 0 STRLEN "$k"
done
want n1 v GET g
want n1 -1 TTL g
within n1 2790 2800 TTL h
want n1 "$(printf '\nv\nv3')" MGET a g h
want n1 2 EXISTS a b c d e f g h
want n1 3 DBSIZE
keys=$(it_cli n1 SCAN 0 COUNT 1000 | sed 1d | sort | tr '\n' ' ')
[ "$keys" = "g h u " ] || it_fail "SCAN 2 hours later: '$keys', want g h u"
kget=$(it_cli n1 KGET a | sed 1d)
[ -z "$kget" ] || it_fail "KGET a 2 hours later has values: '$kget'"
want n1 0 EXPIRE a 100
want n1 0 PERSIST a
it_log "2 hours later: 7 expired keys read as absent everywhere, g, h and u stay"

# collected after tombstone-grace (1 s): only g, h and u are left in the store
keys_n() { it_cli n1 INFO keyspace | tr -d '\r' | sed -n 's/^db0:keys=\([0-9]*\),.*/\1/p'; }
it_wait sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $N1_CLIENT INFO keyspace | tr -d '\r' |
    sed -n 's/^db0:keys=\([0-9]*\),.*/\1/p')\" = 3 ]" ||
    it_fail "expired values not collected: db0:keys=$(keys_n), want 3"
want n1 v GET g
it_log "expired values and the tombstone collected after tombstone-grace: db0:keys=3"
it_stop n1

# --- 2. three nodes, rf 3 ----------------------------------------------------------------
for n in n1 n2 n3; do
    it_setvar "$n" DATA "$IT_DIR/$n.cluster"
    it_setvar "$n" RF 3
    it_setvar "$n" CLIENT ""
    fault_skew "$IT_DIR/$n.clock" 0
done
it_cluster 3 --tombstone-grace 1s
# shellcheck disable=SC2046 # one port a word
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"
want n1 OK SET k v EX 3600
within n2 3599 3600 TTL k
within n3 3599 3600 TTL k
want n2 OK SET j v
want n3 1 EXPIRE j 1000
within n1 999 1000 TTL j
want n1 1 PERSIST j
want n2 -1 TTL j
want n3 OK SET m v PX 10000000
want n2 OK SET l v
it_log "3 nodes: an expiry set or changed through one node is read through the others"

# the writer stopped: n2 and n3 (r 2) hold the expiry themselves (until they see n1
# down, a read that asked n1 answers TRYAGAIN: asked again)
kill -STOP "$N1_PID"
IT_WAIT=30 it_wait in_range n2 3570 3600 TTL k || it_fail "TTL k through n2 with n1 stopped: '$got'"
IT_WAIT=30 it_wait in_range n3 9970 10000 TTL m || it_fail "TTL m through n3 with n1 stopped: '$got'"
kill -CONT "$N1_PID"
it_log "with n1 stopped, n2 and n3 hold k's expiry: it travelled with the version"

# every clock 2 hours ahead: k expired through every node, j m l stay
# shellcheck disable=SC2046 # one port a word
it_wait it_ask converged 3 $(it_ports 3) || it_fail "n1 is not seen up again"
for n in n1 n2 n3; do it_skew "$n" +7200; done
for n in n1 n2 n3; do
    it_wait expired "$n" k || it_fail "k (EX 3600) still reads through $n 2 hours later"
    want "$n" v GET j
    want "$n" -1 TTL j
    within "$n" 2790 2800 TTL m
    want "$n" 3 EXISTS k j m l
done
it_log "2 hours later: k reads as absent through n1, n2 and n3; j, m, l stay"

# collected on every replica once all of them hold it expired: 3 keys left on each
for n in n1 n2 n3; do
    IT_WAIT=60 it_wait sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $(it_var "$n" CLIENT) INFO keyspace |
        tr -d '\r' | sed -n 's/^db0:keys=\([0-9]*\),.*/\1/p')\" = 3 ]" ||
        it_fail "k not collected on $n: $(it_cli "$n" INFO keyspace | tr -d '\r' | grep db0)"
done
it_log "the expired k collected on n1, n2 and n3 (rf 3): db0:keys=3 on each"
it_pass
