#!/bin/sh
# MULTI/EXEC and SCAN on one node, driven with redis-py (tests/integration/txnscan.py):
# a transactional pipeline, EXECABORT (wrong arity, key over key-max) and a connection
# closed inside MULTI applying nothing, a transaction over the write bound refused whole,
# scan_iter over 10,000 keys returning each once while another connection writes,
# KEYS/TYPE/STRLEN/DBSIZE; and the raw replies of the Redis-compatibility cases compared
# byte for byte with a redis-server of the same run (skipped, saying so, without one).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
PY=/usr/bin/python3
"$PY" -c 'import redis' 2> /dev/null ||
    it_fail "python3-redis (redis-py) not found: run cluster-scripts/install-deps"

redis_port=none
if command -v redis-server > /dev/null; then
    redis_port=$(it_free_port)
    redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
        --dir "$IT_DIR" > "$IT_DIR/redis.log" 2>&1 &
    IT_PIDS="$IT_PIDS $!"
    it_wait redis-cli -p "$redis_port" PING || it_fail "redis-server did not start"
else
    it_log "redis-server absent: Redis comparison skipped"
fi

it_node n1 --rf 1 --r 1 --w 1 --key-max 256
it_wait_ping n1
out=$("$PY" "$top_srcdir/tests/integration/txnscan.py" "$N1_CLIENT" "$redis_port" 256) ||
    it_fail "$out"
printf '%s\n' "$out" | while IFS= read -r line; do it_log "$line"; done
it_pass
