#!/bin/sh
# What redis-py users read, against ringkvd and against Debian's redis-server 7
# in the same run, with the same checks (tests/clients/redis_py_checks.py):
# INFO's used_memory, role, used_cpu_sys and their sections; CONFIG GET of
# timeout, save, appendonly, appendfsync, maxmemory, databases; AUTH and
# HELLO AUTH without a password and with requirepass (PING before AUTH is
# NOAUTH); MGET with a key too long to exist answering None; expiry as cache
# libraries use it (a django-style set with a timeout, ttl, expire, persist, a
# value expiring while the client waits), on the requirepass node.  Then what only
# ringkv shows: redis-cli --stat prints a memory figure, and a client closed
# for a limit (timeout, output-buffer-max) is logged at warn with its name.
# Without redis-server the Redis half is skipped with a line saying so.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
CHECKS="$top_srcdir/tests/clients/redis_py_checks.py"
PASSWORD="pass word"

# Debian's python3-redis belongs to Debian's python3, which need not be the first on PATH.
PY=""
for p in /usr/bin/python3 python3; do
    if "$p" -c 'import redis' > /dev/null 2>&1; then
        PY=$p
        break
    fi
done
[ -n "$PY" ] || it_fail "no python3 with the redis module: run cluster-scripts/install-deps (python3-redis)"

# Two single-node rings, one with requirepass; sync always is appendfsync always.
it_node n1 --rf 1 --r 1 --w 1 --sync always
it_node n2 --rf 1 --r 1 --w 1 --sync always --requirepass "$PASSWORD"
it_wait_ping n1
it_wait sh -c "redis-cli -p $N2_CLIENT -a '$PASSWORD' --no-auth-warning PING | grep -qx PONG" ||
    it_fail "n2 does not answer PING with its password"
"$PY" "$CHECKS" --target ringkv --open "$N1_CLIENT" --locked "$N2_CLIENT" \
    --password "$PASSWORD" --databases 1 --ringkv || it_fail "ringkv: see the FAIL lines above"

# The same checks against Redis 7, started the same way (no snapshots, an fsync'd AOF).
if command -v redis-server > /dev/null 2>&1; then
    for r in r1 r2; do
        port=$(it_free_port)
        mkdir "$IT_DIR/$r"
        if [ "$r" = r2 ]; then set -- --requirepass "$PASSWORD"; else set --; fi
        redis-server --bind 127.0.0.1 --port "$port" --dir "$IT_DIR/$r" --save '' \
            --appendonly yes --appendfsync always "$@" >> "$IT_DIR/$r.log" 2>&1 &
        IT_PIDS="$IT_PIDS $!"
        it_setvar "$r" CLIENT "$port"
        it_wait sh -c "redis-cli -p $port -a '$PASSWORD' --no-auth-warning PING | grep -qx PONG" ||
            it_fail "redis-server $r does not answer PING (log: $IT_DIR/$r.log)"
    done
    "$PY" "$CHECKS" --target redis --open "$R1_CLIENT" --locked "$R2_CLIENT" \
        --password "$PASSWORD" --databases 16 || it_fail "redis: see the FAIL lines above"
else
    it_log "SKIP: redis-server not installed, so the same checks did not run against Redis 7"
fi

# redis-cli --stat: a memory figure in Redis's form (967.77K, 3.19M), not garbage.
# It runs until stopped: read its first row of figures (keys: those the checks above left,
# their tombstones included), then stop it by PID.
stdbuf -o0 redis-cli -p "$N1_CLIENT" --stat -i 0.1 > "$IT_DIR/stat.out" 2>&1 &
stat_pid=$!
IT_PIDS="$IT_PIDS $stat_pid"
it_wait sh -c "[ \$(wc -l < '$IT_DIR/stat.out') -ge 3 ]" || it_fail "redis-cli --stat printed no figures"
kill "$stat_pid"
row=$(sed -n 3p "$IT_DIR/stat.out")
it_log "redis-cli --stat: $row"
printf '%s\n' "$row" | grep -qE '^[0-9]+ +[0-9]+(\.[0-9]+)?[BKMGTP] +[0-9]+ +0 +[0-9]+ ' ||
    it_fail "redis-cli --stat row is not keys, memory, clients: $(cat "$IT_DIR/stat.out")"

# A client closed for a limit is logged at warn, naming the limit.
it_node n3 --rf 1 --r 1 --w 1 --timeout 1s --output-buffer-max 1MB
it_wait_ping n3
head -c 524288 /dev/zero | tr '\0' v | redis-cli -p "$N3_CLIENT" -x SET big > /dev/null
it_expect_eq "a 512 KB value" "$(it_cli n3 GET big | wc -c)" 524289
"$PY" - "$N3_CLIENT" << 'PY' || it_fail "connections not closed by n3's limits"
import socket, sys, time
port = int(sys.argv[1])
# An idle connection: closed by timeout (1 s).
idle = socket.create_connection(("127.0.0.1", port), timeout=20)
# 64 GETs of 512 KB read by nobody: closed past output-buffer-max (1 MB).
greedy = socket.socket()
greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
greedy.connect(("127.0.0.1", port))
greedy.sendall(b"*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n" * 64)
assert idle.recv(1) == b"", "the idle connection was not closed"
deadline = time.time() + 20
while time.time() < deadline:
    greedy.settimeout(max(deadline - time.time(), 0.01))
    try:
        if not greedy.recv(1 << 20):
            break
    except ConnectionResetError:
        break
else:
    sys.exit("the connection that reads nothing was not closed")
PY
log=$IT_DIR/n3.log
it_wait grep -q 'level=warn .*event=client_limit_close .*limit=timeout' "$log" ||
    it_fail "no warn line for the idle timeout: $(grep client_limit_close "$log")"
it_wait grep -q 'level=warn .*event=client_limit_close .*limit=output-buffer-max' "$log" ||
    it_fail "no warn line for output-buffer-max: $(grep client_limit_close "$log")"
it_pass
