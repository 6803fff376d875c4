#!/usr/bin/env python3
"""walkill.py - a load whose every acknowledged write is known, for kill -9
tests of the store's write-ahead log and its checkpoints.

    walkill.py load PORT STATE [--conns C] [--keys K] [--value-bytes B]
                    [--seconds S] [--burst-ms X] [--pause-ms Y] [--seed N]
    walkill.py check PORT STATE

load: C connections, each owning K keys (w<c>:<k>) no other connection
touches, send one command at a time: SET with a value naming the
connection, the key and a counter (padded to B bytes, so the overlay
fills and checkpoints come often), or DEL (one in four).  Bursts of X ms
alternate with pauses of Y ms, longer than the store's idle checkpoint,
so kills land in appends, in checkpoints and between them.  A connection
stops at the first error or closed connection (the node was killed); its
command then in flight may or may not have happened.  STATE (JSON) is read
first when it exists, so rounds on one data directory accumulate, and is
rewritten with, per key, the acknowledged state (a value or null for
deleted) and the in-flight one.

check: reads every key of STATE with GET and prints `ok keys=N` or each
key whose value is neither its last acknowledged state nor its in-flight
write, exiting 1.
"""
import argparse
import json
import os
import random
import socket
import sys
import threading
import time


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.buf = b""

    def _fill(self):
        data = self.s.recv(1 << 20)
        if not data:
            raise EOFError("connection closed")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return (kind.decode(), rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError("bad reply line %r" % line)


def worker(a, c, state, stats):
    rng = random.Random(a.seed * 1000 + c)
    try:
        conn = Conn(a.port)
    except OSError:
        return
    t0 = time.monotonic()
    deadline = t0 + a.seconds
    n = 0
    while time.monotonic() < deadline:
        phase = (time.monotonic() - t0) * 1000 % (a.burst_ms + a.pause_ms)
        if phase >= a.burst_ms:
            time.sleep((a.burst_ms + a.pause_ms - phase) / 1000)
            continue
        key = "w%d:%d" % (c, rng.randrange(a.keys))
        if rng.random() < 0.25:
            cmd, want = ["DEL", key], None
        else:
            v = "%s=%d.%d." % (key, a.seed, n)
            cmd, want = ["SET", key, v + "x" * max(0, a.value_bytes - len(v))], v
        n += 1
        st = state.setdefault(key, {"acked": None, "inflight": []})
        st["inflight"] = [want]
        try:
            conn.s.sendall(encode(cmd))
            r = conn.reply()
        except (OSError, EOFError, ValueError):
            break
        if isinstance(r, tuple) and r[0] == "-":
            stats["errors"].append("%s: %s" % (" ".join(cmd[:2]), r[1]))
            break
        st["acked"] = want
        st["inflight"] = []
        stats["acked"] += 1


def cmd_load(a):
    state = json.load(open(a.state)) if os.path.exists(a.state) else {}
    stats = {"acked": 0, "errors": []}
    ts = [threading.Thread(target=worker, args=(a, c, state, stats)) for c in range(a.conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(a.state + ".tmp", "w") as f:
        json.dump(state, f)
    os.rename(a.state + ".tmp", a.state)
    print("acked=%d keys=%d errors=%s" % (stats["acked"], len(state), stats["errors"][:3]))


def cmd_check(a):
    state = json.load(open(a.state))
    conn = Conn(a.port)
    keys = sorted(state)
    bad = []
    for i in range(0, len(keys), 200):
        chunk = keys[i:i + 200]
        conn.s.sendall(b"".join(encode(["GET", k]) for k in chunk))
        for k in chunk:
            r = conn.reply()
            got = r.decode().rstrip("x") if isinstance(r, bytes) else r
            st = state[k]
            ok = [st["acked"]] + st["inflight"]
            if got not in ok:
                bad.append("%s: got %r, acknowledged %r, in flight %r" %
                           (k, got, st["acked"], st["inflight"]))
            # what survived the kill is now the key's state: an in-flight write seen here
            # must stay (a later round's unacknowledged DEL may not take it back)
            st["acked"], st["inflight"] = got, []
    if bad:
        print("LOST %d of %d keys:\n  %s" % (len(bad), len(keys), "\n  ".join(bad[:20])))
        sys.exit(1)
    with open(a.state + ".tmp", "w") as f:
        json.dump(state, f)
    os.rename(a.state + ".tmp", a.state)
    print("ok keys=%d" % len(keys))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["load", "check"])
    ap.add_argument("port", type=int)
    ap.add_argument("state")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--value-bytes", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--burst-ms", type=float, default=300)
    ap.add_argument("--pause-ms", type=float, default=150)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    (cmd_load if a.cmd == "load" else cmd_check)(a)


if __name__ == "__main__":
    main()
