#!/bin/sh
# Read repair of a replica that holds an older version of a key while the
# other two agree, with real ringkvd processes, 3 nodes, rf 3, siblings:
# the case a read's shortcut for answers that are all the same record
# (coord.c, read_all_same()) must not take.
#
#   Every key is written with W 3 (all replicas hold A), then n3 is killed
#   and each key gets a second write through n2 with W 2, n1 and n2 then
#   holding the newer record and n2 a hint for n3:
#
#     c1:     KSET with the context of the first write, of the same value:
#             the newer record is one sibling of the same bytes as n3's,
#             its clock newer;
#     s1, s2: KSET B through n2 once wiped (holding nothing, its write is a
#             sibling of A): the newer record is {A, B}, n3 holds {A}.
#
#   Each time n2 is then stopped, wiped of the three keys and of its hints
#   (tests/integration/lmdb_edit.py) and restarted; a read with R 2 through n1, n3 still down, gives n2 the
#   newer records again (read repair), and n3 returns with the older ones:
#   no hint is left that would bring it the newer ones, only a read can.
#
# Pass: KGET R 3 of s1 and c1 through n1 (n3 a remote stale replica) and
# of s2 through n3 (the coordinator's own copy stale) leave all three
# replicas with the same siblings and version vector, and the reads count
# read repairs.  (A shortcut that compared the answers' values but not their
# clocks fails on c1; one that looked at the first two answers only, on s2.)
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

# field KEY NAME: the NAME line of each replica of KEY (RINGKV REPLICAS through n1), sorted unique
field() {
    it_cli n1 RINGKV REPLICAS "$1" | tr -d '\r' |
        awk -v f="$2" 'p { print; p = 0 } $0 == f { p = 1 }' | sort -u | tr '\n' ' '
}
repairs() {
    t=0
    for n in n1 n2 n3; do
        t=$((t + $(it_info_field "$n" ringkv_read_repairs)))
    done
    echo "$t"
}
# values ID KEY [R n]: how many values KGET KEY returns through node ID
values() {
    id=$1 key=$2
    shift 2
    it_cli "$id" KGET "$key" "$@" | tail -n +2 | grep -c .
}

it_cluster 3
it_wait_converged

for k in s1 s2 c1; do
    [ "$(it_cli n1 KSET $k A W 3)" = OK ] || it_fail "KSET $k A W 3"
done
ctx=$(it_cli n1 KGET c1 R 3 | tr -d '\r' | head -1)

# wipe_n2: stop n2, delete its records of s1, s2, c1 and every hint it kept, start it again.
# (Not its whole data directory: a wiped node joins again and copies its arcs by handoff,
# so it would hold A again; this one is still normal, with nothing of the three keys.)
it_lmdb_editor
wipe_n2() {
    it_stop n2 TERM
    for k in s1 s2 c1; do
        $ED "$IT_DIR/n2.data" forget "$k" || it_fail "deleting $k from n2's store"
    done
    $ED "$IT_DIR/n2.data" forget-hints - || it_fail "deleting n2's hints"
    it_node n2 --rack r2 --seeds "127.0.0.1:$N1_PEER"
    it_wait_ping n2
}
# kset_n2 KEY VALUE: KSET KEY VALUE W 2 through n2, refused (nothing written) until it
# sees n1 up with the ring
kset_n2() { [ "$(it_cli n2 KSET "$1" "$2" W 2)" = OK ]; }
n2_hints() { [ "$(it_info_field n2 ringkv_hints)" -ge "$1" ]; }

it_stop n3 KILL
[ "$(it_cli n2 KSET c1 A CONTEXT "$ctx" W 2)" = OK ] || it_fail "KSET c1 A CONTEXT W 2 through n2"
it_wait n2_hints 1 || it_fail "n2 kept no hint of c1 for n3"
wipe_n2
# the wiped n2 holds nothing: its writes are siblings of A
for k in s1 s2; do
    IT_WAIT=$(it_rounds_s 80) it_wait kset_n2 $k B || it_fail "KSET $k B W 2 through the wiped n2"
done
it_wait n2_hints 2 || it_fail "n2 kept no hints of s1, s2 for n3"
wipe_n2

# n1 and the wiped n2 (n3 down): a read with R 2 through n1 repairs n2
n2_repaired() {
    out=$(it_cli n1 KGET "$1" R 2 2>&1 | head -c 200)
    case $out in *TRYAGAIN* | *NOREPLICAS* | *ERR*) return 1 ;; esac
    [ "$(values n2 "$1" R 1)" = "$(values n1 "$1" R 1)" ]
}
for k in s1 s2 c1; do
    IT_WAIT=$(it_rounds_s 80) it_wait n2_repaired $k || it_fail "KGET $k R 2 through n1 did not repair n2"
done
[ "$(values n2 s1 R 1)" = 2 ] || it_fail "n1 and n2 do not hold the two siblings of s1"

it_node n3 --rack r3 --seeds "127.0.0.1:$N1_PEER"
it_wait_ping n3
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 80) it_wait it_ask converged 3 $(it_ports 3) || it_fail "n3 did not rejoin"
[ "$(it_hints_total n1 n2 n3)" = 0 ] || it_fail "hints left: $(it_hints_total n1 n2 n3)"
for k in s1 s2 c1; do
    [ "$(field $k vclock | wc -w)" = 2 ] || it_fail "$k: n3 not older: vclocks '$(field $k vclock)'"
done
[ "$(values n3 s1 R 1)" = 1 ] || it_fail "n3 holds $(values n3 s1 R 1) siblings of s1, want 1"
it_log "n1 and n2 hold the newer records, n3 the older ones, no hints"

before=$(repairs)
for kn in s1:n1 c1:n1 s2:n3; do
    k=${kn%%:*} n=${kn#*:}
    got=$(values "$n" "$k" R 3)
    want=2
    [ "$k" = c1 ] && want=1
    [ "$got" = "$want" ] || it_fail "KGET $k R 3 through $n: $got values, want $want"
    sib=$(field "$k" siblings)
    [ "$sib" = "$want " ] || it_fail "$k after KGET R 3 through $n: siblings per replica '$sib'"
    vc=$(field "$k" vclock)
    [ "$(echo "$vc" | wc -w)" = 1 ] || it_fail "$k after KGET R 3 through $n: vclocks '$vc'"
done
after=$(repairs)
[ "$after" -ge $((before + 3)) ] || it_fail "read repairs $before -> $after, want 3 more"
it_log "read repairs $before -> $after"
it_pass "a replica older than the two others is repaired by a read that reaches it"
