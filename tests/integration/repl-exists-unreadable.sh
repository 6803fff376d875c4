#!/bin/sh
# EXISTS, TYPE and STRLEN of a key whose quorum read fails answer the
# read's error, as GET, MGET, KGET and TTL do (README: "A request that
# cannot reach its quorum within request-timeout gets -NOREPLICAS or
# -TRYAGAIN"), never a count, a type or a length made up as if the key
# were absent.
#
# 3 nodes, rf 3 (r 2), request-timeout 1s; k written, then n2 and n3
# paused (SIGSTOP, still seen up, so the reads time out: TRYAGAIN):
#   - GET k through n1: -TRYAGAIN (the reference);
#   - EXISTS k: -TRYAGAIN, not 0 (exists_count() in src/node/commands.c
#     drops a failed read's result and counts the key as absent: an
#     unreadable key reads as missing, and EXISTS k1 k2 under-counts);
#   - TYPE k and STRLEN k: -TRYAGAIN with the read's figures, not
#     "-ERR read failed: ..." (type_reply() has no replica_error()).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3 --request-timeout 1s
it_wait_converged
it_cli n1 SET k v > /dev/null || it_fail "SET k"
got=$(it_cli n1 EXISTS k)
[ "$got" = 1 ] || it_fail "EXISTS k with every node up: '$got'"
kill -STOP "$N2_PID" "$N3_PID"
get=$(it_cli n1 GET k 2>&1)
exists=$(it_cli n1 EXISTS k 2>&1)
exists2=$(it_cli n1 EXISTS k k 2>&1)
type=$(it_cli n1 TYPE k 2>&1)
strlen=$(it_cli n1 STRLEN k 2>&1)
kill -CONT "$N2_PID" "$N3_PID"
it_log "n2 and n3 paused: GET '$get', EXISTS '$exists', EXISTS k k '$exists2', TYPE '$type', STRLEN '$strlen'"
case $get in TRYAGAIN* | NOREPLICAS*) ;; *) it_fail "GET k with two replicas paused: '$get', want TRYAGAIN or NOREPLICAS" ;; esac
case $exists in TRYAGAIN* | NOREPLICAS*) ;; *) it_fail "EXISTS k with two replicas paused: '$exists', want TRYAGAIN or NOREPLICAS (as GET)" ;; esac
case $exists2 in TRYAGAIN* | NOREPLICAS*) ;; *) it_fail "EXISTS k k with two replicas paused: '$exists2', want TRYAGAIN or NOREPLICAS" ;; esac
case $type in TRYAGAIN* | NOREPLICAS*) ;; *) it_fail "TYPE k with two replicas paused: '$type', want TRYAGAIN or NOREPLICAS (as GET)" ;; esac
case $strlen in TRYAGAIN* | NOREPLICAS*) ;; *) it_fail "STRLEN k with two replicas paused: '$strlen', want TRYAGAIN or NOREPLICAS (as GET)" ;; esac
it_pass "EXISTS, TYPE and STRLEN of an unreadable key answer the read's error"
