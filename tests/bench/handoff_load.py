#!/usr/bin/env python3
"""handoff_load.py - the client side of bench_handoff.sh: a fast loader and a
paced latency sampler.

    handoff_load.py load --nodes ADDR:PORT[,...] [--keys N] [--value BYTES]
                         [--chunk C] [--window W] [--seconds S]
    handoff_load.py sample --nodes ADDR:PORT[,...] [--keys N] [--value BYTES]
                           [--rate R] [--seconds S] [--stop-file F] [--seed X]
    handoff_load.py watch (--nodes ADDR:PORT | --nodes-file F) [--interval I]
                          [--seconds S] [--first-file F]

load: writes key:0 .. key:N-1 (default 1,000,000), each once, SET with a
value of BYTES bytes (default 100) naming its key, split evenly over the
nodes, one connection each.  Each connection sends its keys pipelined in
chunks of C commands (default 1000), at most W chunks (default 8)
unanswered; one thread drives them all (non-blocking sockets, a selector).
Every reply is checked to be +OK.  Prints

    load keys=N seconds=S rate=<SETs/s> errors=E [first_error=...]

and exits 1 when a reply was not +OK or the load passed S seconds (default
600).

sample: a paced, closed-loop client: every 1/R s (default R 1000) one
command, alternately GET and SET of a random key of the loaded set (SET
with a BYTES-byte value), to the nodes in turn, each on its own blocking
connection; the latency of a command is from its send to its reply.  When
a reply is late the next command goes at once, and the schedule restarts
from there (no catching up in a burst).  Runs until the stop file exists
or S seconds (default 600) passed, then prints

    sample ops=N seconds=S rate=<ops/s> p50_ms=.. p99_ms=.. p999_ms=.. max_ms=..
           errors=E [first_error=...]

(one line).  An error reply (-TRYAGAIN, -NOREPLICAS ...) counts as an
error, not as a latency.  Exits 0 when it ran.

watch: polls one node (the joiner) every I s (default 0.2) over one
connection, INFO all and RINGKV STATUS, until its status is normal or S
seconds passed; with --nodes-file, it first waits for that file and reads
the node's ADDR:PORT from it, so the process can start (a python3 start
takes half a second here) before the node does.  The first and last poll
at which
ringkv_handoff_keys_received grew.  Creates the file F (--first-file) at
the first of them.  Prints (times in ms since the epoch, as date +%s%3N)

    watch first_ms=T last_ms=T joined_ms=T keys=K polls=P

and exits 1 when the node did not turn normal in time (joined_ms=0).
One process and one connection for the whole join, where a redis-cli
per poll cost the machine more than the node being measured.
"""
import argparse
import os
import random
import selectors
import socket
import sys
import time


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def value_of(key, size):
    return (key + b":" + b"v" * size)[:size]


def set_cmd(key, size):
    return b"*3\r\n$3\r\nSET\r\n" + bulk(key) + bulk(value_of(key, size))


def parse_nodes(s):
    out = []
    for part in s.split(","):
        host, port = part.rsplit(":", 1)
        out.append((host, int(port)))
    return out


def connect(node):
    s = socket.create_connection(node, timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


# --- load ----------------------------------------------------------------------------


class Feed:
    """One connection's share of the keys: [lo, hi), sent in chunks."""

    def __init__(self, node, lo, hi, args):
        self.s = connect(node)
        self.s.setblocking(False)
        self.next, self.hi, self.args = lo, hi, args
        self.out = memoryview(b"")
        self.unanswered = 0  # commands sent or queued, not yet answered
        self.got = bytearray()
        self.errors = 0
        self.first_error = None

    def refill(self):
        c = self.args.chunk
        while len(self.out) == 0 and self.next < self.hi and \
                self.unanswered < c * self.args.window:
            end = min(self.next + c, self.hi)
            self.out = memoryview(b"".join(set_cmd(b"key:%d" % i, self.args.value)
                                           for i in range(self.next, end)))
            self.unanswered += end - self.next
            self.next = end

    def done(self):
        return self.next >= self.hi and self.unanswered == 0

    def take(self, data):
        self.got += data
        end = self.got.rfind(b"\r\n")
        if end < 0:
            return
        lines = bytes(self.got[:end + 2])
        del self.got[:end + 2]
        n = lines.count(b"\r\n")
        ok = lines.count(b"+OK\r\n")
        self.unanswered -= n
        if ok != n:
            self.errors += n - ok
            if self.first_error is None:
                self.first_error = next(x for x in lines.split(b"\r\n") if x != b"+OK")


def load(args):
    nodes = parse_nodes(args.nodes)
    per = (args.keys + len(nodes) - 1) // len(nodes)
    feeds = [Feed(n, i * per, min((i + 1) * per, args.keys), args) for i, n in enumerate(nodes)]
    sel = selectors.DefaultSelector()
    start = time.monotonic()
    for f in feeds:
        f.refill()
        sel.register(f.s, selectors.EVENT_READ | selectors.EVENT_WRITE, f)
    left = len(feeds)
    while left > 0:
        if time.monotonic() - start > args.seconds:
            print("load: not done after %d s" % args.seconds)
            return 1
        for key, ev in sel.select(timeout=1.0):
            f = key.data
            if ev & selectors.EVENT_WRITE and len(f.out) > 0:
                try:
                    f.out = f.out[f.s.send(f.out):]
                except BlockingIOError:
                    pass
            if ev & selectors.EVENT_READ:
                data = f.s.recv(1 << 20)
                if not data:
                    print("load: a node closed the connection")
                    return 1
                f.take(data)
            f.refill()
            if f.done():
                sel.unregister(f.s)
                left -= 1
            else:
                want = selectors.EVENT_READ | (selectors.EVENT_WRITE if len(f.out) else 0)
                sel.modify(f.s, want, f)
    secs = time.monotonic() - start
    errors = sum(f.errors for f in feeds)
    first = next((f.first_error for f in feeds if f.first_error is not None), None)
    print("load keys=%d seconds=%.2f rate=%.0f errors=%d%s" %
          (args.keys, secs, args.keys / secs if secs > 0 else 0, errors,
           "" if first is None else " first_error=%r" % first.decode(errors="replace")))
    return 1 if errors else 0


# --- sample --------------------------------------------------------------------------


def read_reply(f):
    """One RESP reply of a GET or SET: (ok, text of an error)."""
    r = read_resp(f)
    if isinstance(r, Exception):
        return False, "-" + str(r)
    return True, None


def read_resp(f):
    """Any RESP reply: bytes, int, list, or an Exception for an error."""
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest
    if kind == b"-":
        return Exception(rest.decode(errors="replace"))
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_resp(f) for _ in range(n)]
    raise ConnectionError("not RESP: %r" % line)


def watch(args):
    start = time.monotonic()
    while args.nodes_file and not os.path.exists(args.nodes_file):
        if time.monotonic() - start > args.seconds:
            raise TimeoutError("no %s" % args.nodes_file)
        time.sleep(0.002)
    if args.nodes_file:  # written whole: the bench renames it into place
        with open(args.nodes_file) as f:
            args.nodes = f.read().strip()
    node = parse_nodes(args.nodes)[0]
    while True:
        try:
            s = connect(node)
            break
        except OSError:
            if time.monotonic() - start > args.seconds:
                raise
            time.sleep(0.05)
    f = s.makefile("rb")
    first = last = joined = 0
    keys = polls = 0
    while time.monotonic() - start <= args.seconds:
        s.sendall(b"*2\r\n$4\r\nINFO\r\n$3\r\nall\r\n*2\r\n$6\r\nRINGKV\r\n$6\r\nSTATUS\r\n")
        info, status = read_resp(f), read_resp(f)
        now = int(time.time() * 1000)
        polls += 1
        k = 0
        for line in (info if isinstance(info, bytes) else b"").split(b"\r\n"):
            if line.startswith(b"ringkv_handoff_keys_received:"):
                k = int(line.split(b":", 1)[1])
        if k > keys:
            if first == 0:
                first = now
                if args.first_file:
                    open(args.first_file, "w").close()
            last, keys = now, k
        if isinstance(status, list):
            fields = dict(zip(status[0::2], status[1::2]))
            if fields.get(b"status") == b"normal":
                joined = now
                break
        time.sleep(args.interval)
    print("watch first_ms=%d last_ms=%d joined_ms=%d keys=%d polls=%d"
          % (first, last, joined, keys, polls))
    return 0 if joined else 1


def percentile(sorted_ms, p):
    if not sorted_ms:
        return 0.0
    i = min(len(sorted_ms) - 1, int(p * len(sorted_ms)))
    return sorted_ms[i]


def sample(args):
    rng = random.Random(args.seed)
    conns = []
    for n in parse_nodes(args.nodes):
        s = connect(n)
        conns.append((s, s.makefile("rb")))
    period = 1.0 / args.rate
    lat, errors, first_error = [], 0, None
    start = time.monotonic()
    due = start
    i = 0
    while True:
        now = time.monotonic()
        if now - start > args.seconds or (args.stop_file and os.path.exists(args.stop_file)):
            break
        if due > now:
            time.sleep(due - now)
        s, f = conns[i % len(conns)]
        key = b"key:%d" % rng.randrange(args.keys)
        cmd = set_cmd(key, args.value) if i % 2 else b"*2\r\n$3\r\nGET\r\n" + bulk(key)
        t0 = time.monotonic()
        s.sendall(cmd)
        ok, err = read_reply(f)
        t1 = time.monotonic()
        if ok:
            lat.append((t1 - t0) * 1000.0)
        else:
            errors += 1
            first_error = first_error or err
        i += 1
        due = max(due + period, t1)
    secs = time.monotonic() - start
    lat.sort()
    print("sample ops=%d seconds=%.2f rate=%.0f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f "
          "errors=%d%s" % (i, secs, i / secs if secs > 0 else 0, percentile(lat, 0.50),
                           percentile(lat, 0.99), percentile(lat, 0.999),
                           lat[-1] if lat else 0.0, errors,
                           "" if first_error is None else " first_error=%r" % first_error))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["load", "sample", "watch"])
    ap.add_argument("--nodes")
    ap.add_argument("--nodes-file", default=None)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--value", type=int, default=100)
    ap.add_argument("--chunk", type=int, default=1000)
    ap.add_argument("--window", type=int, default=8)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--stop-file", default=None)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--first-file", default=None)
    args = ap.parse_args()
    if args.nodes is None and not (args.mode == "watch" and args.nodes_file):
        ap.error("--nodes is required")
    sys.exit({"load": load, "sample": sample, "watch": watch}[args.mode](args))


if __name__ == "__main__":
    main()
