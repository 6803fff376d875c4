#!/usr/bin/env python3
"""pipeline.py - pipelines against one node, checked against a model.

    pipeline.py PORT order SEED [--conns N] [--rounds R]
    pipeline.py PORT mset [--msets M] [--keys K]
    pipeline.py PORT passing SEED [--rounds R] [--msets M]

order: N connections each send R pipelines of random SET, GET, MGET, DEL,
EXISTS, MSET and KGET on a few keys of their own, and every reply must be
what a Redis server would answer running the commands one at a time:
replies in command order, a read sees every earlier write of its
connection and no later one.  Against a node started with
--kv-shuffle-seed, whose data operations complete in a shuffled order,
this checks the pipeline's ordering rules.  Prints `ok checked=<replies>`
or the first difference, and exits 1 on a difference.

passing: against a node started with --kv-shuffle-seed (every data
operation completes only at the end of the event-loop pass, in a
shuffled order, so a command behind a waiting one is certainly started
in the same pass as it, or not at all), the rules for starting past a
waiting command, read from INFO's ringkv_client_started_past_wait:
  - reads and writes of other keys start past a read that waits for its
    key's write (SET a, GET a, GET b: GET b starts past GET a);
  - nothing starts past a command that is not a plain data command
    (PING, DBSIZE, MULTI), a read never passes a waiting read or write of
    its key, a write never passes a waiting write nor a read of its key;
  - every reply is the one Redis gives running the commands one at a
    time (a read after a write of its key sees it, a write after a read
    of its key does not overtake it);
  - a connection's writes are seen in their order by another connection
    reading meanwhile, even when a read of the writer waits between them.
R rounds of the patterns, M pipelines of the writer.  Prints `ok
passed=<n> ...` or the first failure, and exits 1 on one.

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


def started_past_wait(conn):
    """INFO's count of commands started while an earlier one waited."""
    text = conn.pipeline([["INFO", "stats"]])[0].decode()
    for line in text.split("\r\n"):
        if line.startswith("ringkv_client_started_past_wait:"):
            return int(line.split(":", 1)[1])
    raise AssertionError("INFO stats has no ringkv_client_started_past_wait")


ANY = object()


def expected(db, cmds):
    """Redis's replies to cmds run one at a time on db, MULTI/EXEC included."""
    out, queued = [], None
    for c in cmds:
        c = [c[0]] + [x.encode() if isinstance(x, str) else x for x in c[1:]]
        if c[0] == "MULTI":
            queued = []
            out.append(("+", "OK"))
        elif c[0] == "EXEC":
            out.append([model_run(db, q) for q in queued])
            queued = None
        elif queued is not None:
            queued.append(c)
            out.append(("+", "QUEUED"))
        elif c[0] == "PING":
            out.append(("+", "PONG"))
        elif c[0] == "DBSIZE":
            out.append(ANY)
        else:
            out.append(model_run(db, c))
    return out


def run_checked(conn, db, cmds, what):
    """Run cmds as one pipeline; every reply must be the model's."""
    got = conn.pipeline(cmds)
    for c, g, want in zip(cmds, got, expected(db, cmds)):
        if want is not ANY and normalise(c, g) != want:
            raise AssertionError("%s: %r answered %r, expected %r" % (what, c, g, want))


def passing(args):
    info = Conn(args.port)
    conn = Conn(args.port)
    db = {}
    p = b"pass%d:" % args.seed
    a, b, c = p + b"a", p + b"b", p + b"c"
    rounds = args.rounds

    # Each may start past a waiting command (the most it adds per pipeline).
    allowed = [
        ([["SET", a, "1"], ["GET", a], ["GET", b]], 1),
        ([["SET", a, "2"], ["GET", a], ["SET", b, "2"], ["GET", b]], 1),
        ([["SET", a, "3"], ["GET", a], ["MGET", b, c], ["EXISTS", c], ["SET", c, "3"]], 2),
        ([["SET", a, "4"], ["GET", a], ["SET", b, "4"], ["GET", b], ["SET", c, "4"],
          ["GET", c], ["KGET", a]], 2),
        # a read passes a write that waits for the read of its key in flight
        ([["GET", b], ["SET", b, "5"], ["GET", c]], 1),
    ]
    # Nothing may start past the waiting ones.
    refused = [
        [["SET", a, "6"], ["GET", a], ["PING"], ["GET", b]],
        [["SET", a, "7"], ["GET", a], ["DBSIZE"], ["GET", b]],
        [["SET", a, "8"], ["GET", a], ["MULTI"], ["GET", b], ["EXEC"]],
        # a read never passes a waiting read of its key
        [["SET", a, "9"], ["MGET", a, b], ["GET", b]],
        # a write never passes a waiting read of its key
        [["SET", a, "10"], ["GET", a], ["SET", a, "11"]],
        [["SET", a, "12"], ["GET", a], ["DEL", b, a], ["GET", b]],
        # nor a waiting write
        [["GET", b], ["SET", b, "13"], ["SET", c, "13"], ["GET", c]],
    ]
    try:
        before = started_past_wait(info)
        for r in range(rounds):
            for cmds, _ in allowed:
                run_checked(conn, db, cmds, "round %d" % r)
        passed = started_past_wait(info) - before
        most = rounds * sum(n for _, n in allowed)
        if passed < 1 or passed > most:
            print("%d commands started past a waiting one in %d rounds (expected 1 to %d)"
                  % (passed, rounds, most))
            return 1
        before = started_past_wait(info)
        for r in range(rounds):
            for cmds in refused:
                run_checked(conn, db, cmds, "round %d" % r)
        refused_passed = started_past_wait(info) - before
        if refused_passed != 0:
            print("%d commands started past one they may not pass" % refused_passed)
            return 1
    except AssertionError as e:
        print(e)
        return 1

    # A writer whose reads wait between its writes; a reader sees the writes in order.
    keys = [p + b"w0", p + b"w1", p + b"w2"]
    stop = threading.Event()
    bad, reads = [], [0]

    def reader():
        r = Conn(args.port)
        while not stop.is_set() and not bad:
            seen = []
            for k in reversed(keys):  # the last written first: each later read sees more
                v = r.pipeline([["GET", k]])[0]
                seen.append(float(v) if v is not None else 0.0)
            reads[0] += 1
            if not seen[0] <= seen[1] <= seen[2]:
                bad.append(dict(zip([k.decode() for k in reversed(keys)], seen)))

    t = threading.Thread(target=reader)
    t.start()
    writer = Conn(args.port)
    wdb = {}
    try:
        for i in range(1, args.msets + 1):
            # SET w0 i waits for GET w0, which waits for the commit of SET w0 i-0.5: the
            # writes after it must wait too, while the reads of other keys need not
            v = b"%d" % i
            run_checked(writer, wdb, [["GET", keys[0]], ["SET", keys[0], b"%d.5" % (i - 1)],
                                      ["GET", keys[0]], ["GET", p + b"x"], ["SET", keys[0], v],
                                      ["SET", keys[1], v], ["GET", keys[1]], ["SET", keys[2], v],
                                      ["GET", keys[0]]], "writer %d" % i)
    except AssertionError as e:
        bad.append(str(e))
    stop.set()
    t.join()
    if bad:
        print("writes seen out of order: %r" % (bad[0],))
        return 1
    print("ok passed=%d refused=0 ordered_reads=%d" % (passed, reads[0]))
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
    ap.add_argument("mode", choices=["order", "mset", "passing"])
    ap.add_argument("seed", type=int, nargs="?", default=1)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--msets", type=int, default=50)
    ap.add_argument("--keys", type=int, default=64)
    args = ap.parse_args()
    sys.exit({"order": order, "mset": mset, "passing": passing}[args.mode](args))


if __name__ == "__main__":
    main()
