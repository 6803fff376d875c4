#!/bin/sh
# `ringkv gossip sim`: the same seed gives byte-identical traces and a
# different seed a different one; a partition healed at a known time
# converges within the bound the simulator prints; a crashed member's
# detector inputs are traced and it is seen down only phi 8 after them; a join
# at 255 members (every SYN whole) is seen by all within 3 rounds; a failed check prints
# the seed and a command that replays the run, and that command fails the
# same way; --json has the documented fields; bad options exit 2.
set -eu
: "${top_builddir:?}"
ringkv="$top_builddir/src/ringkv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gossip-sim: $*"; exit 1; }

# Determinism: every delivered message and every member event, twice.
small="--nodes 24 --duration 3 --loss 0.02 --jitter 2"
"$ringkv" gossip sim $small --seed 7 --trace "$tmp/a" > "$tmp/a.out" || fail "run a: $(cat "$tmp/a.out")"
"$ringkv" gossip sim $small --seed 7 --trace "$tmp/b" > /dev/null || fail "run b"
"$ringkv" gossip sim $small --seed 8 --trace "$tmp/c" > /dev/null || fail "run c"
test "$(wc -l < "$tmp/a")" -gt 10000 || fail "trace a is short: $(wc -l < "$tmp/a") lines"
for what in 'deliver n[0-9]*->n[0-9]* ping ' 'deliver n[0-9]*->n[0-9]* gossip_syn ' \
    ' join n24$' ' crash n[0-9]*$' ' member_down n' ' member_added n24$' ' loss 0.0500$'; do
    grep -q "$what" "$tmp/a" || fail "trace a has no line matching '$what'"
done
# The crashed member's detector inputs: arrivals (few: a relayed version
# counts only above the one its pings named) only after the crash, and
# every member sees it down no sooner than phi 8 after its own last arrival
# (8 / log10(e) = 18.4 intervals of at least 200 ms: 3.68 s, detector.h).
python3 - "$tmp/a" <<'PY' || fail "detector arrivals of the crashed member"
import sys
crash = victim = None
last, down = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[1] == "crash":
        crash, victim = float(f[0]), f[2]
    elif len(f) > 3 and f[2] == "detector_arrival":
        assert f[3] == victim and float(f[0]) >= crash, line
        # dated: at the delivery or before it (membership.h)
        at = float(f[f.index("at") + 1])
        assert at <= float(f[0]) + 1e-3, line
        last[f[1]] = at
    elif len(f) > 3 and f[2] == "member_down" and f[3] == victim and f[1] not in down:
        down[f[1]] = float(f[0])
assert victim is not None and down, (victim, len(down))
# the last arrival: a relayed version it had not pinged (rare: a ping lost), or
# its last ping, sent at most a round before the crash
for member, t in down.items():
    assert t - last.get(member, crash - 0.2) >= 3.68, (member, t, last.get(member))
print("gossip-sim: %d members took in beats of %s after its crash%s"
      % (len(last), victim, ", the latest %.2f s after it" % (max(last.values()) - crash)
         if last else ""))
PY
cmp -s "$tmp/a" "$tmp/b" || fail "the same seed gave different traces: $(cmp "$tmp/a" "$tmp/b")"
cmp -s "$tmp/a" "$tmp/c" && fail "seeds 7 and 8 gave the same trace"
grep -q '^gossip sim: seed 7;' "$tmp/a.out" || fail "the table does not name its seed"

# A partition of two halves from 3 s to 8 s: both sides see the other down,
# and after the heal the cluster converges within the printed bound.
"$ringkv" gossip sim --nodes 20 --seed 11 --phases join --partition '0-9|10-19' \
    --partition-at 3 --heal-at 8 --trace "$tmp/p" --json > "$tmp/p.json" ||
    fail "partition run failed: $(cat "$tmp/p.json")"
grep -q '^3.000000 partition n0-n9|n10-n19$' "$tmp/p" || fail "no partition line in the trace"
grep -q '^8.000000 heal$' "$tmp/p" || fail "no heal line in the trace"
awk '$1 > 3 && $1 < 8 && $2 == "n3" && $3 == "member_down" && $4 == "n15"' "$tmp/p" | grep -q . ||
    fail "n3 never saw n15 down during the partition"
awk '$1 > 8 && $2 == "n3" && $3 == "member_up" && $4 == "n15"' "$tmp/p" | grep -q . ||
    fail "n3 never saw n15 up after the heal"
python3 - "$tmp/p.json" <<'PY' || fail "partition JSON: $(cat "$tmp/p.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["seed"] == 11, j
(r,) = j["runs"]
p = r["partition"]
assert p["ok"] is True and 0 < p["converge_rounds"] <= p["bound_rounds"], p
assert r["join_ok"] is True and r["join_rounds"] <= r["join_bound_rounds"], r
assert r["crash_rounds"] is None and r["false_suspicions_per_node_hour"] is None, r
PY

# Up to 255 other members every SYN lists the whole table, and the answer
# puts the entries its sender lacks before the newer versions of the ones it
# holds (membership.c): so a member that has never heard of the newcomer
# learns of it from the first member it gossips with that has.  With the
# newer versions first (every entry has one every round) the newcomer was
# crowded out: the join took 11.0 rounds at 255 members (seed 1), against
# 1.0 now.
"$ringkv" gossip sim --nodes 255 --seed 1 --phases join --json > "$tmp/j255.json" ||
    fail "N=255 join run failed: $(cat "$tmp/j255.json")"
python3 - "$tmp/j255.json" <<'PY' || fail "N=255 join: $(cat "$tmp/j255.json")"
import json, sys
(r,) = json.load(open(sys.argv[1]))["runs"]
assert r["join_ok"] is True and r["join_rounds"] <= 3, r
PY

# --json of a whole run: the documented fields, SWIM's figures beside ours.
"$ringkv" gossip sim --nodes 10,12 --seed 3 --duration 2 --json > "$tmp/j.json" || fail "json run"
python3 - "$tmp/j.json" <<'PY' || fail "JSON fields: $(cat "$tmp/j.json")"
import json, math, sys
j = json.load(open(sys.argv[1]))
assert j["seed"] == 3 and j["interval_ms"] == 200, j
assert [r["nodes"] for r in j["runs"]] == [10, 12]
for r in j["runs"]:
    for k in ("join_rounds", "join_seconds", "crash_rounds", "crash_seconds",
              "msgs_per_node_round", "bytes_per_node_round", "events", "messages",
              "node_rounds", "node_rounds_per_second", "maxrss_kb", "memory_estimate_kb"):
        assert isinstance(r[k], (int, float)) and r[k] >= 0, (k, r)
    assert r["join_ok"] and r["crash_ok"], r
    assert set(r["false_suspicions_per_node_hour"]) == {"loss_1pct", "loss_5pct"}, r
    assert abs(r["swim_rounds"] - math.log2(r["nodes"])) < 1e-6 and r["swim_msgs_per_node_round"] == 2
    # every member pings every other once a round and answers each ping: 2(N-1) and the exchanges
    assert 2 * (r["nodes"] - 1) <= r["msgs_per_node_round"] <= 2 * (r["nodes"] - 1) + 4, r
    # a crashed member is down after about 18.4 silent intervals (detector.h)
    assert 17 <= r["crash_rounds"] <= r["crash_bound_rounds"], r
PY

# A check that fails: at 99% loss nobody hears the joiner.  Exit 3, the
# seed and a replay command, which replays the run to the same failure.
set +e
"$ringkv" gossip sim --nodes 10 --seed 5 --loss 0.99 --phases join > "$tmp/f.out" 2> "$tmp/f.err"
status=$?
set -e
test "$status" -eq 3 || fail "a failed check exited $status, not 3: $(cat "$tmp/f.err")"
grep -q 'N=10 seed 5: check failed: every member holds the joiner' "$tmp/f.err" ||
    fail "no failed-check line: $(cat "$tmp/f.err")"
replay=$(sed -n 's/^ringkv: replay with: ringkv //p' "$tmp/f.err")
test -n "$replay" || fail "no replay line: $(cat "$tmp/f.err")"
set +e
# shellcheck disable=SC2086
eval "\"\$ringkv\" $replay" > "$tmp/r.out" 2> "$tmp/r.err"
status=$?
set -e
test "$status" -eq 3 || fail "the replay exited $status, not 3"
cmp -s "$tmp/f.err" "$tmp/r.err" || fail "the replay differs: $(cat "$tmp/r.err")"

# The replay command is the run's options read as getopt read them (an
# abbreviated --node is --nodes, which the replay's own --nodes must not
# follow), each value one shell word (a trace path with a quote and a ';').
set +e
"$ringkv" gossip sim --node 10,12 --se 5 --loss=0.99 --phases join --trace "$tmp/it's;x" \
    > /dev/null 2> "$tmp/q.err"
status=$?
set -e
test "$status" -eq 3 || fail "the abbreviated run exited $status, not 3: $(cat "$tmp/q.err")"
replay=$(sed -n 's/^ringkv: replay with: ringkv //p' "$tmp/q.err" | head -n 1)
(
    cd "$tmp"
    set +e
    # shellcheck disable=SC2086
    eval "\"\$ringkv\" $replay" > r.out 2> r.err
    test $? -eq 3
) || fail "the replay '$replay' did not exit 3: $(cat "$tmp/r.err")"
test "$(grep -c 'check failed' "$tmp/r.err")" -eq 1 || fail "the replay of N=10 ran other sizes: $(cat "$tmp/r.err")"
grep -q 'N=10 seed 5: check failed' "$tmp/r.err" || fail "the replay is not N=10 seed 5: $(cat "$tmp/r.err")"
test -s "$tmp/it's;x" || fail "the replay did not write the trace it names"
test ! -e "$tmp/x" || fail "the replay line ran part of the trace path as a command"

# A trace that cannot be written is reported even when a check failed.
set +e
"$ringkv" gossip sim --nodes 10 --seed 5 --loss 0.99 --phases join --trace /dev/full > /dev/null 2> "$tmp/full.err"
status=$?
set -e
test "$status" -eq 1 || fail "a failed trace with a failed check exited $status, not 1"
grep -q "cannot write the trace '/dev/full'" "$tmp/full.err" || fail "no trace error: $(cat "$tmp/full.err")"

# A phase not run shows '-' in the table, as its figures are null in JSON.
"$ringkv" gossip sim --nodes 10 --seed 3 --phases join > "$tmp/t.out"
tail -n 1 "$tmp/t.out" | awk '$5 == "-" && $6 == "-" && $7 == "-" && $8 == "-" { ok = 1 } END { exit !ok }' ||
    fail "crash and false-suspicion columns of a run of the join alone: $(tail -n 1 "$tmp/t.out")"

# Bad input: one line, exit 2.  Counts are digits only (a
# "-18446744073709551606" is not 10, a --tokens 1.9 not 1); a --phases item
# is read whole, however long the list; a partition starts no sooner than
# the warm-up ends (0.6 s).
long_phases=",,,join,join,join,join,join,join,join,join,join,join,join,crashfoo"
for bad in "--nodes 2" "--nodes 10,x" "--nodes 8192" "--loss 1.5" "--partition 0-4|3-9 --partition-at 1 --heal-at 2" \
    "--partition 0-4|5-9" "--partition-at 3" "--phases join,dance" "--bogus" \
    "--nodes -18446744073709551606" "--nodes +10" \
    "--partition 0--18446744073709551615|5-9 --partition-at 1 --heal-at 2" "--phases $long_phases" \
    "--partition 0-4|5-9 --partition-at 0 --heal-at 2" \
    "--partition 0-4|5-9 --partition-at 0.8 --heal-at 2 --interval 300" "--help" "--trace" \
    "--seed 1.5" "--seed 1e3" "--tokens 1.9" "--interval 10.5"; do
    set +e
    # shellcheck disable=SC2086
    "$ringkv" gossip sim --nodes 10 $bad > "$tmp/bad.out" 2> "$tmp/bad.err"
    status=$?
    set -e
    test "$status" -eq 2 || fail "'$bad' exited $status, not 2"
    grep -q '^ringkv: ' "$tmp/bad.err" || fail "'$bad': no error line: $(cat "$tmp/bad.err")"
    # one error line and the usage, none of getopt's own
    grep -Evq '^(ringkv|usage): ' "$tmp/bad.err" && fail "'$bad': a stray line: $(cat "$tmp/bad.err")"
    test "$(grep -c '^ringkv: ' "$tmp/bad.err")" -eq 1 || fail "'$bad': more than one error line"
done
# The largest size is one under the ring's member bound (RING_MEMBERS_MAX 8192), the joiner's room.
set +e
"$ringkv" gossip sim --nodes 5000,8192 > "$tmp/bad.out" 2> "$tmp/bad.err"
set -e
grep -q 'sizes from 3 to 8191' "$tmp/bad.err" || fail "no size bound named: $(cat "$tmp/bad.err")"
# A size whose tables and rings cannot fit is refused before it starts, with the figures
# (8191 members of 256 tokens: two rings of 2 M tokens in each of 8192 tables).
set +e
"$ringkv" gossip sim --nodes 8191 --tokens 256 --phases join > "$tmp/big.out" 2> "$tmp/big.err"
status=$?
set -e
test "$status" -eq 1 || fail "a size too large exited $status, not 1: $(cat "$tmp/big.err")"
grep -Eq '^ringkv: gossip sim: 8191 members need about [0-9.]+ GB for their member tables, rings and messages in flight; [0-9.]+ GB is available$' \
    "$tmp/big.err" || fail "no refusal with its figures: $(cat "$tmp/big.err")"
# ... before any size runs and before the trace is opened: the trace of an
# earlier run stays, and no table row of the smaller size is printed.
echo "an earlier trace" > "$tmp/keep"
set +e
"$ringkv" gossip sim --nodes 10,8191 --tokens 256 --trace "$tmp/keep" > "$tmp/big.out" 2> "$tmp/big.err"
status=$?
set -e
test "$status" -eq 1 || fail "a list with a size too large exited $status, not 1"
test "$(cat "$tmp/keep")" = "an earlier trace" || fail "a refused run truncated the trace file"
test ! -s "$tmp/big.out" || fail "a refused list ran its smaller size first: $(cat "$tmp/big.out")"
# Under a memory limit (ulimit -v) the room left below it counts: 300 members
# need about 76 MB there, more than a 60 MB limit leaves.  Past the limit
# the membership code would take failed allocations as lost messages and
# the run would end in a failed check that a replay would not repeat.
# under_limit KB COMMAND...: run COMMAND under `ulimit -v KB`, its output in
# $tmp/lim.out and lim.err; prints its exit status.
under_limit() {
    kb=$1
    shift
    set +e
    (
        ulimit -v "$kb"
        exec "$@"
    ) > "$tmp/lim.out" 2> "$tmp/lim.err"
    echo $?
    set -e
}
case " ${RINGKV_SAN_CFLAGS:-} " in
*-fsanitize=*) ;; # a sanitizer's shadow memory does not fit under such a limit
*)
    status=$(under_limit 60000 "$ringkv" gossip sim --nodes 300 --seed 1 --duration 1 --phases join)
    test "$status" -eq 1 || fail "a run under a 60 MB limit exited $status, not 1: $(cat "$tmp/lim.err")"
    grep -Eq "^ringkv: gossip sim: 300 members need about [0-9]+ MB .* is available under this process's memory limit" \
        "$tmp/lim.err" || fail "no refusal under the limit: $(cat "$tmp/lim.err")"
    # Messages in flight count: a 10 s latency over 10 ms rounds keeps 1000 rounds of
    # every member's pings in the queue, about 2.6 GB at 100 members.
    status=$(under_limit 1000000 timeout 60 "$ringkv" gossip sim --nodes 100 --seed 1 --latency 10000 --interval 10)
    test "$status" -eq 1 || fail "a run of 1000 rounds in flight exited $status, not 1: $(cat "$tmp/lim.err")"
    grep -Eq "^ringkv: gossip sim: 100 members need about [0-9.]+ GB for their member tables, rings and messages in flight" \
        "$tmp/lim.err" || fail "no refusal of the messages in flight: $(cat "$tmp/lim.err")"
    ;;
esac
echo "gossip-sim: ok"
