#!/bin/sh
# The actor: the id a node's writes count under in vector clocks, one per
# life of its data directory (storage/store.c), shown by INFO as
# ringkv_actor.  A write's context names it; a clean restart keeps it; a
# node whose data directory was wiped starts with a new one (so it never
# hands out a (clock id, counter) pair again, Riak's kv679), and so does a
# node restarted after kill -9.  Each new actor is logged with its reason.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

actor() {
    it_cli n1 INFO server | tr -d '\r' | sed -n 's/^ringkv_actor://p'
}

# hex ID: the bytes of ID in lowercase hex, as a context (a clock) spells an id.
hex() {
    printf '%s' "$1" | od -An -tx1 | tr -d ' \n'
}

start() {
    it_node n1 --rf 1 --r 1 --w 1
    it_wait_ping n1
}

start
a1=$(actor)
printf '%s\n' "$a1" | grep -Eqx 'n1:[0-9a-f]{8}' || it_fail "actor '$a1' is not n1:<8 hex digits>"
grep -q "event=store_actor_new .*actor=$a1 reason=created" "$IT_DIR/n1.log" ||
    it_fail "no store_actor_new line for a new directory"
it_expect_eq "SET k x" "$(it_cli n1 SET k x)" "OK"
ctx=$(it_cli n1 KGET k | head -n 1)
case "$ctx" in *"$(hex "$a1")"*) ;; *) it_fail "context $ctx does not name the actor $a1" ;; esac

# A clean restart keeps the actor and the data.
it_stop n1
start
it_expect_eq "actor after a clean restart" "$(actor)" "$a1"
it_expect_eq "GET k after a restart" "$(it_cli n1 GET k)" "x"

# A wiped data directory: a new actor, and a write counts under it.
it_stop n1
rm -rf "$IT_DIR/n1.data"
start
a2=$(actor)
[ -n "$a2" ] && [ "$a2" != "$a1" ] || it_fail "actor after a wipe: '$a2' (before: $a1)"
printf '%s\n' "$a2" | grep -Eqx 'n1:[0-9a-f]{8}' || it_fail "actor '$a2' is not n1:<8 hex digits>"
it_expect_eq "GET k after the wipe" "$(it_cli n1 GET k)" ""
it_expect_eq "SET k y" "$(it_cli n1 SET k y)" "OK"
ctx=$(it_cli n1 KGET k | head -n 1)
case "$ctx" in *"$(hex "$a2")"*) ;; *) it_fail "context $ctx does not name the actor $a2" ;; esac

# kill -9: the life never closed, so the next one takes a new actor.
it_stop n1 KILL
start
a3=$(actor)
[ -n "$a3" ] && [ "$a3" != "$a2" ] || it_fail "actor after kill -9: '$a3' (before: $a2)"
grep -q "event=store_actor_new .*actor=$a3 reason=unclean" "$IT_DIR/n1.log" ||
    it_fail "no store_actor_new line with reason=unclean after kill -9"
it_expect_eq "GET k after kill -9" "$(it_cli n1 GET k)" "y"
it_pass
