#!/bin/sh
# Availability follows quorum arithmetic, with real ringkvd processes: 3
# nodes, rf 3.  With k of the 3 replicas down (k = 0, 1, 2: killed with
# kill -9, so their connections close at once), a write with W w succeeds
# exactly when w <= 3 - k, and a read with R r exactly when r <= 3 - k;
# every other one is refused with -NOREPLICAS naming 3 - k reachable of
# the w (or r) needed, and a refused write is nowhere (a read at R 1
# through the live coordinator does not see it).  A replica that is
# paused (SIGSTOP) before the failure detector marks it down is asked and
# does not answer: W 3 and R 3 are then -TRYAGAIN, 2 of 3 answered, after
# request-timeout (1 s here).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

it_cluster 3 --request-timeout 1s
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"
[ "$(it_cli n1 SET base v0)" = OK ] || it_fail "SET base"

check() {
    up=$1
    for q in 1 2 3; do
        key="k$up-$q"
        out=$(it_cli n1 KSET "$key" "v$q" W $q 2>&1)
        if [ $q -le "$up" ]; then
            [ "$out" = OK ] || it_fail "$up up, KSET W $q: '$out', want OK"
        else
            case $out in
            "NOREPLICAS $up of the $q replicas this write needs (w) are reachable"*) ;;
            *) it_fail "$up up, KSET W $q: '$out', want NOREPLICAS $up of $q" ;;
            esac
            got=$(it_cli n1 KGET "$key" R 1 | tr -d '\r')
            printf '%s\n' "$got" | grep -qx "v$q" && it_fail "$up up: a refused KSET W $q was written"
        fi
        out=$(it_cli n1 KGET base R $q 2>&1 | tr -d '\r')
        if [ $q -le "$up" ]; then
            printf '%s\n' "$out" | grep -qx v0 || it_fail "$up up, KGET R $q: '$out', want v0"
        else
            case $out in
            "NOREPLICAS $up of the $q replicas this read needs (r) are reachable"*) ;;
            *) it_fail "$up up, KGET R $q: '$out', want NOREPLICAS $up of $q" ;;
            esac
        fi
    done
    it_log "$up of 3 up: W and R 1..$up succeed, above: NOREPLICAS $up of the quorum"
}

check 3
kill -STOP "$N3_PID"
out=$(it_cli n1 KSET paused v W 3 2>&1)
case $out in
"TRYAGAIN 2 of the 3 replicas this write needs (w) acknowledged it in time"*) ;;
*) it_fail "KSET W 3 with n3 paused: '$out', want TRYAGAIN 2 of 3" ;;
esac
out=$(it_cli n1 KGET base R 3 2>&1)
case $out in
"TRYAGAIN 2 of the 3 replicas this read needs (r) answered in time"*) ;;
*) it_fail "KGET R 3 with n3 paused: '$out', want TRYAGAIN 2 of 3" ;;
esac
got=$(it_cli n2 KGET paused R 1 | tr -d '\r')
printf '%s\n' "$got" | grep -qx v || it_fail "a TRYAGAIN write is not on the replica that answered: $got"
kill -CONT "$N3_PID"
it_log "n3 paused: W 3 and R 3 are TRYAGAIN 2 of 3; the write is on n2, which answered"
it_stop n3 KILL
check 2
it_stop n2 KILL
check 1
it_pass "availability follows quorum arithmetic"
