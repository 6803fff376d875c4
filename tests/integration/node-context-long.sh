#!/bin/sh
# A context as long as KGET makes it, one node (rf 1), a real ringkvd: every
# start after kill -9 takes a new actor (README "Counters are never
# reused"), and a write through it adds the actor to the key's clock, where
# pruning keeps every entry younger than a day.  With a node id of 55
# characters each entry is 81 bytes; after 66 such lives the key's context
# is some 10,700 hex digits.  KSET and KDEL take that context as KGET
# returned it (they once refused any past 64 full-length entries), and a
# context one digit longer is still refused.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

id=n$(printf '%054d' 0 | tr 0 x)
lives=66
i=0
while [ $i -lt $lives ]; do
    it_node "$id"
    it_wait_ping "$id"
    [ "$(it_cli "$id" SET k "v$i")" = OK ] || it_fail "SET k in life $i"
    it_stop "$id" KILL
    i=$((i + 1))
done
it_node "$id"
it_wait_ping "$id"
ctx=$(it_cli "$id" KGET k | tr -d '\r' | head -1)
[ "${#ctx}" -gt 10404 ] || it_fail "the context of $lives lives is ${#ctx} hex digits, want over 10404"
got=$(it_cli "$id" KSET k "${ctx}0" CONTEXT "${ctx}0" 2>&1)
case $got in "ERR invalid CONTEXT"*) ;; *) it_fail "KSET with a context one digit longer: '$got'" ;; esac
got=$(it_cli "$id" KSET k new CONTEXT "$ctx" 2>&1)
[ "$got" = OK ] || it_fail "KSET with the ${#ctx}-digit context KGET returned: '$got'"
ctx=$(it_cli "$id" KGET k | tr -d '\r' | head -1)
got=$(it_cli "$id" KDEL k CONTEXT "$ctx" 2>&1)
[ "$got" = OK ] || it_fail "KDEL with the ${#ctx}-digit context KGET returned: '$got'"
[ -z "$(it_cli "$id" GET k)" ] || it_fail "GET k after KDEL: '$(it_cli "$id" GET k)'"
it_pass "KSET and KDEL take a context of ${#ctx} hex digits, as KGET returned it"
