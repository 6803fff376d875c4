#!/bin/sh
# A coordinator's own copy damaged or stale on disk, 3 replicating nodes
# (rf 3, r 2), real ringkvd processes; the records are edited in a stopped
# node's LMDB (lmdb_edit.py, python3-lmdb):
#
#   - n1's copy of a key damaged six ways (truncated, a trailing byte, 0
#     siblings, an unknown format, a clock id with a blank, a clock counter
#     0): a read through any node, n1 included (where the coordinator takes
#     its own copy undecoded while the others agree with it), answers the
#     good value: the damaged copy does not count, another replica is asked;
#   - damaged on n1 and n2 both: a read through n1 answers the good value
#     (n3's) or a quorum error, never the damaged bytes;
#   - n1 holding an older record (put back while it was stopped) of a key
#     written since, and of a key deleted since: reads through n1 answer the
#     newer value and nil, and every replica ends with the same clock.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_lmdb_editor

HOWS="trunc extra zero format badnode ctrzero"
it_cluster 3 --request-timeout 1s
it_wait_converged

# restart ID...: start the stopped nodes again, seeded with n3, and wait for the ring
restart() {
    for n in "$@"; do
        it_node "$n" --rack "r${n#n}" --request-timeout 1s --seeds "$(it_addr n3):$N3_PEER"
    done
    for n in "$@"; do it_wait_ping "$n"; done
    it_wait_converged
}
# clocks KEY: how many different clocks the replicas of KEY hold (RINGKV REPLICAS)
clocks() {
    it_cli n3 RINGKV REPLICAS "$1" | tr -d '\r' |
        awk 'p { print; p = 0 } $0 == "vclock" { p = 1 }' | sort -u | wc -l
}

for k in $(printf 'd_%s ' $HOWS) both stale tomb; do
    [ "$(it_cli n1 SET "$k" "good-$k")" = OK ] || it_fail "SET $k"
done
it_wait_no_hints "hints" n1 n2 n3
it_stop n1
for k in stale tomb; do $ED "$IT_DIR/n1.data" save "$k" "$IT_DIR/$k.old" > /dev/null; done
restart n1
[ "$(it_cli n2 SET stale newer)" = OK ] || it_fail "SET stale newer"
[ "$(it_cli n2 DEL tomb)" = 1 ] || it_fail "DEL tomb"
it_wait_no_hints "hints" n1 n2 n3
it_stop n1
it_stop n2
for h in $HOWS; do $ED "$IT_DIR/n1.data" damage "d_$h" "$h" > /dev/null || it_fail "damage d_$h"; done
$ED "$IT_DIR/n1.data" damage both trunc > /dev/null || it_fail "damage both on n1"
$ED "$IT_DIR/n2.data" damage both badnode > /dev/null || it_fail "damage both on n2"
for k in stale tomb; do $ED "$IT_DIR/n1.data" put "$k" "$IT_DIR/$k.old" > /dev/null; done
restart n1 n2

for h in $HOWS; do
    for n in n1 n2 n3; do
        got=$(it_cli "$n" GET "d_$h" 2>&1)
        [ "$got" = "good-d_$h" ] || it_fail "GET d_$h (damaged on n1: $h) through $n: '$got'"
    done
    v="good-d_$h"
    got=$(it_cli n1 STRLEN "d_$h" 2>&1)
    [ "$got" = "${#v}" ] || it_fail "STRLEN d_$h through n1: '$got', want ${#v}"
done
it_log "a copy damaged six ways on the coordinator does not count: the good value through every node"
got=$(it_cli n1 GET both 2>&1)
case $got in good-both | TRYAGAIN* | NOREPLICAS*) ;; *) it_fail "GET both (damaged on n1 and n2) through n1: '$got'" ;; esac
it_log "damaged on two of three replicas: '$got' through n1"

got=$(it_cli n1 GET stale 2>&1)
[ "$got" = newer ] || it_fail "GET stale through n1 (n1 holds the older record): '$got', want newer"
got=$(it_cli n1 GET tomb 2>&1)
[ -z "$got" ] || it_fail "GET tomb through n1 (n1 holds the value the DEL replaced): '$got', want nil"
[ "$(it_cli n1 EXISTS tomb)" = 0 ] || it_fail "EXISTS tomb through n1: '$(it_cli n1 EXISTS tomb)'"
for k in stale tomb; do
    [ "$(clocks "$k")" = 1 ] || it_fail "$k: $(clocks "$k") different clocks on the replicas after the read, want 1"
done
it_log "an older record on the coordinator: the newer value and the delete win, and every replica is repaired"
for n in n1 n2 n3; do it_alive "$n" || it_fail "$n died"; done
it_pass "damaged and stale copies on the coordinator"
