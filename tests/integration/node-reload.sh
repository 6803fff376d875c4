#!/bin/sh
# SIGHUP reloads a running node's settings from its config file, with the
# command line's flags over it (src/node/reload.h): a changed runtime
# setting takes effect (CONFIG GET shows it) with one log line each; a
# changed start-only setting is refused with a log line naming it and keeps
# its old value; a value set by CONFIG SET goes back to the file's; a file
# that does not load, or loads but does not check, changes nothing and the
# log says why.  The node serves throughout.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
conf="$IT_DIR/n1.conf"
log="$IT_DIR/n1.log"

# get NAME: the setting's value as CONFIG GET shows it.
get() {
    it_cli n1 CONFIG GET "$1" | sed -n 2p
}

# hup N: send SIGHUP and wait until the node has logged N reload outcomes.
hup() {
    kill -HUP "$N1_PID" || it_fail "SIGHUP: the node is gone"
    it_wait reloads_are "$1" || it_fail "no reload outcome logged after SIGHUP number $1"
}

reloads_are() {
    [ "$(grep -cE 'event=config_(reload|reload_failed) ' "$log")" -eq "$1" ]
}

printf '%s\n' '# first' 'rack r1' 'maxclients 100' 'timeout 300s' 'log-level info' > "$conf"
it_node n1 --config "$conf" --rf 1 --r 1 --w 1 --tokens 8
it_wait_ping n1
it_expect_eq "maxclients at start" "$(get maxclients)" 100

# Two runtime settings and a start-only one change.
printf '%s\n' 'rack r2' 'maxclients 200' 'timeout 2m' 'log-level info' > "$conf"
hup 1
it_expect_eq "maxclients after SIGHUP" "$(get maxclients)" 200
it_expect_eq "timeout after SIGHUP (CONFIG GET: seconds, as Redis)" "$(get timeout)" 120
it_expect_eq "rack (start-only) after SIGHUP" "$(get rack)" r1
grep -q 'event=config_set setting=maxclients source=SIGHUP' "$log" ||
    it_fail "no config_set line for maxclients"
grep -q 'event=config_set setting=timeout source=SIGHUP' "$log" ||
    it_fail "no config_set line for timeout"
grep -q 'event=config_refused setting=rack reason=start-only source=SIGHUP' "$log" ||
    it_fail "no config_refused line naming rack"
grep -q 'event=config_set setting=log-level' "$log" &&
    it_fail "log-level did not change, yet a config_set line names it"
grep -q 'event=config_reload .*refused=1' "$log" || it_fail "config_reload does not count the refusal"

# CONFIG SET changes maxclients; the next SIGHUP takes the file's value back.
it_expect_eq "CONFIG SET" "$(it_cli n1 CONFIG SET maxclients 150)" OK
it_expect_eq "maxclients after CONFIG SET" "$(get maxclients)" 150
grep -q 'event=config_set setting=maxclients client=' "$log" ||
    it_fail "CONFIG SET's change is not logged through the same path"
hup 2
it_expect_eq "maxclients back to the file's" "$(get maxclients)" 200

# A file that does not load: nothing changes, not even its good lines.
printf '%s\n' 'rack r1' 'maxclients 300' 'timeout 5m' 'tokens many' > "$conf"
hup 3
it_expect_eq "maxclients after a bad file" "$(get maxclients)" 200
it_expect_eq "timeout after a bad file" "$(get timeout)" 120
grep -q "event=config_reload_failed file=$conf error=.*tokens: 'many' is not a number" "$log" ||
    it_fail "the failed reload's line does not say why"

# A file that loads but does not check as a whole (a peer queue smaller than
# the largest frame): nothing changes.
printf '%s\n' 'rack r1' 'maxclients 300' 'peer-queue-max 1MB' > "$conf"
hup 4
it_expect_eq "maxclients after a file that does not check" "$(get maxclients)" 200
grep -q 'event=config_reload_failed .*error="peer-queue-max (1MB) is smaller than frame-max' "$log" ||
    it_fail "the inconsistent file's line does not name peer-queue-max"

it_alive n1 || it_fail "the node died"
it_expect_eq "PING after four reloads" "$(it_cli n1 PING)" PONG
it_pass "SIGHUP: runtime settings applied, start-only refused, bad files change nothing"
