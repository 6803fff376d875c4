#!/usr/bin/env python3
"""redis_py_checks.py - what a redis-py user reads from a server.

Run by tests/integration/redis-py.sh against ringkvd, and against Debian's
redis-server 7 in the same run, with the same checks: INFO's fields
(used_memory, role, used_cpu_sys and the sections they come in),
CONFIG GET of the names clients and tools read, AUTH and HELLO AUTH
against a server without a password and one with requirepass (PING before
AUTH is refused with NOAUTH, which redis-py raises as AuthenticationError),
MGET with a key too long to exist answering None in its place, the
conditional writes (set(nx=True), set(xx=True), set(get=True), getset,
getdel) with the values redis-py hands back, and expiry as cache libraries
use it: a django-style set with a timeout (ex=, px=, timedelta), ttl/pttl,
expire/expireat/persist, setex/psetex, keepttl, and a value that expires
while the client waits.

Needs python3 with the redis module (Debian's python3-redis, redis-py 4.3).
Each check prints one line, "ok TARGET: what" or "FAIL TARGET: what:
detail"; the exit status is 1 when any check failed, 2 on bad usage.

  redis_py_checks.py --target NAME --open PORT --locked PORT --password PW
                     [--databases N] [--ringkv]

--open is a server without requirepass, --locked one with requirepass PW
(and nothing else different); --databases is the CONFIG GET databases
answer expected (ringkv: 1, Redis: 16); --ringkv adds the checks of what
ringkv does on purpose differently (requirepass refuses a NUL byte).
"""
import argparse
import datetime
import socket
import sys
import time

import redis

HOST = "127.0.0.1"
# Socket timeouts: every call here answers in milliseconds on loopback.
TIMEOUT_S = 10
# Longer than ringkv's largest key-max (503 bytes), so no server can hold it.
LONG_KEY = b"k" * 600

failures = 0


def report(target, what, ok, detail=""):
    global failures
    if ok:
        print("ok %s: %s" % (target, what))
    else:
        failures += 1
        print("FAIL %s: %s: %s" % (target, what, detail))


def check(target, what, fn):
    """Run fn(); it returns (ok, detail).  An exception is a failure naming it."""
    try:
        ok, detail = fn()
    except Exception as e:  # the check failed in a way it did not expect
        ok, detail = False, "%s: %s" % (type(e).__name__, e)
    report(target, what, ok, detail)


def raises(fn, cls, text):
    """(ok, detail): fn() raised cls with text in its message."""
    try:
        got = fn()
    except cls as e:
        return text in str(e), "%s: %s" % (type(e).__name__, e)
    except Exception as e:
        return False, "%s, not %s: %s" % (type(e).__name__, cls.__name__, e)
    return False, "no error, answered %r" % (got,)


def client(port, **kw):
    return redis.Redis(host=HOST, port=port, socket_timeout=TIMEOUT_S, **kw)


def resp_exchange(port, payload):
    """Send raw RESP, return the first reply's bytes (up to its first CRLF and a bit)."""
    with socket.create_connection((HOST, port), timeout=TIMEOUT_S) as s:
        s.sendall(payload)
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        return data


def command(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def info_checks(t, r):
    def full():
        i = r.info()
        bad = []
        if not (isinstance(i.get("used_memory"), int) and i["used_memory"] > 0):
            bad.append("used_memory=%r" % i.get("used_memory"))
        if not isinstance(i.get("used_memory_human"), str):
            bad.append("used_memory_human=%r" % i.get("used_memory_human"))
        if not isinstance(i.get("used_memory_rss"), int):
            bad.append("used_memory_rss=%r" % i.get("used_memory_rss"))
        if i.get("maxmemory") != 0 or i.get("maxmemory_policy") != "noeviction":
            bad.append("maxmemory=%r policy=%r" % (i.get("maxmemory"), i.get("maxmemory_policy")))
        if i.get("role") != "master" or i.get("connected_slaves") != 0:
            bad.append("role=%r connected_slaves=%r" % (i.get("role"), i.get("connected_slaves")))
        for k in ("used_cpu_sys", "used_cpu_user"):
            if not (isinstance(i.get(k), (int, float)) and i[k] >= 0):
                bad.append("%s=%r" % (k, i.get(k)))
        return not bad, " ".join(bad)

    check(t, "info(): used_memory, maxmemory, role, used_cpu_sys/user", full)
    for section, key in (("memory", "used_memory"), ("replication", "role"), ("cpu", "used_cpu_sys")):
        check(t, "info(%r) has %s and no other section's keys" % (section, key),
              lambda s=section, k=key: (
                  k in r.info(s) and "redis_version" not in r.info(s), sorted(r.info(s))))
    check(t, "info('all') has used_memory, role, used_cpu_user",
          lambda: (all(k in r.info("all") for k in ("used_memory", "role", "used_cpu_user")), ""))


def config_checks(t, r, databases):
    want = {
        "timeout": "0",
        "save": "",
        "appendonly": "yes",
        "appendfsync": "always",
        "maxmemory": "0",
        "maxmemory-policy": "noeviction",
        "databases": str(databases),
    }
    for name, value in want.items():
        check(t, "config_get(%r) == %r" % (name, value),
              lambda n=name, v=value: (r.config_get(n) == {n: v}, r.config_get(n)))
    check(t, "config_get('*') holds every one of them",
          lambda: (all(n in r.config_get("*") for n in want), ""))


def auth_open_checks(t, port):
    check(t, "no requirepass: username='default', password='x' connects (AUTH default x)",
          lambda: (client(port, username="default", password="x").ping() is True, ""))
    check(t, "no requirepass: HELLO 2 AUTH default x",
          lambda: (b"proto" in client(port).execute_command("HELLO", 2, "AUTH", "default", "x"), ""))
    check(t, "no requirepass: HELLO 3 AUTH default x answers a RESP3 map",
          lambda: (resp_exchange(port, command("HELLO", 3, "AUTH", "default", "x"))[:1] == b"%",
                   resp_exchange(port, command("HELLO", 3, "AUTH", "default", "x"))[:80]))
    check(t, "no requirepass: password='x' alone is refused as Redis 7 refuses AUTH x",
          lambda: raises(lambda: client(port, password="x").ping(), redis.exceptions.ResponseError,
                         "without any password configured"))
    check(t, "no requirepass: another user is a wrong pair",
          lambda: raises(lambda: client(port, username="bob", password="x").ping(),
                         redis.exceptions.ResponseError, "WRONGPASS"))
    check(t, "no requirepass: user names are case-sensitive (DEFAULT is another user)",
          lambda: raises(lambda: client(port, username="DEFAULT", password="x").ping(),
                         redis.exceptions.ResponseError, "WRONGPASS"))
    check(t, "no requirepass: PING without AUTH", lambda: (client(port).ping() is True, ""))


def auth_locked_checks(t, port, password):
    pw = password.encode()
    check(t, "requirepass: PING before AUTH raises AuthenticationError (NOAUTH)",
          lambda: raises(lambda: client(port).ping(), redis.exceptions.AuthenticationError,
                         "Authentication required"))
    check(t, "requirepass: raw PING before AUTH is -NOAUTH Authentication required.",
          lambda: (resp_exchange(port, command("PING")) == b"-NOAUTH Authentication required.\r\n",
                   resp_exchange(port, command("PING"))))
    check(t, "requirepass: password= connects",
          lambda: (client(port, password=password).ping() is True, ""))
    check(t, "requirepass: username='default', password= connects",
          lambda: (client(port, username="default", password=password).ping() is True, ""))
    check(t, "requirepass: HELLO 2 AUTH default <password>",
          lambda: (b"proto" in client(port).execute_command("HELLO", 2, "AUTH", "default", pw), ""))
    for wrong, why in ((pw[:-1], "a prefix"), (pw + b"\x00", "with a NUL byte after it"),
                       (pw + b"\x00tail", "with a NUL byte and more"), (pw.upper(), "in capitals")):
        check(t, "requirepass: the password %s is wrong (compared byte for byte)" % why,
              lambda w=wrong: raises(lambda: client(port, password=w).ping(),
                                     redis.exceptions.ResponseError, "WRONGPASS"))


def ringkv_checks(t, port, password):
    """What ringkv does differently from Redis, on purpose (README: compatibility)."""
    r = client(port, password=password)
    check(t, "ringkv: CONFIG SET requirepass with a NUL byte is refused, never cut",
          lambda: raises(lambda: r.config_set("requirepass", password.encode() + b"\x00x"),
                         redis.exceptions.ResponseError, "NUL"))
    check(t, "ringkv: the password is unchanged after the refusal",
          lambda: (client(port, password=password).ping() is True, ""))


def mget_checks(t, r):
    r.set("a", "1")
    r.set("b", "2")
    check(t, "mget with a %d-byte key gives None in its place" % len(LONG_KEY),
          lambda: (r.mget("a", LONG_KEY, "b") == [b"1", None, b"2"], r.mget("a", LONG_KEY, "b")))
    check(t, "mget of only an over-long key", lambda: (r.mget(LONG_KEY) == [None], r.mget(LONG_KEY)))


def cond_checks(t, r):
    k, absent = "cond:k", "cond:absent"  # absent from the fresh servers the checks run on
    steps = [
        ("set(nx=True) of a new key", lambda: r.set(k, "1", nx=True), True),
        ("set(nx=True) of a present key", lambda: r.set(k, "2", nx=True), None),
        ("get after set(nx=True)", lambda: r.get(k), b"1"),
        ("set(xx=True) of an absent key", lambda: r.set(absent, "1", xx=True), None),
        ("exists after set(xx=True) of an absent key", lambda: r.exists(absent), 0),
        ("set(xx=True) of a present key", lambda: r.set(k, "3", xx=True), True),
        ("set(get=True)", lambda: r.set(k, "4", get=True), b"3"),
        ("set(nx=True, get=True) of a present key", lambda: r.set(k, "5", nx=True, get=True), b"4"),
        ("set(get=True) of an absent key", lambda: r.set("cond:g", "x", get=True), None),
        ("getset", lambda: r.getset(k, "6"), b"4"),
        ("getdel", lambda: r.getdel(k), b"6"),
        ("get after getdel", lambda: r.get(k), None),
        ("getdel of an absent key", lambda: r.getdel(k), None),
    ]
    def once(fn, want):
        got = fn()  # each step changes the key: called exactly once
        return got == want, "got %r" % (got,)

    for what, fn, want in steps:
        check(t, "%s == %r" % (what, want), lambda f=fn, w=want: once(f, w))
    check(t, "SET NX XX is a syntax error",
          lambda: raises(lambda: r.execute_command("SET", k, "x", "NX", "XX"),
                         redis.exceptions.ResponseError, "syntax error"))


def expiry_checks(t, r):
    """Expiry as a cache library uses it (django's RedisCache: set(key, value, ex=timeout);
    django-redis: set(key, value, px=timeout_ms)), on keys of their own."""
    r.delete("x:cache", "x:px", "x:td", "x:plain", "x:setex", "x:psetex", "x:keep", "x:short")
    check(t, "django-style cache.set(key, value, timeout=300): set(ex=300), get, ttl",
          lambda: (r.set("x:cache", b"page", ex=300) is True and r.get("x:cache") == b"page"
                   and 299 <= r.ttl("x:cache") <= 300, r.ttl("x:cache")))
    check(t, "django-redis-style set(px=300000): pttl within the timeout",
          lambda: (r.set("x:px", b"v", px=300000) is True
                   and 299000 <= r.pttl("x:px") <= 300000, r.pttl("x:px")))
    check(t, "set(ex=timedelta(minutes=5))",
          lambda: (r.set("x:td", b"v", ex=datetime.timedelta(minutes=5)) is True
                   and 299 <= r.ttl("x:td") <= 300, r.ttl("x:td")))
    check(t, "ttl of a key without expiry is -1, of a missing key -2",
          lambda: (r.set("x:plain", b"v") and (r.ttl("x:plain"), r.ttl("x:missing")) == (-1, -2),
                   (r.ttl("x:plain"), r.ttl("x:missing"))))
    check(t, "expire(key, 100) -> True, ttl 100; expire of a missing key -> False",
          lambda: (r.expire("x:plain", 100) is True and 99 <= r.ttl("x:plain") <= 100
                   and r.expire("x:missing", 100) is False, r.ttl("x:plain")))
    check(t, "persist -> True, ttl -1; persist again -> False",
          lambda: ((r.persist("x:plain"), r.ttl("x:plain"), r.persist("x:plain"))
                   == (True, -1, False), r.ttl("x:plain")))
    later = datetime.datetime.now() + datetime.timedelta(hours=1)
    check(t, "expireat(key, datetime an hour ahead): ttl about 3600",
          lambda: (r.expireat("x:plain", later) is True
                   and 3590 <= r.ttl("x:plain") <= 3600, r.ttl("x:plain")))
    check(t, "setex(key, 60, value) and psetex(key, 60000, value)",
          lambda: (r.setex("x:setex", 60, b"a") is True and r.psetex("x:psetex", 60000, b"b")
                   and 59 <= r.ttl("x:setex") <= 60 and 59000 <= r.pttl("x:psetex") <= 60000,
                   (r.ttl("x:setex"), r.pttl("x:psetex"))))
    check(t, "set(keepttl=True) keeps the expiry; a plain set clears it",
          lambda: (r.set("x:keep", b"1", ex=500) and r.set("x:keep", b"2", keepttl=True)
                   and 499 <= r.ttl("x:keep") <= 500 and r.get("x:keep") == b"2"
                   and r.set("x:keep", b"3") and r.ttl("x:keep") == -1, r.ttl("x:keep")))
    check(t, "set with ex=0 is refused as an invalid expire time",
          lambda: raises(lambda: r.set("x:bad", b"v", ex=0), redis.ResponseError,
                         "invalid expire time"))

    def expires_while_waiting():
        r.set("x:short", b"v", px=200)
        if r.get("x:short") != b"v":
            return False, "not readable before its expiry"
        deadline = time.time() + 5
        while r.get("x:short") is not None and time.time() < deadline:
            time.sleep(0.05)
        return (r.get("x:short") is None and r.exists("x:short") == 0
                and r.ttl("x:short") == -2, r.ttl("x:short"))
    check(t, "a value set with px=200 reads as absent once it expired (get, exists, ttl)",
          expires_while_waiting)
    r.delete("x:cache", "x:px", "x:td", "x:plain", "x:setex", "x:psetex", "x:keep", "x:short")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--open", type=int, required=True)
    ap.add_argument("--locked", type=int, required=True)
    ap.add_argument("--password", required=True)
    ap.add_argument("--databases", type=int, default=16)
    ap.add_argument("--ringkv", action="store_true")
    a = ap.parse_args()
    t = a.target
    print("%s: redis-py %s" % (t, redis.__version__))
    r = client(a.open)
    info_checks(t, r)
    config_checks(t, r, a.databases)
    mget_checks(t, r)
    cond_checks(t, r)
    auth_open_checks(t, a.open)
    auth_locked_checks(t, a.locked, a.password)
    expiry_checks(t, client(a.locked, password=a.password))
    if a.ringkv:
        ringkv_checks(t, a.locked, a.password)
    print("%s: %d failed" % (t, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
