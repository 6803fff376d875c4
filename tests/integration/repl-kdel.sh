#!/bin/sh
# KDEL key CONTEXT ctx [W n] on 3 replicating nodes (rf 3, siblings), real
# ringkvd processes in a network namespace of the test's own:
#
#   - KDEL with the context KGET returned deletes the key: OK, every
#     replica holds a tombstone, GET through every node says nil, and a
#     second KDEL with a context of the tombstone is OK too;
#   - it deletes exactly the siblings its context saw: with siblings x and
#     y (both over the same base), a context of them, then z written over
#     the base alone, KDEL with the context of x and y leaves z, alone,
#     through every node (KGET R 3);
#   - a KDEL whose context saw none of the live values takes nothing
#     away: the value written beside the context stays, the
#     tombstone beside it (GET: -CONFLICT naming the delete), and a KDEL with
#     KGET's context then deletes it;
#   - a KSET with KDEL's context after it is a new value over the tombstone;
#   - bad uses are refused with an error and change nothing: no CONTEXT
#     (DEL is the blind delete), a context that is not one (and one
#     truncated), CONTEXT or W twice, a W over the replicas, KDEL inside
#     MULTI (EXECABORT), and W 3 with a replica paused (NOREPLICAS or
#     TRYAGAIN, nothing acknowledged).
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net

# ctx_of NODE KEY: the context KGET KEY returns through NODE.
ctx_of() { it_cli "$1" KGET "$2" R 3 | tr -d '\r' | head -1; }
# live_of NODE KEY: KGET's live values through NODE, sorted, on one line.
live_of() { it_cli "$1" KGET "$2" R 3 | tr -d '\r' | tail -n +2 | sort | tr '\n' ' '; }
# tombstones_of KEY: what each replica says of "tombstone" (RINGKV REPLICAS), on one line.
tombstones_of() {
    it_cli n1 RINGKV REPLICAS "$1" | tr -d '\r' |
        awk 'p { print; p = 0 } $0 == "tombstone" { p = 1 }' | tr '\n' ' '
}

it_cluster 3
it_wait_converged

# a delete with the context KGET returned
[ "$(it_cli n1 SET k1 one)" = OK ] || it_fail "SET k1"
ctx=$(ctx_of n2 k1)
[ -n "$ctx" ] || it_fail "KGET k1 gave no context"
got=$(it_cli n2 KDEL k1 CONTEXT "$ctx")
[ "$got" = OK ] || it_fail "KDEL k1 with KGET's context: '$got', want OK"
for n in n1 n2 n3; do
    got=$(it_cli $n GET k1)
    [ -z "$got" ] || it_fail "GET k1 through $n after KDEL: '$got'"
done
it_wait_no_hints "hints" n1 n2 n3
[ "$(tombstones_of k1)" = "1 1 1 " ] ||
    it_fail "k1 after KDEL: replicas' tombstone flags '$(tombstones_of k1)', want 1 on each"
ctx=$(ctx_of n3 k1)
got=$(it_cli n3 KDEL k1 CONTEXT "$ctx")
[ "$got" = OK ] || it_fail "KDEL of a deleted key: '$got', want OK"
it_log "KDEL with KGET's context: a tombstone on every replica, nil through every node"

# exactly the siblings the context saw
[ "$(it_cli n1 SET k2 base)" = OK ] || it_fail "SET k2 base"
base=$(ctx_of n1 k2)
[ "$(it_cli n1 KSET k2 x CONTEXT "$base")" = OK ] || it_fail "KSET k2 x"
[ "$(it_cli n2 KSET k2 y CONTEXT "$base")" = OK ] || it_fail "KSET k2 y"
[ "$(live_of n3 k2)" = "x y " ] || it_fail "k2 siblings before: '$(live_of n3 k2)', want 'x y '"
seen=$(ctx_of n3 k2)
[ "$(it_cli n3 KSET k2 z CONTEXT "$base")" = OK ] || it_fail "KSET k2 z over the base"
[ "$(live_of n1 k2)" = "x y z " ] || it_fail "k2 siblings: '$(live_of n1 k2)', want 'x y z '"
got=$(it_cli n1 KDEL k2 CONTEXT "$seen")
[ "$got" = OK ] || it_fail "KDEL k2 with the context of x and y: '$got', want OK"
it_wait_no_hints "hints" n1 n2 n3
for n in n1 n2 n3; do
    [ "$(live_of $n k2)" = "z " ] || it_fail "k2 through $n after KDEL: '$(live_of $n k2)', want 'z '"
done
it_log "KDEL deletes the siblings its context saw and keeps the one written beside them"

# a context that never saw the live value: nothing taken away (0), the tombstone beside it
[ "$(it_cli n1 SET k4 base)" = OK ] || it_fail "SET k4 base"
old=$(ctx_of n1 k4)
[ "$(it_cli n2 KSET k4 unseen CONTEXT "$old")" = OK ] || it_fail "KSET k4 unseen"
got=$(it_cli n3 KDEL k4 CONTEXT "$old")
[ "$got" = OK ] || it_fail "KDEL k4 with a context that never saw 'unseen': '$got', want OK"
it_wait_no_hints "hints" n1 n2 n3
for n in n1 n2 n3; do
    [ "$(live_of $n k4)" = "unseen " ] || it_fail "k4 through $n: '$(live_of $n k4)', want 'unseen '"
    got=$(it_cli $n GET k4 2>&1)
    case $got in "CONFLICT the key has 2 siblings (a delete concurrent with a write"*) ;;
    *) it_fail "GET k4 through $n (a value and a delete beside it): '$got'" ;; esac
done
ctx=$(ctx_of n1 k4)
[ "$(it_cli n1 KDEL k4 CONTEXT "$ctx")" = OK ] || it_fail "KDEL k4 with KGET's context"
for n in n1 n2 n3; do
    got=$(it_cli $n GET k4)
    [ -z "$got" ] || it_fail "GET k4 through $n after the second KDEL: '$got'"
done
it_log "KDEL with a context that saw no live value: the value kept beside it; KGET's context deletes it"

# a write with the delete's context
ctx=$(ctx_of n2 k2)
[ "$(it_cli n2 KSET k2 after CONTEXT "$ctx")" = OK ] || it_fail "KSET k2 after CONTEXT"
for n in n1 n2 n3; do
    [ "$(it_cli $n GET k2)" = after ] || it_fail "GET k2 through $n: '$(it_cli $n GET k2)'"
done
it_log "a KSET with the context after KDEL is the value, through every node"

# refusals: each an error, nothing changed
[ "$(it_cli n1 SET k3 kept)" = OK ] || it_fail "SET k3"
ctx=$(ctx_of n1 k3)
expect_error() {
    want=$1
    shift
    got=$(it_cli n1 "$@" 2>&1)
    case $got in "$want"*) ;; *) it_fail "$*: '$got', want an error starting '$want'" ;; esac
}
expect_error "ERR wrong number" KDEL k3
expect_error "ERR syntax error" KDEL k3 W 2
expect_error "ERR wrong number" KDEL
expect_error "ERR invalid CONTEXT" KDEL k3 CONTEXT zz
expect_error "ERR invalid CONTEXT" KDEL k3 CONTEXT "${ctx%??}"
expect_error "ERR syntax error" KDEL k3 CONTEXT "$ctx" CONTEXT "$ctx"
expect_error "ERR syntax error" KDEL k3 CONTEXT "$ctx" W 2 W 2
expect_error "ERR syntax error" KDEL k3 CONTEXT "$ctx" W
expect_error "ERR" KDEL k3 CONTEXT "$ctx" W 4
got=$(printf 'MULTI\nKDEL k3 CONTEXT %s\nEXEC\n' "$ctx" |
    redis-cli -h "$(it_addr n1)" -p "$N1_CLIENT" 2>&1 | tr '\n' ' ')
case $got in *"not allowed inside MULTI"*EXECABORT*) ;; *) it_fail "KDEL inside MULTI: '$got'" ;; esac
[ "$(it_cli n2 GET k3)" = kept ] || it_fail "k3 after refused KDELs: '$(it_cli n2 GET k3)'"
kill -STOP "$N3_PID"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait it_ask state down n3 \
    "$(it_addr n1):$N1_CLIENT" || { kill -CONT "$N3_PID"; it_fail "n1 never saw n3 down"; }
got=$(it_cli n1 KDEL k3 CONTEXT "$ctx" W 3 2>&1)
kill -CONT "$N3_PID"
case $got in NOREPLICAS* | TRYAGAIN*) ;; *) it_fail "KDEL W 3 with n3 paused: '$got'" ;; esac
it_log "KDEL refuses a missing or bad CONTEXT, repeated options and W 3 with a replica down"
it_pass "KDEL deletes exactly what its context saw"
