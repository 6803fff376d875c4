#!/bin/sh
# Ports that hold against a client that proved nothing.  The metrics port
# keeps at most metrics-maxconn connections and closes the rest at once.
# With requirepass, a connection that has not authenticated may send only
# small commands (at most 10 arguments of 16 KiB, as Redis): a larger count
# or bulk length is refused at its header and the connection closed, before
# the node buffers the bytes it announced; and its unsent replies stay
# small (reading pauses at 64 KiB of them).  Wrong passwords are counted and,
# after a few, further AUTHs from that address are refused for a growing
# while (-ERR ... AUTH throttled), without slowing anyone else.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
METRICS=$(it_free_port)
it_node n1 --rf 1 --r 1 --w 1 --metrics "127.0.0.1:$METRICS" --metrics-maxconn 4 \
    --requirepass sesame
it_wait sh -c "redis-cli -p $N1_CLIENT -a sesame --no-auth-warning PING | grep -q PONG" ||
    it_fail "n1 does not answer"

scrape() {
    python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode())' "$METRICS"
}

# Run the Python script on stdin against n1's client port, after a prologue giving it port,
# rss_kb() (n1's resident size in KiB), base (that size now) and an empty list conns.
rss_python() {
    {
        cat << 'PY'
import socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]

def rss_kb():
    for line in open("/proc/%s/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

base = rss_kb()
conns = []
PY
        cat
    } | python3 - "$N1_CLIENT" "$N1_PID"
}

# --- the metrics port's cap ---
python3 "$top_srcdir/tests/integration/holdconn.py" "$METRICS" 10 3 --ready "$IT_DIR/held" \
    > "$IT_DIR/held.out" 2>&1 &
held=$!
it_wait test -f "$IT_DIR/held" || it_fail "metrics connections not opened"
it_expect_eq "metrics connections kept" "$(cat "$IT_DIR/held")" "open=4"
wait "$held"
it_expect_eq "metrics connections" "$(cat "$IT_DIR/held.out")" "opened=4 closed=6"
it_wait scrape || it_fail "GET /metrics fails after the flood"
rejected=$(scrape | sed -n 's/^ringkv_metrics_rejected_total //p')
it_expect_eq "metrics connections refused, counted" "$rejected" "6"

# --- before AUTH: small commands only, refused at the header ---
# Three connections announce a huge count and three a 16 MB argument (within value-max), and
# each sends 16 MB: the node must refuse each at its header and close, not buffer 96 MB.
out=$(rss_python << 'PY'
for head, unit in [(b"*1000000\r\n", b"$1\r\nx\r\n"), (b"*1\r\n$16000000\r\n", b"x" * 7)] * 3:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    body = head + unit * (16 * 1024 * 1024 // len(unit))
    sent, start = 0, time.time()
    try:
        while sent < len(body) and time.time() - start < 5:
            sent += s.send(body[sent:sent + 65536])
    except OSError:
        pass
    conns.append((s, sent))
    print("sent=%d after_s=%.2f" % (sent, time.time() - start))
grown = rss_kb() - base
replies = []
for s, sent in conns:
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    replies.append(data.split(b"\r\n")[0].decode())
    s.close()
print("grown_kb=%d" % grown)
for r in sorted(set(replies)):
    print("reply=%s" % r)
PY
)
it_log "$(echo $out)"
grown=$(printf '%s\n' "$out" | sed -n 's/^grown_kb=//p')
[ "$grown" -lt 8192 ] || it_fail "the node grew by $grown KiB for unauthenticated clients"
printf '%s\n' "$out" | grep -qx 'reply=-ERR Protocol error: unauthenticated multibulk length' ||
    it_fail "huge count before AUTH: $out"
printf '%s\n' "$out" | grep -qx 'reply=-ERR Protocol error: unauthenticated bulk length' ||
    it_fail "large argument before AUTH: $out"

# Small commands that are never read: three connections send PINGs (an inline PING\r\n is
# answered, before AUTH as in Redis, with -NOAUTH Authentication required.\r\n) and read nothing.  The node stops reading a connection whose
# unsent replies pass 64 KiB, so it neither buffers output-buffer-max of them nor drops it:
# once the client reads, every PING is answered.
out=$(rss_python << 'PY'
chunk = b"PING\r\n" * 10000
reply = b"-NOAUTH Authentication required.\r\n"
for _ in range(3):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.settimeout(1)
    sent, start = 0, time.time()
    try:
        while sent < 24 * 1024 * 1024 and time.time() - start < 5:
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    conns.append((s, sent))
grown = rss_kb() - base
s, sent = conns[0]
s.settimeout(10)
got, deadline = 0, time.time() + 20
try:
    while got < sent // 6 * len(reply) and time.time() < deadline:
        data = s.recv(1 << 20)
        if not data:
            break
        got += len(data)
except OSError:
    pass
print("grown_kb=%d sent=%d answered=%d" % (grown, sent, got // len(reply)))
PY
)
it_log "unread PINGs before AUTH: $out"
grown=$(printf '%s\n' "$out" | sed -n 's/^grown_kb=\([0-9]*\) .*/\1/p')
[ -n "$grown" ] && [ "$grown" -lt 8192 ] ||
    it_fail "the node grew by $grown KiB for unread replies before AUTH: $out"
sent=$(printf '%s\n' "$out" | sed -n 's/.* sent=\([0-9]*\) .*/\1/p')
it_expect_eq "PINGs answered once read" "$(printf '%s\n' "$out" | sed -n 's/.* answered=//p')" \
    "$((sent / 6))"

# AUTH, then a 20 KiB argument in the same write: the settings' limits apply right after AUTH.
out=$(python3 "$top_srcdir/tests/integration/rawsock.py" "$N1_CLIENT" \
    "*2\r\n\$4\r\nAUTH\r\n\$6\r\nsesame\r\n*3\r\n\$3\r\nSET\r\n\$1\r\nk\r\n\$20480\r\n$(head -c 20480 /dev/zero | tr '\0' v)\r\n")
case "$out" in *"+OK"*"+OK"*"closed=no") ;; *) it_fail "AUTH then a large SET: $out" ;; esac

# --- AUTH: wrong passwords counted, then refused unread for a while ---
out=$(python3 - "$N1_CLIENT" << 'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"*2\r\n$4\r\nAUTH\r\n$5\r\nwrong\r\n" * 20)
data = b""
while data.count(b"\r\n") < 20:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
for i, line in enumerate(data.split(b"\r\n")[:20]):
    print("%d %s" % (i + 1, line.decode()))
PY
)
printf '%s\n' "$out" > "$IT_DIR/auth.out"
it_expect_eq "failure 1" "$(sed -n 1p "$IT_DIR/auth.out")" \
    "1 -WRONGPASS invalid username-password pair or user is disabled."
it_expect_eq "failure 6" "$(sed -n 6p "$IT_DIR/auth.out" | cut -c1-12)" "6 -WRONGPASS"
case "$(sed -n 20p "$IT_DIR/auth.out")" in
"20 -ERR AUTH throttled: too many wrong passwords from this address; retry in "*" ms") ;;
*) it_fail "failure 20 is not refused as throttled: $(cat "$IT_DIR/auth.out")" ;;
esac
# The pause ends (100 ms after the sixth failure): the right password works again (checked
# with DBSIZE, which needs AUTH).
it_wait sh -c "redis-cli -p $N1_CLIENT -a sesame --no-auth-warning DBSIZE | grep -qx '[0-9][0-9]*'" ||
    it_fail "the right password is refused after the pause"
info=$(redis-cli -p "$N1_CLIENT" -a sesame --no-auth-warning INFO stats | tr -d '\r')
printf "%s\n" "$info" > "$IT_DIR/info.out"
it_expect_eq "auth failures" "$(printf '%s\n' "$info" | sed -n 's/^ringkv_auth_failures://p')" "6"
# 14 from the burst, and any the waits above made before the pause ended
throttled=$(printf '%s\n' "$info" | sed -n 's/^ringkv_auth_throttled://p')
[ "$throttled" -ge 14 ] || it_fail "auth throttled: $throttled, expected at least 14"
lines=$(grep -c 'event=auth_failed' "$IT_DIR/n1.log")
[ "$lines" -le 2 ] || it_fail "$lines auth_failed lines for one burst (throttled to one a second)"
it_stop n1
it_expect_eq "exit status" "$IT_STATUS" "0"
it_pass "metrics cap, pre-AUTH limits (grew $grown KiB), AUTH throttled at failure 7"
