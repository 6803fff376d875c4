#!/bin/sh
# SIGHUP at awkward moments (src/node/reload.h, ringkvd.c): one sent while
# the node starts waits for the loop instead of killing it; a storm of
# SIGHUPs while clients write and CONFIG SET runs changes nothing but the
# settings; a config file replaced by an empty file (one being rewritten in
# place), a FIFO, a directory or a 100 MB file is refused with a log line
# naming why, and the node keeps its settings, requirepass included.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
conf="$IT_DIR/n1.conf"
log="$IT_DIR/n1.log"

get() {
    it_cli n1 -a secret --no-auth-warning CONFIG GET "$1" | sed -n 2p
}

outcomes() {
    grep -cE 'event=config_(reload|reload_failed) ' "$log"
}

outcomes_are() {
    [ "$(outcomes)" -eq "$1" ]
}

# hup_expect ERROR-REGEX: one SIGHUP, and the failed reload's line matches.
hup_expect() {
    before=$(outcomes)
    kill -HUP "$N1_PID" || it_fail "SIGHUP: the node is gone"
    it_wait outcomes_are $((before + 1)) || it_fail "no reload outcome after SIGHUP ($1)"
    tail -n 5 "$log" | grep -qE "event=config_reload_failed .*error=.*$1" ||
        it_fail "the failed reload does not say '$1'"
}

# A SIGHUP while the node starts: from main()'s first line SIGHUP is
# blocked, never left to its default action (terminate), and one sent then
# is reloaded after start.  /proc shows the state: poll (shell builtins
# only) until SIGHUP is blocked or caught; caught first means it was
# deliverable, and fatal, during the start.  1 MB of comments in the config
# file make the start's window wide enough to see.
awk 'BEGIN { for (i = 0; i < 15000; i++) printf "# %060d\n", i }' > "$conf"
printf '%s\n' 'requirepass secret' 'maxclients 100' 'log-level info' >> "$conf"
# sighup_state: "blocked", "caught" or "default", from /proc/PID/status.
sighup_state() {
    state=default
    while read -r k v; do
        case "$k $v" in
        SigBlk:*[13579bdf]) state=blocked && return ;;
        SigCgt:*[13579bdf]) state=caught ;;
        esac
    done < "/proc/$N1_PID/status"
}
# On a loaded machine the start can outrun the first look at /proc: then
# the node is stopped and started again, five times at most.  A node that
# never blocks SIGHUP is seen "caught" every time and fails below.
attempt=1
while :; do
    it_node n1 --config "$conf" --rf 1 --r 1 --w 1 --tokens 8
    tries=0
    state=default
    while [ "$state" = default ] && [ "$tries" -lt 200000 ]; do
        sighup_state 2> /dev/null
        tries=$((tries + 1))
    done
    [ "$state" = caught ] && [ "$attempt" -lt 5 ] || break
    it_log "start $attempt: SIGHUP already caught at the first look; starting again"
    it_stop n1 KILL
    attempt=$((attempt + 1))
done
it_expect_eq "SIGHUP's state while the node starts" "$state" blocked
kill -HUP "$N1_PID"
it_wait outcomes_are 1 || it_fail "the SIGHUP sent during start killed the node or was lost"
it_alive n1 || it_fail "the SIGHUP sent during start killed the node"
it_wait it_cli n1 -a secret --no-auth-warning PING || it_fail "n1 does not answer"

# A storm: 1000 SIGHUPs while a client writes and another runs CONFIG SET.
it_cli n1 -a secret --no-auth-warning -r 3000 SET stormkey v > "$IT_DIR/writer.out" 2>&1 &
writer=$!
it_cli n1 -a secret --no-auth-warning -r 300 CONFIG SET maxclients 150 > "$IT_DIR/setter.out" 2>&1 &
setter=$!
i=0
while [ "$i" -lt 1000 ]; do
    kill -HUP "$N1_PID" 2> /dev/null || it_fail "the node died in the SIGHUP storm"
    i=$((i + 1))
done
wait "$writer" || it_fail "the writer failed during the storm"
wait "$setter" || it_fail "CONFIG SET failed during the storm"
[ "$(grep -cv '^OK$' "$IT_DIR/writer.out")" -eq 0 ] || it_fail "a SET during the storm did not answer OK"
it_alive n1 || it_fail "the node died in the SIGHUP storm"
kill -HUP "$N1_PID"
it_wait sh -c "[ \"\$(tail -n 1 '$log' | grep -c 'event=config_reload ')\" -eq 1 ]" ||
    it_fail "no reload after the storm"
it_expect_eq "maxclients after the storm (the file's)" "$(get maxclients)" 100
grep -q 'level=error\|level=fatal' "$log" && it_fail "an error was logged during the storm"

# The file truncated for rewriting: refused, the password stays.
: > "$conf"
hup_expect 'empty'
it_expect_eq "GET without the password after an empty file" \
    "$(it_cli n1 GET stormkey 2>&1 | grep -c NOAUTH)" 1

# A FIFO in the file's place: refused at once, the loop never waits for a writer.
rm -f "$conf"
mkfifo "$conf"
hup_expect 'not a regular file'
it_expect_eq "PING after a FIFO" "$(it_cli n1 -a secret --no-auth-warning PING)" PONG
rm -f "$conf"

# A directory, then 100 MB (sparse).
mkdir "$conf"
hup_expect 'not a regular file'
rmdir "$conf"
printf '%s\n' 'requirepass other' 'maxclients 300' > "$conf"
truncate -s 100M "$conf"
hup_expect 'larger than'
it_expect_eq "maxclients after the bad files" "$(get maxclients)" 100
it_alive n1 || it_fail "the node died"
it_pass "SIGHUP during start, in a storm, and over bad files"
