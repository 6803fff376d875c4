#!/usr/bin/env python3
"""alt_pipeline.py - the alternating pipeline of bench_node.sh.

    alt_pipeline.py PORT [--host ADDR] [--conns N] [--pairs P] [--runs R] [--value BYTES]

N connections (default 50), opened before the clock starts, each send one
pipeline of P pairs (default 200) `SET k v` / `GET k` at once, k distinct
per pair and run, v of BYTES bytes (default 100) naming its key; the run
ends when every reply has arrived.  Every reply is checked: each SET's
+OK, each GET the value its SET just wrote, in order.  One thread drives
every connection (non-blocking sockets and a selector), so the client's
own cost stays small beside the server's.  R runs (default 5), each with
fresh keys; prints

    seconds=<median> rate=<commands/s at the median> runs=<each run's seconds>

and exits 1 on a wrong reply.
"""
import argparse
import selectors
import socket
import statistics
import sys
import time


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def one_run(port, run, args):
    conns = []
    for i in range(args.conns):
        s = socket.create_connection((args.host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        req, want = [], []
        for j in range(args.pairs):
            k = b"alt:%d:%d:%d" % (run, i, j)
            v = (k + b":" + b"v" * args.value)[: args.value]
            req.append(b"*3\r\n$3\r\nSET\r\n" + bulk(k) + bulk(v))
            req.append(b"*2\r\n$3\r\nGET\r\n" + bulk(k))
            want.append(b"+OK\r\n" + bulk(v))
        conns.append({"s": s, "out": memoryview(b"".join(req)), "want": b"".join(want),
                      "got": bytearray()})
    sel = selectors.DefaultSelector()
    start = time.perf_counter()
    for c in conns:
        sel.register(c["s"], selectors.EVENT_READ | selectors.EVENT_WRITE, c)
    left = len(conns)
    while left > 0:
        for key, ev in sel.select():
            c = key.data
            if ev & selectors.EVENT_WRITE and len(c["out"]) > 0:
                try:
                    n = c["s"].send(c["out"])
                except BlockingIOError:
                    n = 0
                c["out"] = c["out"][n:]
                if len(c["out"]) == 0:
                    sel.modify(c["s"], selectors.EVENT_READ, c)
            if ev & selectors.EVENT_READ:
                try:
                    d = c["s"].recv(1 << 20)
                except BlockingIOError:
                    continue
                if not d:
                    raise EOFError("connection closed after %d reply bytes" % len(c["got"]))
                c["got"] += d
                if len(c["got"]) >= len(c["want"]):
                    sel.unregister(c["s"])
                    left -= 1
    elapsed = time.perf_counter() - start
    for c in conns:
        c["s"].close()
        if bytes(c["got"]) != c["want"]:
            got, want = bytes(c["got"]), c["want"]
            at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                      min(len(got), len(want)))
            raise ValueError("reply differs at byte %d: %r, expected %r"
                             % (at, got[at:at + 40], want[at:at + 40]))
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--value", type=int, default=100)
    args = ap.parse_args()
    try:
        times = [one_run(args.port, r, args) for r in range(args.runs)]
    except (OSError, EOFError, ValueError) as e:
        print("error %s" % e)
        sys.exit(1)
    med = statistics.median(times)
    print("seconds=%.4f rate=%d runs=%s" % (med, int(2 * args.conns * args.pairs / med),
                                            ",".join("%.4f" % t for t in times)))


if __name__ == "__main__":
    main()
