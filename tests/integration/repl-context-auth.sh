#!/bin/sh
# Client contexts are authenticated (src/node/commands.c, proto/channel.c's
# channel_key_context_tag()): KGET hands out a clock and its tag under the
# cluster key, bound to the key it was read from, and KSET and KDEL take no
# other.  3 nodes, rf 3, and a node of another cluster (x1, its own key):
#
#   - the context KGET returns through any node works through every node
#     (KSET through each of the three with a context read through each), a
#     context of a key never written works for that key, and KDEL takes one;
#   - these are refused with "ERR invalid CONTEXT", by KSET and KDEL, and
#     change nothing (KGET R 3 answers the same): a hex digit of the clock
#     changed, one of the tag changed, the last byte cut, the tag removed,
#     the context of another key, of a key never written, and of the same
#     key in another cluster;
#   - the clock-grow attack (repro of a key made unusable for good): rounds
#     of KSET W 1 whose context is KGET's clock plus 100 invented ids, with
#     KGET's tag or with none, through n1 while n2 and n3 are paused, then
#     through n2 while n1 is paused: every one refused, and afterwards the
#     key reads and writes through every node, its clock naming no invented id.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

# ctx_of NODE KEY: the context KGET KEY R 3 returns through NODE.
ctx_of() { it_cli "$1" KGET "$2" R 3 | tr -d '\r' | head -1; }
# state KEY: KGET KEY R 3 through n1 on one line: the context, then the live values.
state() { it_cli n1 KGET "$1" R 3 | tr -d '\r' | tr '\n' ' '; }
# forge OP CTX [ARGS]: a context made from CTX (KGET's hex) without the cluster key.
#   flip POS        the hex digit at POS (from 0; negative: from the end) changed
#   grow NAME TAIL  CTX's clock and 100 invented ids NAME-0 .. NAME-99 at counter 1,
#                   followed by TAIL: "tag" what followed CTX's clock (its tag), "none"
#                   nothing
# A clock (storage/vclock.h): u16 count, then per entry u8 id length, the id, u64
# counter, u64 stamp, big-endian; a context: the clock's hex and 32 hex digits of tag.
forge() {
    python3 - "$@" << 'PY'
import struct, sys
op, ctx = sys.argv[1], sys.argv[2]
if op == "flip":
    i = int(sys.argv[3]) % len(ctx)
    print(ctx[:i] + ("1" if ctx[i] == "0" else "0") + ctx[i + 1:])
    sys.exit(0)
raw = bytes.fromhex(ctx)
n, p, ents = struct.unpack(">H", raw[:2])[0], 2, []
for _ in range(n):
    l = raw[p]
    ents.append((raw[p + 1:p + 1 + l], raw[p + 1 + l:p + 17 + l]))
    p += 17 + l
tag = raw[p:].hex()
ents += [(b"%s-%d" % (sys.argv[3].encode(), j), struct.pack(">QQ", 1, 1)) for j in range(100)]
ents.sort()
out = struct.pack(">H", len(ents)) + b"".join(bytes([len(i)]) + i + cs for i, cs in ents)
print(out.hex() + (tag if sys.argv[4] == "tag" else ""))
PY
}
# refused WHAT KEY CTX: KSET and KDEL of KEY with CTX answer ERR invalid CONTEXT and KEY's
# state through n1 stays as it was.
refused() {
    before=$(state "$2")
    for cmd in "KSET $2 forged CONTEXT $3 W 1" "KDEL $2 CONTEXT $3 W 1"; do
        # shellcheck disable=SC2086 # the command a word an argument
        got=$(it_cli n1 $cmd 2>&1)
        case $got in
        "ERR invalid CONTEXT: use the context KGET returned") ;;
        *) it_fail "$1: ${cmd%% *} answered '$(printf '%s' "$got" | head -c 200)'" ;;
        esac
    done
    [ "$(state "$2")" = "$before" ] || it_fail "$1: $2 changed: '$(state "$2")', was '$before'"
}

# another cluster: one node with a key of its own, holding a k of its own
"$RINGKV" keygen "$IT_DIR/other.key" > /dev/null || it_fail "keygen of another cluster's key"
it_node x1 --cluster-key "$IT_DIR/other.key" --rf 1 --r 1 --w 1
it_wait_ping x1
[ "$(it_cli x1 SET k theirs)" = OK ] || it_fail "SET k in the other cluster"
foreign=$(it_cli x1 KGET k | tr -d '\r' | head -1)
[ -n "$foreign" ] || it_fail "KGET k in the other cluster gave no context"

it_cluster 3 --request-timeout 1s
it_wait_converged

# a context read through any node works through every node
[ "$(it_cli n1 KSET k v0 W 3)" = OK ] || it_fail "KSET k v0 W 3"
for r in n1 n2 n3; do
    for w in n1 n2 n3; do
        ctx=$(ctx_of $r k)
        got=$(it_cli $w KSET k "$r$w" CONTEXT "$ctx" W 3 2>&1)
        [ "$got" = OK ] || it_fail "KSET k through $w with a context read through $r: '$got'"
        [ "$(it_cli n1 KGET k R 3 | tr -d '\r' | tail -n +2)" = "$r$w" ] ||
            it_fail "k after KSET through $w: '$(state k)', want $r$w alone"
    done
done
fresh=$(ctx_of n2 fresh)
[ "$(it_cli n3 KSET fresh one CONTEXT "$fresh")" = OK ] || it_fail "KSET with a never-written key's context"
[ "$(it_cli n1 GET fresh)" = one ] || it_fail "GET fresh: '$(it_cli n1 GET fresh)'"
[ "$(it_cli n1 SET gone x)" = OK ] || it_fail "SET gone"
[ "$(it_cli n2 KDEL gone CONTEXT "$(ctx_of n3 gone)")" = OK ] || it_fail "KDEL gone with its context"
[ -z "$(it_cli n1 GET gone)" ] || it_fail "GET gone after KDEL: '$(it_cli n1 GET gone)'"
it_log "a context read through any node works for KSET and KDEL through every node"

# forged, altered, cut and misplaced contexts
[ "$(it_cli n1 KSET other v W 3)" = OK ] || it_fail "KSET other v W 3"
ctx=$(ctx_of n1 k)
refused "a digit of the clock changed" k "$(forge flip "$ctx" -33)"
refused "a digit of the tag changed" k "$(forge flip "$ctx" -1)"
refused "the first digit changed" k "$(forge flip "$ctx" 0)"
refused "the last byte cut" k "${ctx%??}"
refused "the last digit cut" k "${ctx%?}"
refused "the tag removed" k "$(printf '%s' "$ctx" | head -c $((${#ctx} - 32)))"
refused "the tag alone" k "$(printf '%s' "$ctx" | tail -c 32)"
refused "not hex" k "zz$ctx"
refused "the context of another key" k "$(ctx_of n1 other)"
refused "the context of a key never written" k "$(ctx_of n1 never)"
refused "the context of k in another cluster" k "$foreign"
refused "k's context for another key" other "$ctx"
[ "$(it_cli n2 KSET k after CONTEXT "$ctx")" = OK ] || it_fail "KSET k with its own context after the refusals"
it_log "changed, cut, untagged, other keys' and another cluster's contexts: refused, nothing changed"

# the clock-grow attack, on both sides of a partition
# grow NODE NAME ROUNDS: ROUNDS forged KSETs W 1 through NODE, each refused
grow() {
    round=0
    while [ "$round" -lt "$3" ]; do
        ctx=$(it_cli "$1" KGET k R 1 | tr -d '\r' | head -1)
        [ -n "$ctx" ] || it_fail "KGET k R 1 through $1 gave no context"
        for tail in tag none; do
            forged=$(forge grow "$ctx" "$2$round" $tail)
            got=$(it_cli "$1" KSET k "$2$round" CONTEXT "$forged" W 1 2>&1)
            case $got in
            "ERR invalid CONTEXT: use the context KGET returned") ;;
            *) it_fail "KSET k through $1 with 100 invented ids ($2$round, $tail): '$got'" ;;
            esac
        done
        round=$((round + 1))
    done
}
kill -STOP "$N2_PID" "$N3_PID"
grow n1 x 4
kill -STOP "$N1_PID"
kill -CONT "$N2_PID" "$N3_PID"
grow n2 y 4
kill -CONT "$N1_PID"
it_wait_converged
for n in n1 n2 n3; do
    [ "$(it_cli $n GET k)" = after ] || it_fail "GET k through $n after the attack: '$(it_cli $n GET k 2>&1)'"
done
for n in n1 n2 n3; do
    [ "$(it_cli $n SET k "set$n")" = OK ] || it_fail "SET k through $n after the attack"
    [ "$(it_cli n1 GET k)" = "set$n" ] || it_fail "GET k after SET through $n: '$(it_cli n1 GET k 2>&1)'"
    ctx=$(ctx_of $n k)
    [ "$(it_cli $n KSET k "kset$n" CONTEXT "$ctx")" = OK ] || it_fail "KSET k through $n after the attack"
done
ctx=$(ctx_of n3 k)
case $ctx in
*"$(printf 'x0-0' | od -An -tx1 | tr -d ' \n')"* | *"$(printf 'y0-0' | od -An -tx1 | tr -d ' \n')"*)
    it_fail "k's context names an invented id: $ctx"
    ;;
esac
it_log "KSETs adding 100 invented ids, on both sides of a partition: refused; k reads and writes"
it_pass "KSET and KDEL take only a context KGET made for their key"
