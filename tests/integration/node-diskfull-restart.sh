#!/bin/sh
# A node killed on a disk its write-ahead log filled starts again on the
# same full disk: one node (sync batch, its data on a tmpfs of its own)
# takes 40 KB SETs until the disk refuses one, so the log holds writes
# LMDB lacks, with no room left to move them there; then kill -9 and a
# restart.  The node must come up (the generation it records at start is
# a meta write, which runs without moving the log into LMDB), serve every
# acknowledged key from its log, refuse a new SET with a clear error, and
# take writes again once the disk has room, keeping every key through a
# clean restart.  Needs root (a tmpfs in a mount namespace of its own).
# About 10 s.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net
flags="--rf 1 --r 1 --w 1 --sync batch"
it_disk n1 8m
# shellcheck disable=SC2086
it_node n1 $flags
it_wait_ping n1
python3 -c "import sys; sys.stdout.write('v' * 40000)" > "$IT_DIR/value"
acked=0
i=0
while [ "$i" -lt 400 ]; do
    r=$(it_cli n1 -x SET "big:$i" < "$IT_DIR/value" 2>&1)
    [ "$r" = OK ] || break
    acked=$((acked + 1))
    i=$((i + 1))
done
it_log "$acked SETs acknowledged, then: $r"
[ "$acked" -gt 10 ] || it_fail "only $acked SETs before the disk filled"
[ "$acked" -lt 400 ] || it_fail "the 8 MB disk never filled"
wal=$(stat -c %s "$(it_var n1 DATA)/wal")
it_log "the log holds $wal bytes"
[ "$wal" -gt 100000 ] || it_fail "the log holds only $wal bytes: nothing to test"
it_stop n1 KILL

# all_there WHEN: every acknowledged big:N holds its 40000 bytes.
all_there() {
    j=0
    while [ "$j" -lt "$acked" ]; do
        n=$(it_cli n1 STRLEN "big:$j")
        [ "$n" = 40000 ] || it_fail "big:$j $1: STRLEN $n"
        j=$((j + 1))
    done
}

# shellcheck disable=SC2086
it_node n1 $flags
it_wait_ping n1 # up on the full disk: recording its generation needs no room for the log
all_there "after the restart on a full disk"
r=$(it_cli n1 -x SET big:new < "$IT_DIR/value" 2>&1)
it_log "a SET on the full disk: $r"
case "$r" in
*"no space"* | *"full"*) ;;
*) it_fail "a SET on the full disk got: $r" ;;
esac
it_alive n1 || it_fail "n1 died on the full disk"

# room again: the tmpfs grows to 32 MB
mount -o remount,size=32m "$IT_DIR/n1.disk" || it_fail "growing n1's disk"
set_new() { [ "$(it_cli n1 -x SET big:new < "$IT_DIR/value" 2>&1)" = OK ]; }
IT_WAIT=20 it_wait set_new || it_fail "no SET succeeded within 20 s of the disk having room"
it_stop n1
[ "$IT_STATUS" -eq 0 ] || it_fail "n1 exited with $IT_STATUS on SIGTERM"
# shellcheck disable=SC2086
it_node n1 $flags
it_wait_ping n1
all_there "after a clean restart"
[ "$(it_cli n1 STRLEN big:new)" = 40000 ] || it_fail "big:new lost in a clean restart"
it_pass "$acked writes acknowledged on a disk the log filled came back after kill -9 and a restart on that full disk"
