#!/bin/sh
# The member table a node saves in its data directory:
#
#   - a node restarted reloads the whole table, whatever its size (three
#     members are more than the first read, GOSSIP_TABLE_READ_FIRST in
#     src/membership/gossip.c, so it is read again whole);
#   - a damaged table stops the node at start with one line and exit 2,
#     and leaves the directory as it was: no member table is written over
#     it, and the node's keys are still there once the table is put back;
#   - `ringkv remove` on a node whose store is full (a reader holding a
#     snapshot, so no freed page is reused) cannot save the removal: it
#     fails with one line and nothing changes, anywhere; a client's DELs
#     empty that store, and the removal then goes through.
#
# The table is edited with LMDB's own tools (mdb_dump, mdb_load).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
command -v mdb_load > /dev/null || it_fail "mdb_load not found: run cluster-scripts/install-deps"

it_cluster 3
PORTS=$(it_ports 3)
IT_WAIT=$(it_rounds_s 12) it_wait it_ask converged 3 $PORTS || it_fail "3 nodes did not converge"
it_cli n1 SET kept value > /dev/null
it_stop n1 TERM
it_expect_eq "n1's exit status" "$IT_STATUS" 0
data="$IT_DIR/n1.data"
mdb_dump -s meta "$data" > "$IT_DIR/meta.dump" || it_fail "mdb_dump of n1's meta failed"

# Restarted: the whole table back, before it hears from anyone.
it_node n1 --rack r1
it_wait_ping n1
grep -q 'event=membership_loaded generation=2 members=3' "$IT_DIR/n1.log" ||
    it_fail "n1 did not reload its table: $(grep membership_loaded "$IT_DIR/n1.log")"
it_stop n1 TERM
mdb_dump -s meta "$data" > "$IT_DIR/meta.dump" || it_fail "mdb_dump of n1's meta failed"
size=$(awk -v k=" $(printf 'membership' | od -An -tx1 | tr -d ' \n')" 'f { print (length($0) - 1) / 2; exit } $0 == k { f = 1 }' "$IT_DIR/meta.dump")
it_log "the saved table of 3 members: $size bytes (first read: 128)"
[ "$size" -gt 128 ] || it_fail "the table ($size bytes) fits the first read: the second is not tried"

# Damage the table: a value that is not a member list.
hexkey=$(printf 'membership' | od -An -tx1 | tr -d ' \n')
printf 'VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n %s\n c1c1c1c1\nDATA=END\n' "$hexkey" |
    mdb_load -s meta "$data" || it_fail "mdb_load could not damage the table"
mdb_dump -s meta "$data" > "$IT_DIR/damaged.dump"
rc=0
"$RINGKVD" --id n1 --cluster-key "$IT_DIR/key" --data "$data" --client "127.0.0.1:$N1_CLIENT" \
    --listen "127.0.0.1:$N1_PEER" --rack r1 > "$IT_DIR/damaged.out" 2> "$IT_DIR/damaged.err" || rc=$?
it_expect_eq "exit status with a damaged table" "$rc" 2
it_expect_eq "lines on stderr" "$(wc -l < "$IT_DIR/damaged.err")" 1
grep -q "^ringkvd: data: the saved member table is damaged (.*); move the data directory aside" \
    "$IT_DIR/damaged.err" || it_fail "damaged table: $(cat "$IT_DIR/damaged.err")"
mdb_dump -s meta "$data" | cmp -s - "$IT_DIR/damaged.dump" || it_fail "the refused start changed the meta table"

# Put the table back: the node starts with its table and its key (and
# with a small map, for the full store below).
mdb_load -s meta "$data" < "$IT_DIR/meta.dump" || it_fail "mdb_load could not restore the table"
it_node n1 --rack r1 --map-size-max 16MB
it_wait_ping n1
grep -c 'event=membership_loaded .*members=3' "$IT_DIR/n1.log" | grep -qx 2 ||
    it_fail "n1 did not reload its restored table: $(grep membership_loaded "$IT_DIR/n1.log")"
it_expect_eq "n1's key" "$(it_cli n1 GET kept)" "value"
IT_WAIT=$(it_rounds_s 30) it_wait it_ask converged 3 $PORTS || it_fail "n1 not back in the cluster"
it_log "a damaged table: refused with one line, nothing written; restored: back whole"

# A removal that cannot be saved (n1's store is full) is refused and
# changes nothing; once there is room, the same removal goes through.
it_stop n3 KILL
IT_WAIT=$(it_rounds_s "$IT_DOWN_ROUNDS") it_wait it_ask state down n3 "$N1_CLIENT" || it_fail "n3 not down on n1"
# A reader of the live store (a backup's mdb_dump, blocked on a pipe
# nobody reads until told to) holds its snapshot: no page freed from then
# on can be reused, so the store fills to its last page and has room for
# no write, not even the few pages of a metadata save.  (Without it, the
# pages the last commits freed are enough for the removal's save.)
head -c 262144 /dev/urandom > "$IT_DIR/fill"
out=$(redis-cli -p "$N1_CLIENT" -x SET ballast < "$IT_DIR/fill" 2>&1)
it_expect_eq "SET ballast" "$out" OK
# The ballast is in the write-ahead log until the checkpoint puts it into
# data.mdb, and the dump below must block on the pipe, so it waits for that.
checkpointed() { redis-cli -p "$N1_CLIENT" INFO persistence | tr -d '\r' | grep -qx 'ringkv_store_log_keys:0'; }
it_wait checkpointed || it_fail "n1 did not move its write-ahead log into LMDB"
mkfifo "$IT_DIR/go"
mdb_dump -s data "$data" | { read -r _ < "$IT_DIR/go"; cat > /dev/null; } &
SINK_PID=$!
IT_PIDS="$IT_PIDS $SINK_PID"
# dump_pid: the pid of a reader of n1's store holding a snapshot, other than n1.
dump_pid() {
    mdb_stat -r "$data" | awk -v node="$N1_PID" 'NR > 2 && $1 != node && $3 != "-" { print $1; exit }' | grep .
}
it_wait dump_pid || it_fail "mdb_dump holds no snapshot of n1's store: $(mdb_stat -r "$data")"
DUMP_PID=$(dump_pid)
IT_PIDS="$IT_PIDS $DUMP_PID"
# Fill it with ever smaller values, until not even a 1-byte write has room.
i=0
for size in 1048576 65536 4096 256 16 1; do
    head -c "$size" /dev/urandom > "$IT_DIR/fill"
    k=0
    while [ "$k" -lt 2000 ]; do
        out=$(redis-cli -p "$N1_CLIENT" -x SET "fill$i" < "$IT_DIR/fill" 2>&1)
        [ "$out" = OK ] || break
        i=$((i + 1))
        k=$((k + 1))
    done
    case $out in *"store is full"*) ;; *) it_fail "n1's store did not fill with $size-byte values: $out" ;; esac
done
rc=0
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" remove n3 > "$IT_DIR/remove.out" 2> "$IT_DIR/remove.err" || rc=$?
it_expect_eq "exit status of remove on a full store" "$rc" 1
grep -q "cannot save the removal of 'n3': .*; nothing changed" "$IT_DIR/remove.err" ||
    it_fail "remove on a full store: $(cat "$IT_DIR/remove.err")"
it_ask status normal n3 "$N1_CLIENT" "$N2_CLIENT" || it_fail "the refused removal changed a member view"
# A client empties the full store with DEL (each a small write; freed
# pages are still held by the reader): the first DELs use the deletion
# reserve.  Then the reader finishes its dump and ends, and the rest is
# ordinary.
release() {
    [ -p "$IT_DIR/go" ] || return 0
    echo > "$IT_DIR/go"
    wait "$DUMP_PID" "$SINK_PID"
    rm -f "$IT_DIR/go"
}
j=0
while [ "$j" -lt "$i" ]; do
    [ "$j" -lt 16 ] || release
    out=$(it_cli n1 DEL "fill$j" 2>&1) || it_fail "DEL fill$j (of $i) on the full store: $out"
    j=$((j + 1))
done
release
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" remove n3 > /dev/null || it_fail "remove n3 refused once there was room"
IT_WAIT=$(it_rounds_s 30) it_wait it_ask status removed n3 "$N1_CLIENT" "$N2_CLIENT" ||
    it_fail "n3 not removed everywhere"
it_log "remove on a full store ($i values written): refused, nothing changed; with room: removed"
it_pass
