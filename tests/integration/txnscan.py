#!/usr/bin/python3
"""MULTI/EXEC and SCAN driven with redis-py (tests/integration/node-txn-scan.sh).

txnscan.py RINGKV_PORT REDIS_PORT|none KEY_MAX
Prints one line per check; exits non-zero on the first failure.  With a
redis-server port, the raw replies of the compatibility cases are compared
byte for byte with Redis's.
"""
import socket
import sys
import threading
import time

import redis

PORT, REDIS_PORT, KEY_MAX = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def enc(cmd):
    return b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in cmd)


def raw(port, cmds, want_bytes=None, deadline_s=5.0):
    """Send cmds in one write; read until the replies stop coming (or the peer closes)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"".join(enc(c) for c in cmds))
    out, end = b"", time.time() + deadline_s
    s.settimeout(0.3)
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            if want_bytes is None or len(out) >= want_bytes:
                break
            continue
        if not d:
            break
        out += d
    s.close()
    return out


# Cases whose raw replies must equal Redis 7's; each starts from keys no other case uses.
CASES = [
    [[b"MULTI"], [b"MULTI"], [b"SET", b"c1", b"1"], [b"EXEC"], [b"GET", b"c1"]],
    [[b"MULTI"], [b"WATCH", b"c2"], [b"SET", b"c2", b"1"], [b"EXEC"]],
    [[b"EXEC"], [b"DISCARD"], [b"MULTI"], [b"EXEC"], [b"MULTI"], [b"DISCARD"]],
    [[b"MULTI"], [b"SET", b"c3", b"2"], [b"GET", b"c3"], [b"SET", b"c3"], [b"EXEC"],
     [b"EXISTS", b"c3"]],
    [[b"MULTI"], [b"SET", b"c4", b"2"], [b"NOPE", b"x"], [b"EXEC"], [b"EXISTS", b"c4"]],
    [[b"MULTI"], [b"SET", b"c5", b"3"], [b"GET", b"c5"], [b"DEL", b"c5"], [b"GET", b"c5"],
     [b"EXISTS", b"c5"], [b"SET", b"c5", b"4"], [b"MGET", b"c5", b"c5x"], [b"DEL", b"c5", b"c5"],
     [b"SET", b"c5", b"5"], [b"STRLEN", b"c5"], [b"TYPE", b"c5"], [b"EXEC"], [b"GET", b"c5"]],
    [[b"EXEC", b"x"], [b"MULTI"], [b"PING"], [b"ECHO", b"hi"], [b"EXEC"]],
    [[b"MULTI"], [b"SET", b"c6", b"1"], [b"QUIT"]],
    [[b"SET", b"s1", b"hello"], [b"SET", b"s2", b""], [b"DEL", b"s2"], [b"TYPE", b"s1"],
     [b"TYPE", b"s2"], [b"TYPE", b"s3"], [b"STRLEN", b"s1"], [b"STRLEN", b"s3"],
     [b"SCAN", b"abc"], [b"SCAN", b"0", b"COUNT", b"0"], [b"SCAN", b"0", b"COUNT", b"-1"],
     [b"SCAN", b"0", b"COUNT", b"x"], [b"SCAN", b"0", b"MATCH"], [b"SCAN", b"0", b"FOO", b"1"],
     [b"SCAN", b"18446744073709551616"], [b"SCAN", b"0", b"MATCH", b"s[0-9]", b"COUNT", b"1000"],
     [b"SCAN", b"0", b"TYPE", b"hash"], [b"KEYS", b"s?"], [b"KEYS", b"[rs]\\1"], [b"TYPE"]],
]


def compare_with_redis():
    if REDIS_PORT == "none":
        print("redis-server absent: raw replies not compared with Redis")
        return
    for i, case in enumerate(CASES):
        ours, theirs = raw(PORT, case), raw(int(REDIS_PORT), case)
        if ours != theirs:
            fail("case %d differs from Redis:\n  ringkv %r\n  redis  %r" % (i, ours, theirs))
    print("raw replies equal Redis's in %d cases" % len(CASES))


def check_pipeline(r):
    p = r.pipeline(transaction=True)
    p.set("t1", "1").get("t1").mset({"t2": "2", "t3": "3"}).delete("t1", "tx").get("t1")
    p.exists("t2", "t3")
    got = p.execute()
    want = [True, b"1", True, 1, None, 2]
    if got != want:
        fail("transactional pipeline answered %r, not %r" % (got, want))
    print("transactional pipeline: %r" % (got,))


def check_abort(r):
    p = r.pipeline(transaction=True)
    p.set("ab1", "1").execute_command("SET", "ab2")
    try:
        p.execute()
        fail("EXEC with a wrong-arity command did not abort")
    except redis.exceptions.ExecAbortError:
        pass
    except redis.exceptions.ResponseError as e:
        # redis-py raises the queued command's own error in place of EXECABORT
        if "EXECABORT" not in str(e) and "wrong number of arguments" not in str(e):
            fail("EXEC with a wrong-arity command: %s" % e)
    if r.exists("ab1"):
        fail("an aborted transaction applied its SET")
    # a key over key-max is refused when queued and aborts the EXEC
    out = raw(PORT, [[b"MULTI"], [b"SET", b"ab3", b"1"], [b"SET", b"k" * (KEY_MAX + 1), b"v"],
                     [b"EXEC"]])
    if not out.startswith(b"+OK\r\n+QUEUED\r\n-ERR key of") or b"-EXECABORT" not in out:
        fail("key over key-max inside MULTI: %r" % out)
    if r.exists("ab3"):
        fail("a transaction aborted for key-max applied its SET")
    # a connection closed inside MULTI applies nothing
    s = socket.create_connection(("127.0.0.1", PORT))
    s.sendall(enc([b"MULTI"]) + enc([b"SET", b"ab4", b"1"]))
    got = b""
    while len(got) < len(b"+OK\r\n+QUEUED\r\n"):
        got += s.recv(100)
    s.close()
    if r.exists("ab4") or r.ping() is not True or r.exists("ab4"):
        fail("a connection closed inside MULTI applied its SET")
    print("EXECABORT (arity, key-max) and a closed MULTI applied nothing")


def check_bound(r):
    """More writes than one store transaction takes aborts the transaction with an error."""
    p = r.pipeline(transaction=True)
    for i in range(5000):
        p.set("bound:%d" % i, "v")
    try:
        p.execute()
        fail("a transaction of 5000 writes was not refused")
    except redis.exceptions.ResponseError as e:
        if "at most" not in str(e) and "EXECABORT" not in str(e):
            fail("a transaction of 5000 writes: %s" % e)
    if r.exists("bound:0"):
        fail("a refused transaction applied its writes")
    print("a transaction over the write bound is refused whole")


def check_scan(r):
    n = 10000
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set("sk:%d" % i, "v%d" % i)
    p.execute()
    stop, written = threading.Event(), [0]

    def writer():
        w = redis.Redis(port=PORT)
        i = 0
        while not stop.is_set() and i < 50000:
            w.set("other:%d" % i, "x")
            if i % 3 == 0:
                w.delete("other:%d" % (i // 2))
            i += 1
            written[0] = i

    t = threading.Thread(target=writer)
    t.start()
    deadline = time.time() + 10
    while written[0] == 0 and time.time() < deadline:
        time.sleep(0.01)
    try:
        seen = list(r.scan_iter(match="sk:*", count=10))
    finally:
        stop.set()
        t.join()
    if len(seen) != n or len(set(seen)) != n:
        fail("scan_iter returned %d keys, %d distinct, of %d" % (len(seen), len(set(seen)), n))
    if written[0] < 2:
        fail("the writer wrote %d keys during the scan" % written[0])
    print("scan_iter: %d keys, each once, while %d other writes went on" % (n, written[0]))
    # without MATCH every live key, tombstones excluded, agrees with DBSIZE and KEYS
    every = list(r.scan_iter(count=1000))
    if len(every) != len(set(every)) or len(every) != r.dbsize():
        fail("SCAN found %d keys (%d distinct), DBSIZE %d" % (len(every), len(set(every)),
                                                            r.dbsize()))
    before = r.dbsize()
    r.delete(*["sk:%d" % i for i in range(10)])
    if r.dbsize() != before - 10:
        fail("DBSIZE %d after deleting 10 of %d keys" % (r.dbsize(), before))
    keys = sorted(r.keys("sk:99[0-9]"))
    if keys != sorted(b"sk:99%d" % i for i in range(10)):
        fail("KEYS sk:99[0-9] answered %r" % keys)
    if r.type("sk:20") != b"string" or r.type("sk:0") != b"none" or r.strlen("sk:20") != 3:
        fail("TYPE/STRLEN: %r %r %r" % (r.type("sk:20"), r.type("sk:0"), r.strlen("sk:20")))
    print("DBSIZE %d (live keys), KEYS, TYPE, STRLEN" % r.dbsize())


r = redis.Redis(port=PORT)
compare_with_redis()
check_pipeline(r)
check_abort(r)
check_bound(r)
check_scan(r)
print("ok")
