#!/usr/bin/env python3
"""pipeline.py - pipelines against one node, checked against a model.

    pipeline.py PORT order SEED [--conns N] [--rounds R]
    pipeline.py PORT mset [--msets M] [--keys K]

order: N connections each send R pipelines of random SET, GET, MGET, DEL,
EXISTS, MSET and KGET on a few keys of their own, and every reply must be
what a Redis server would answer running the commands one at a time:
replies in command order, a read sees every earlier write of its
connection and no later one.  Against a node started with
--kv-shuffle-seed, whose data operations complete in a shuffled order,
this checks the pipeline's ordering rules.  Prints `ok checked=<replies>`
or the first difference, and exits 1 on a difference.

mset: one connection writes M MSETs of K keys (every value of MSET i is
i) while another reads the K keys with MGET over and over: an MGET must
never see two different values (half of an MSET).  Prints `ok mgets=<n>`
or the first torn read.
"""
import argparse
import random
import socket
import sys
import threading


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
        data = self.s.recv(65536)
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

    def pipeline(self, cmds):
        self.s.sendall(b"".join(encode(c) for c in cmds))
        return [self.reply() for _ in cmds]


def model_run(db, cmd):
    """The reply Redis gives to cmd on db (a dict), applying its writes."""
    name, args = cmd[0], cmd[1:]
    if name == "SET":
        db[args[0]] = args[1]
        return ("+", "OK")
    if name == "MSET":
        for k, v in zip(args[::2], args[1::2]):
            db[k] = v
        return ("+", "OK")
    if name == "DEL":
        n = sum(1 for k in set(args) if k in db)
        for k in args:
            db.pop(k, None)
        return n
    if name == "GET":
        return db.get(args[0])
    if name == "MGET":
        return [db.get(k) for k in args]
    if name == "EXISTS":
        return sum(1 for k in args if k in db)
    if name == "KGET":
        return [db[args[0]]] if args[0] in db else []
    raise ValueError(name)


def random_cmd(rng, keys, serial):
    op = rng.choice(["SET", "SET", "GET", "GET", "MGET", "DEL", "EXISTS", "MSET", "KGET"])
    if op in ("SET",):
        return [op, rng.choice(keys), b"v%d" % serial]
    if op == "MSET":
        ks = rng.sample(keys, rng.randint(1, len(keys)))
        out = [op]
        for i, k in enumerate(ks):
            out += [k, b"m%d.%d" % (serial, i)]
        return out
    if op in ("MGET", "EXISTS"):
        return [op] + [rng.choice(keys) for _ in range(rng.randint(1, 4))]
    if op == "DEL":
        return [op] + rng.sample(keys, rng.randint(1, 2))
    return [op, rng.choice(keys)]


def normalise(cmd, reply):
    """KGET's reply without its context, to compare with the model."""
    if cmd[0] == "KGET" and isinstance(reply, list) and len(reply) == 2:
        return reply[1]
    return reply


def order(args):
    rng = random.Random(args.seed)
    errors, checked = [], [0]

    def worker(idx, seed):
        wrng = random.Random(seed)
        conn = Conn(args.port)
        keys = [b"c%d:%d:k%d" % (args.seed, idx, i) for i in range(3)]
        db = {}
        serial = 0
        for r in range(args.rounds):
            cmds = []
            for _ in range(wrng.randint(1, 24)):
                serial += 1
                cmds.append(random_cmd(wrng, keys, serial))
            try:
                got = conn.pipeline(cmds)
            except Exception as e:  # a closed connection is a failure too
                errors.append("conn %d round %d: %s" % (idx, r, e))
                return
            for c, g in zip(cmds, got):
                want = model_run(db, c)
                if normalise(c, g) != want:
                    errors.append("conn %d round %d: %r answered %r, expected %r"
                                  % (idx, r, c, g, want))
                    return
                checked[0] += 1

    threads = [threading.Thread(target=worker, args=(i, rng.random()))
               for i in range(args.conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        print(errors[0])
        return 1
    print("ok checked=%d" % checked[0])
    return 0


def mset(args):
    keys = [b"atomic:%d" % i for i in range(args.keys)]
    stop = threading.Event()
    torn, mgets = [], [0]

    def reader():
        conn = Conn(args.port)
        while not stop.is_set() and not torn:
            got = conn.pipeline([["MGET"] + keys])[0]
            mgets[0] += 1
            if len(set(got)) > 1:
                torn.append(got)

    t = threading.Thread(target=reader)
    t.start()
    writer = Conn(args.port)
    for i in range(1, args.msets + 1):
        cmd = ["MSET"]
        for k in keys:
            cmd += [k, b"%d" % i]
        # a few MSETs per pipeline, so that they share batches with each other
        got = writer.pipeline([cmd, cmd, cmd])
        if any(g != ("+", "OK") for g in got):
            print("MSET answered %r" % (got,))
            stop.set()
            t.join()
            return 1
    stop.set()
    t.join()
    if torn:
        values = list(dict.fromkeys(torn[0]))
        print("torn MGET: values %r among %d keys" % (values[:5], args.keys))
        return 1
    print("ok mgets=%d" % mgets[0])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("mode", choices=["order", "mset"])
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--msets", type=int, default=50)
    ap.add_argument("--keys", type=int, default=64)
    args = ap.parse_args()
    sys.exit(order(args) if args.mode == "order" else mset(args))


if __name__ == "__main__":
    main()
