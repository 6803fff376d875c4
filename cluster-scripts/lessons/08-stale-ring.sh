#!/usr/bin/env bash
# lesson: stale-ring
# title: a node that missed a ring change still serves its clients: it forwards, and the old replica forwards on
# length: quick
#
# Three nodes in two racks (n1 and n3 in rack-a, n2 in rack-b), two copies
# of each key (rf 2): one in each rack.  A fourth node, n4, joins rack-b:
# it takes the rack-b copy of about half of the keys from n2, while rack-a
# keeps its copies, so n3 has no part in the copying.  Near the end of it,
# n3 is paused (SIGSTOP): it has agreed to the new ring, but it misses the
# moment n4 turns normal and the new ring takes effect.  n1, n2 and n4 soon
# hold the new ring (`ringkv status` shows each member's ring digest); n3
# still holds the old one.  A client has two connections open to n3 and
# sends on them, while n3 is paused, reads of keys n4 took and writes of
# others it took.  A resumed node hears of the new ring within a few
# milliseconds; to leave it no chance to first, n1, n2 and n4 are paused
# for the moment n3 resumes.  n3 then serves both pipelines on its old
# ring: INFO before and after each gives its ring digest, and so does INFO
# while the others are still paused.  That old ring names n2 as a replica
# of those keys, so n3 forwards some requests to n2; n2's own ring makes it
# no replica any more, so n2 forwards them on to the current replicas
# (INFO ringkv_forwards_served, ringkv_forwarded).  Every read returns the
# right value, and every write lands on n4, a replica under the new ring.
. "$(dirname "$0")/lib.sh"
KEYS=1500
WRITES=200
lesson_begin

# ring ID: the digest of the ring node ID holds (the ring in force).
ring() { info_field "$1" ringkv_digest; }
# late_in_join: n4 is still joining and has received 80% of the keys it gains
# ($fig_plan_keys); n3 has agreed to the new ring, or no arc would be copied.
late_in_join() {
    local got changing
    got=$(info_field n4 ringkv_handoff_keys_received)
    changing=$(info_field n4 ringkv_changing)
    [[ $got =~ ^[0-9]+$ ]] && [ "$changing" = 1 ] && [ $((got * 10)) -ge $((fig_plan_keys * 8)) ]
}
# others_moved_on: n4 is normal (no change under way), and n1, n2 and n4 hold its ring,
# a new one.
others_moved_on() {
    local r4
    [ "$(info_field n4 ringkv_changing)" = 0 ] || return 1
    r4=$(ring n4)
    [ -n "$r4" ] && [ "$r4" != "$fig_old_ring" ] && [ "$(ring n1)" = "$r4" ] && [ "$(ring n2)" = "$r4" ]
}
# n3_started: n3 has started the pipelines' requests: its forwarded count grew and holds
# still over 0.2 s (it starts them all as it reads them).
n3_started() {
    local now
    now=$(info_field n3 ringkv_forwarded)
    [[ $now =~ ^[0-9]+$ ]] && [ "$now" -gt "$fig_fwd_before_n3" ] || return 1
    sleep 0.2
    [ "$now" = "$(info_field n3 ringkv_forwarded)" ]
}
# still_up_on ID: node ID's failure detector does not (yet) see the paused n3 down.
still_up_on() { cli "$1" members | awk '$2 == "n3" && $1 != "down" { found = 1 } END { exit !found }'; }
# new_on_n4: how many keys of the file written n4's own copy holds the new value of
# (`ringkv replicas --json` through n4: n4's row, present, with the new value's size).
new_on_n4() {
    local k
    while read -r k; do cli n4 replicas --json "$k" || true; done < written | python3 -c '
import json, sys
text, at, n, d = sys.stdin.read(), 0, 0, json.JSONDecoder()
while text[at:].strip():
    j, at = d.raw_decode(text, len(text) - len(text[at:].lstrip()))
    n += any(r["node"] == "n4" and r["present"] and r["value_size"] == len("new-" + j["key"])
             for r in j["replicas"])
print(n)'
}
# pipe_to ID FILE...: open a connection to node ID for each FILE (commands, one a line)
# and touch `connected`; once a file `go` exists, send each FILE's commands on its
# connection in one go and touch `sent`; then write the replies to FILE.replies, one a
# line: a value, (nil), an error, or for INFO just "ring DIGEST".  The connections are
# open before node ID is paused (so it has taken them in), the commands sent while it
# is paused: the kernel keeps them until it runs again, then it reads them at once.
pipe_to() {
    python3 - "$(addr "$1")" "${@:2}" << 'PY'
import os, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
conns = [(name, socket.create_connection((host, int(port)), timeout=30)) for name in sys.argv[2:]]
open("connected", "w").close()
deadline = time.time() + 30
while not os.path.exists("go"):
    if time.time() > deadline:
        sys.exit("no go within 30 s")
    time.sleep(0.01)
todo = []
for name, s in conns:
    cmds = [l.strip() for l in open(name) if l.strip()]
    s.sendall("".join(c + "\r\n" for c in cmds).encode())
    todo.append((name, cmds, s.makefile("rb")))
open("sent", "w").close()
def reply(f):
    line = f.readline()
    if not line:
        sys.exit("the connection closed")
    kind, rest = line[:1], line[1:-2].decode()
    if kind in (b"+", b"-", b":"):
        return rest
    if kind == b"$":
        if int(rest) < 0:
            return "(nil)"
        data = f.read(int(rest) + 2)[:-2].decode()
        if "ringkv_digest:" in data:
            return "ring " + data.split("ringkv_digest:")[1].split()[0]
        return data
    sys.exit("unexpected reply %r" % line)
for name, cmds, f in todo:
    with open(name + ".replies", "w") as out:
        for c in cmds:
            print(reply(f), file=out)
PY
}

step "Start three nodes in two racks, two copies of each key (rf 2): n1 and n3 share rack-a, n2 is alone in rack-b."
lesson_up -n 3 --racks 2 --rf 2 --handoff-rate 128KB
notice "each key has one copy in rack-a (on n1 or n3) and one in rack-b (n2 holds them all)."
notice "handoff-rate 128KB slows the copying of a join to a few seconds, so we can act during it."

step "Write $KEYS keys of 1000 bytes through n1."
seq 0 $((KEYS - 1)) | awk '{ v = "v" $1 "-"; while (length(v) < 1000) v = v "x"; print "SET stale:" $1 " " v }' > sets
send n1 sets
for id in n1 n2 n3; do figure "keys_$id" "$(rcli "$id" DBSIZE)"; done
notice "n2 holds all $fig_keys_n2; n1 ($fig_keys_n1) and n3 ($fig_keys_n3) share rack-a's copies."

step "Ask n2 what a join of n4 in rack-b would move (RINGKV PLAN JOIN: a dry run, nothing changes)."
plan_join n2 n4 rack-b 256 8
notice "n4 would take the rack-b copy of $fig_plan_keys keys from n2; rack-a (n1, n3) keeps its copies."

step "Start n4 in rack-b; near the end of its join, pause n3 with two pipelines waiting for it, then resume it."
notice "one step, without a pause: n3 paused for more than 3.7 s would be seen down by the others."
notice "n4's config is n2's with its own id and address."
quiet mkdir -p "$RINGKV_TESTBED/n4"
sed -e 's/\bn2\b/n4/g' -e 's/\.12:/.14:/g' "$RINGKV_TESTBED/n2/ringkvd.conf" > "$RINGKV_TESTBED/n4/ringkvd.conf"
run grep -v '^#' "$RINGKV_TESTBED/n4/ringkvd.conf"
run tb start n4
notice "tb start does not wait for the join (tb add would): n4 is joining while we go on."

# n3's figures first: a paused node answers nothing, not even INFO, until it runs again.
for id in n2 n3; do
    figure "fwd_before_$id" "$(info_field "$id" ringkv_forwarded)"
    figure "served_before_$id" "$(info_field "$id" ringkv_forwards_served)"
done
figure old_ring "$(ring n3)"
within -p 0.05 60 late_in_join || { echo "   n4 did not get 80% of the way through its join within 60 s"; exit 1; }
notice "n4 has received 80% of its keys: prepare two pipelines for n3, connect to it, and pause it (SIGSTOP)."
rcli n4 KEYS 'stale:*' | sort -t : -k 2 -n > moved
head -n "$WRITES" moved > written
tail -n +$((WRITES + 1)) moved > unwritten
{ echo "INFO cluster"; sed 's/^/GET /' unwritten; echo "INFO cluster"; } > reads
{ echo "INFO cluster"; awk '{ print "SET " $1 " new-" $1 }' written; echo "INFO cluster"; } > writes
echo "   \$ pipe_to n3 reads writes &    (two connections; the commands go once the file go exists)"
pipe_to n3 reads writes &
pipe_pid=$!
within -p 0.05 10 test -f connected || { echo "   no connection to n3 within 10 s"; exit 1; }
run tb pause n3
figure moved "$(wc -l < moved)"
figure reads "$(wc -l < unwritten)"
notice "the keys n4 holds so far, $fig_moved: reads of $fig_reads of them (INFO, GETs, INFO) on one connection,"
notice "writes of the other $WRITES (INFO, SETs, INFO) on another, as a read waits for an earlier write to its key."
show cli n4 transfers '|' head -n 2
notice "n4 is still joining, and every live member, n3 included, holds the target ring: arcs are copied."

notice "while n3 is paused: send the pipelines; the join ends, and the others take the new ring."
run touch go
within -p 0.05 10 test -f sent || { echo "   the pipelines were not sent within 10 s"; exit 1; }
within -p 0.05 20 others_moved_on || { echo "   n1, n2 and n4 did not move on to the new ring within 20 s"; exit 1; }
figure new_ring "$(ring n1)"
run cli n1 status || true # exit 3: not converged, n3 holds another ring
notice "n4 is normal; n1, n2 and n4 hold ring $fig_new_ring, n3 (paused: suspect) still $fig_old_ring."
if ! still_up_on n1 || ! still_up_on n2; then
    echo "   n1 or n2 already sees n3 down: too late to show this"
    exit 1
fi

notice "now resume n3 while n1, n2 and n4 are paused for a moment: it serves the pipelines on the ring it holds."
run tb pause n1
run tb pause n2
run tb pause n4
run tb resume n3
within -p 0.05 10 n3_started || { echo "   n3 did not start the pipelines' requests within 10 s"; exit 1; }
show rcli n3 INFO cluster '|' grep -E '^ringkv_(digest|forwarded):'
figure ring_at_work "$(ring n3)"
figure fwd_at_work "$(($(info_field n3 ringkv_forwarded) - fig_fwd_before_n3))"
notice "n3 runs, still on ring $fig_ring_at_work, and has forwarded $fig_fwd_at_work requests: routed on its old ring."
notice "A resumed node hears the new ring within milliseconds; the others' pause widens that moment to show it."
run tb resume n1
run tb resume n2
run tb resume n4
wait "$pipe_pid" || { echo "   the replies did not all come"; exit 1; }

step "Which ring n3 held while it served the pipelines, and when it took the new one."
run grep -H '^ring' reads.replies writes.replies
notice "each INFO gives the ring n3 held when it got there: before and after the reads, and the writes."
run awk '/event=local_pause/ { on = 1 } on && /event=(local_pause|ring_changed)/' "$RINGKV_TESTBED/n3/ringkvd.log"
notice "n3 took the new ring (ring_changed) once the others ran again and gossip reached it."
figure rings_seen "$(grep -h '^ring' reads.replies writes.replies | cut -d ' ' -f 2 | sort -u | paste -sd ' ' -)"
figure infos_old "$(grep -h '^ring' reads.replies writes.replies | grep -c " $fig_old_ring\$")"

step "Check every reply: each read gives its key's value, each write OK; and n4's own copies of the written keys."
grep -v '^INFO' reads | paste -d ' ' - <(grep -v '^ring' reads.replies) > reads.checked
grep -v '^INFO' writes | paste -d ' ' - <(grep -v '^ring' writes.replies) > writes.checked
show cut -c 1-48 reads.checked '|' head -n 3
show cat writes.checked '|' head -n 3
figure reads_right "$(awk '{ n = $2; sub(/^stale:/, "", n) } $3 ~ ("^v" n "-x") { r++ } END { print r + 0 }' reads.checked)"
figure writes_ok "$(awk '$4 == "OK" { w++ } END { print w + 0 }' writes.checked)"
run cli n4 replicas "$(head -n 1 written)"
figure writes_on_n4 "$(new_on_n4)"
notice "n4, a replica of these keys under the new ring only, holds the new value of $fig_writes_on_n4 of the $WRITES written."

step "Who forwarded what: n3's old ring names n2 as a replica of these keys; n2's own ring does not."
for id in n2 n3; do
    before=fig_fwd_before_$id
    figure "fwd_$id" "$(($(info_field "$id" ringkv_forwarded) - ${!before}))"
    before=fig_served_before_$id
    figure "served_$id" "$(($(info_field "$id" ringkv_forwards_served) - ${!before}))"
done
show rcli n2 INFO cluster '|' grep -E 'ringkv_(forward|replica_not_mine)'
notice "n3's ring makes it no replica of the keys of $fig_fwd_n3 of these requests: it forwarded them to a replica of that ring."
notice "$fig_served_n2 went to n2, which forwarded every one on ($fig_fwd_n2) to the replicas of its own ring."

claim "n3 was stale while it served both pipelines: $fig_infos_old of their 4 INFOs gave ring $fig_old_ring (rings seen: $fig_rings_seen), as did n3 once it had forwarded $fig_fwd_at_work of the requests ($fig_ring_at_work), while n1, n2 and n4 held $fig_new_ring" -- \
    test "$fig_infos_old" = 4 -a "$fig_rings_seen" = "$fig_old_ring" -a "$fig_ring_at_work" = "$fig_old_ring" -a "$fig_new_ring" != "$fig_old_ring"
claim "all $fig_reads reads of keys n4 took returned the right value through the stale n3 ($fig_reads_right right); $fig_writes_ok of $WRITES writes were acknowledged, and n4 holds the new value of $fig_writes_on_n4" -- \
    holds 'm > 0 && r == m && w == k && b == k' m="$fig_reads" r="$fig_reads_right" w="$fig_writes_ok" b="$fig_writes_on_n4" k="$WRITES"
claim "n2, no replica of those keys any more, received $fig_served_n2 forwards from the stale n3 and forwarded all $fig_fwd_n2 on (n3 forwarded $fig_fwd_n3 in all)" -- \
    holds 's > 0 && f == s && t >= s' s="$fig_served_n2" f="$fig_fwd_n2" t="$fig_fwd_n3"
lesson_end
