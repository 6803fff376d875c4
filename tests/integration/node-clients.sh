#!/bin/sh
# What ioredis 6 and node-redis 6 users read, against ringkvd and against
# Debian's redis-server 7 in the same run, with the same checks
# (tests/clients/node_checks.js): multi().exec() and a queued error aborting
# it, a cache-style SET EX with its TTL, SET NX/XX/GET, GETDEL, scan
# iteration over 2000 keys each returned once, info()'s used_memory and role,
# AUTH without a password and with requirepass, MGET with a key too long to
# exist answering null, and node-redis over RESP3.  The libraries come from
# npm, pinned by tests/clients/package-lock.json, installed by
# `cluster-scripts/install-deps --with-clients` (run-tests and CI run it) or
# `cd tests/clients && npm ci`; RINGKV_NODE_MODULES names their folder when
# the sources are a copy without it (run-tests sets it for distcheck's).
# Without them the test is skipped (77) with a line saying how to install
# them.  Without redis-server the Redis half is skipped with a line saying so.
: "${top_srcdir:?}"
CLIENTS="$top_srcdir/tests/clients"
NODE_PATH=${RINGKV_NODE_MODULES:-$CLIENTS/node_modules}
export NODE_PATH
for m in ioredis redis; do
    if [ ! -f "$NODE_PATH/$m/package.json" ]; then
        echo "node-clients: SKIP: ioredis and node-redis not installed in $NODE_PATH" \
            "(cluster-scripts/install-deps --with-clients, or cd tests/clients && npm ci)"
        exit 77
    fi
done
command -v node > /dev/null 2>&1 || {
    echo "node-clients: SKIP: node not found (the libraries in tests/clients need node 18 or later)"
    exit 77
}
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
CHECKS="$CLIENTS/node_checks.js"
PASSWORD="pass word"

# Two single-node rings, one with requirepass.
it_node n1 --rf 1 --r 1 --w 1 --sync always
it_node n2 --rf 1 --r 1 --w 1 --sync always --requirepass "$PASSWORD"
it_wait_ping n1
it_wait sh -c "redis-cli -p $N2_CLIENT -a '$PASSWORD' --no-auth-warning PING | grep -qx PONG" ||
    it_fail "n2 does not answer PING with its password"
node "$CHECKS" --target ringkv --open "$N1_CLIENT" --locked "$N2_CLIENT" \
    --password "$PASSWORD" || it_fail "ringkv: see the FAIL lines above"

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
    node "$CHECKS" --target redis --open "$R1_CLIENT" --locked "$R2_CLIENT" \
        --password "$PASSWORD" || it_fail "redis: see the FAIL lines above"
else
    it_log "SKIP: redis-server not installed, so the same checks did not run against Redis 7"
fi
it_pass
