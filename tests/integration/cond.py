#!/usr/bin/python3
"""Conditional writes through redis-py (tests/integration/node-cond.sh).

Usage: cond.py checks AT PREFIX        the SET NX/XX/GET, GETSET, GETDEL cases through
                                       the node at AT (ADDRESS:PORT, or PORT), on keys named PREFIX...
       cond.py race AT PREFIX KEYS     two connections to AT send SET key NX for the
                                       same KEYS keys at once: exactly one wins each
       cond.py siblings AT1 AT2 PREFIX
                                       make a key with two siblings (KSET with one context
                                       through two nodes), then check what the conditional
                                       writes answer on it through AT1

Prints one line per group of checks; exits non-zero with the first failure.
"""
import sys
import threading

import redis


def fail(msg):
    print(msg)
    sys.exit(1)


def expect(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, expected {want!r}")


def expect_error(what, fn, text):
    try:
        got = fn()
    except redis.ResponseError as e:
        if text not in str(e):
            fail(f"{what}: error {e!r} does not say {text!r}")
        return
    fail(f"{what}: got {got!r}, expected an error saying {text!r}")


def client(at):
    """A connection to ADDRESS:PORT, or PORT on 127.0.0.1."""
    host, _, port = at.rpartition(":")
    return redis.Redis(host=host or "127.0.0.1", port=int(port), socket_timeout=20)


def checks(port, p):
    r = client(port)
    k, absent = p + "k", p + "absent"
    # NX, XX
    expect("SET NX of a new key", r.set(k, "1", nx=True), True)
    expect("SET NX of a present key", r.set(k, "2", nx=True), None)
    expect("GET after SET NX", r.get(k), b"1")
    expect("SET XX of an absent key", r.set(absent, "1", xx=True), None)
    expect("EXISTS after SET XX of an absent key", r.exists(absent), 0)
    expect("SET XX of a present key", r.set(k, "3", xx=True), True)
    expect("GET after SET XX", r.get(k), b"3")
    print("SET NX and XX write only when the key is absent, present")
    # GET
    expect("SET GET", r.set(k, "4", get=True), b"3")
    expect("SET GET of an absent key", r.set(p + "g", "x", get=True), None)
    expect("GET after SET GET of an absent key", r.get(p + "g"), b"x")
    expect("SET NX GET of a present key", r.set(k, "5", nx=True, get=True), b"4")
    expect("GET after SET NX GET", r.get(k), b"4")
    expect("SET XX GET of an absent key", r.set(absent, "5", xx=True, get=True), None)
    expect("EXISTS after SET XX GET", r.exists(absent), 0)
    print("SET GET answers the old value, with NX and XX too")
    # refused options
    expect_error("SET NX XX", lambda: r.execute_command("SET", k, "x", "NX", "XX"), "syntax error")
    expect_error("SET NX XX NX", lambda: r.execute_command("SET", k, "x", "NX", "XX", "NX"), "syntax error")
    expect_error("SET unknown", lambda: r.execute_command("SET", k, "x", "BOGUS"), "syntax error")
    expect("GET after refused SETs", r.get(k), b"4")
    print("contradicting and unknown SET options are a syntax error")
    # a repeated option counts once, as in Redis 7
    expect("SET NX NX of a present key", r.execute_command("SET", k, "x", "NX", "NX"), None)
    r.execute_command("SET", k, "5", "XX", "GET", "GET", "XX")  # redis-py reads its reply as OK or not
    expect("GET after SET XX GET GET XX", r.get(k), b"5")
    expect("SET GET after it", r.set(k, "4", get=True), b"5")
    print("a repeated SET option counts once")
    # GETSET, GETDEL
    expect("GETSET", r.getset(k, "6"), b"4")
    expect("GETSET of an absent key", r.getset(p + "gs", "y"), None)
    expect("GET after GETSET", r.get(k), b"6")
    expect("GETDEL", r.getdel(k), b"6")
    expect("GET after GETDEL", r.get(k), None)
    expect("GETDEL of a deleted key", r.getdel(k), None)
    expect("SET NX of a deleted key", r.set(k, "7", nx=True), True)
    expect("GETDEL of an empty value", (r.set(p + "e", ""), r.getdel(p + "e")),
           (True, b""))
    print("GETSET and GETDEL answer the old value; GETDEL deletes")
    # inside MULTI/EXEC: queued, run in order, later reads see what the earlier ones did
    m = p + "m"
    pipe = r.pipeline(transaction=True)
    pipe.set(m, "1", nx=True)
    pipe.set(m, "2", nx=True)
    pipe.get(m)
    pipe.set(m, "3", xx=True, get=True)
    pipe.getdel(m)
    pipe.get(m)
    pipe.set(m, "4", xx=True)
    pipe.get(m)
    expect("MULTI/EXEC of conditional writes", pipe.execute(),
           [True, None, b"1", b"1", b"3", None, None, None])
    print("inside MULTI/EXEC the conditional writes run in order")


RACE_CHUNK = 10


def race(port, p, keys):
    """Two connections send SET key NX for the same keys at once: one winner per key."""
    keys = int(keys)
    names = [f"{p}race{i}" for i in range(keys)]
    results = [None, None]
    start = threading.Barrier(2)

    def one(who):
        # in pipelines of RACE_CHUNK, the second connection from the last key back, so
        # the two meet in the middle with their commands in flight together
        r = client(port)
        r.ping()
        order = list(range(keys)) if who == 0 else list(reversed(range(keys)))
        got = {}
        start.wait()
        for c in range(0, keys, RACE_CHUNK):
            pipe = r.pipeline(transaction=False)
            chunk = order[c:c + RACE_CHUNK]
            for i in chunk:
                pipe.set(names[i], f"c{who}", nx=True)
            got.update(zip(chunk, pipe.execute()))
        results[who] = [got[i] for i in range(keys)]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = client(port)
    wins = [0, 0]
    for i, k in enumerate(names):
        a, b = results[0][i], results[1][i]
        if (a is True) == (b is True):
            fail(f"SET {k} NX from two connections: {a!r} and {b!r}, expected one OK and one nil")
        winner = 0 if a is True else 1
        wins[winner] += 1
        expect(f"GET {k} after the race", r.get(k), f"c{winner}".encode())
    print(f"{keys} keys raced by two connections with SET NX: one winner each "
          f"({wins[0]} and {wins[1]})")


def siblings(port1, port2, p):
    """A key with siblings: present to NX/XX, and no single old value for GET."""
    r1, r2 = client(port1), client(port2)
    k = p + "sib"
    r1.set(k, "base")
    ctx = r1.execute_command("KGET", k)[0]
    r1.execute_command("KSET", k, "a", "CONTEXT", ctx)
    r2.execute_command("KSET", k, "b", "CONTEXT", ctx)
    got = r1.execute_command("KGET", k)
    expect("siblings made by two KSETs of one context", sorted(got[1]), [b"a", b"b"])
    expect("SET NX of a key with siblings", r1.set(k, "c", nx=True), None)
    expect_error("SET GET of a key with siblings", lambda: r1.set(k, "c", get=True), "CONFLICT")
    expect_error("GETSET of a key with siblings", lambda: r1.getset(k, "c"), "CONFLICT")
    expect_error("GETDEL of a key with siblings", lambda: r1.getdel(k),
                 "CONFLICT")
    expect("siblings kept after the refusals", sorted(r1.execute_command("KGET", k)[1]),
           [b"a", b"b"])
    expect("SET XX of a key with siblings", r1.set(k, "d", xx=True), True)
    expect("GET after SET XX over siblings", r2.get(k), b"d")
    print("a key with siblings is present to NX and XX; GET, GETSET, GETDEL answer CONFLICT")


if __name__ == "__main__":
    cmds = {"checks": checks, "race": race, "siblings": siblings}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        fail(__doc__)
    cmds[sys.argv[1]](*sys.argv[2:])
