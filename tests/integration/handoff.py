#!/usr/bin/env python3
"""handoff.py - data and questions for the ownership-handoff tests.

    handoff.py load ADDR PREFIX FIRST COUNT [TAG]
                                                SET PREFIX%06d (FIRST .. FIRST+COUNT-1) to
                                                its value (of TAG), pipelined, through ADDR
    handoff.py del ADDR PREFIX FIRST COUNT      DEL those keys through ADDR
    handoff.py check ADDR PREFIX FIRST COUNT STEP [TAG | nil]
                                                GET every STEP-th of those keys through ADDR:
                                                each holds its value (of TAG; nil: each is
                                                absent); prints how many were read
    handoff.py transfers ADDR                   ADDR's incoming transfers, one line of
                                                key=value: rows, left (keys still to come,
                                                keys_total - keys summed), unchecked (rows
                                                without keys_total yet), source (the `from`
                                                of the streaming row furthest along, one
                                                mid-stream if any), arc
                                                and arc_keys (its start and keys), mid
                                                (streaming rows with 0 < keys < keys_total)
    handoff.py arc ADDR START                   the incoming transfer of ADDR whose arc
                                                starts at START: from, keys, state (gone:
                                                no longer listed, done)
    handoff.py copies PATTERN ADDR...           KEYS PATTERN on each node (its own copies,
                                                scan.c); one line: keys (distinct), min (the
                                                fewest copies of one of them), max, and the
                                                first key with the fewest

ADDR is HOST:PORT, a node's client address.  A key's value is TAG and the
key repeated to VALUE_LEN bytes, so any reader can tell it from another
key's, and from the same key's of another TAG.
Exit status 0, or 1 with one line on stderr naming what went wrong.
"""
import socket
import sys

VALUE_LEN = 100
PIPELINE = 500


def value(key, tag=""):
    unit = tag + key + "|"
    return (unit * (VALUE_LEN // len(unit) + 1))[:VALUE_LEN]


class Conn:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        self.f = self.s.makefile("rb")

    def send(self, cmds):
        out = []
        for args in cmds:
            args = [a.encode() for a in args]
            out.append(b"*%d\r\n" % len(args))
            out.extend(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
        self.s.sendall(b"".join(out))

    def reply(self):
        line = self.f.readline()
        if not line:
            raise RuntimeError("connection closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return data.decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)

    def call(self, *args):
        self.send([args])
        return self.reply()


def keys_of(prefix, first, count, step=1):
    return ["%s%06d" % (prefix, i) for i in range(first, first + count, step)]


def load(addr, prefix, first, count, tag=""):
    c = Conn(addr)
    keys = keys_of(prefix, int(first), int(count))
    for i in range(0, len(keys), PIPELINE):
        part = keys[i:i + PIPELINE]
        c.send([("SET", k, value(k, tag)) for k in part])
        for k in part:
            r = c.reply()
            if r != "OK":
                raise RuntimeError("SET %s: %r" % (k, r))


def delete(addr, prefix, first, count):
    c = Conn(addr)
    keys = keys_of(prefix, int(first), int(count))
    for i in range(0, len(keys), PIPELINE):
        part = keys[i:i + PIPELINE]
        c.send([("DEL", k) for k in part])
        for k in part:
            r = c.reply()
            if r != 1:
                raise RuntimeError("DEL %s: %r" % (k, r))


def check(addr, prefix, first, count, step, tag=""):
    c = Conn(addr)
    keys = keys_of(prefix, int(first), int(count), int(step))
    for i in range(0, len(keys), PIPELINE):
        part = keys[i:i + PIPELINE]
        c.send([("GET", k) for k in part])
        for k in part:
            got = c.reply()
            want = None if tag == "nil" else value(k, tag)
            if got != want:
                raise RuntimeError("GET %s through %s: %r, want %r" % (k, addr, got, want))
    print(len(keys))


def pairs(flat):
    return dict(zip(flat[0::2], flat[1::2]))


def transfers(addr):
    t = pairs(Conn(addr).call("RINGKV", "TRANSFERS"))
    rows = [pairs(r) for r in t["transfers"]]
    rows = [r for r in rows if r["direction"] == "in"]
    streaming = [r for r in rows if r["state"] == "streaming"]
    mid = [r for r in streaming if 0 < r["keys"] < r["keys_total"]]
    streaming.sort(key=lambda r: (r not in mid, -r["keys"]))
    unchecked = [r for r in rows if r["keys_total"] == 0]
    print("rows=%d left=%d unchecked=%d source=%s arc=%s arc_keys=%d mid=%d" %
          (len(rows), sum(r["keys_total"] - r["keys"] for r in rows), len(unchecked),
           streaming[0]["from"] if streaming else "-", streaming[0]["start"] if streaming else "-",
           streaming[0]["keys"] if streaming else 0, len(mid)))


def arc(addr, start):
    t = pairs(Conn(addr).call("RINGKV", "TRANSFERS"))
    rows = [pairs(r) for r in t["transfers"]]
    rows = [r for r in rows if r["direction"] == "in" and r["start"] == start]
    if rows:
        print("from=%s keys=%d state=%s" % (rows[0]["from"], rows[0]["keys"], rows[0]["state"]))
    else:
        print("from=- keys=0 state=gone")


def copies(pattern, addrs):
    count = {}
    for a in addrs:
        for k in Conn(a).call("KEYS", pattern):
            count[k] = count.get(k, 0) + 1
    if not count:
        print("keys=0 min=0 max=0 fewest=-")
        return
    fewest = min(sorted(count), key=lambda k: count[k])
    print("keys=%d min=%d max=%d fewest=%s" %
          (len(count), count[fewest], max(count.values()), fewest))


def main():
    what, args = sys.argv[1], sys.argv[2:]
    try:
        if what == "load":
            load(*args)
        elif what == "del":
            delete(*args)
        elif what == "check":
            check(*args)
        elif what == "transfers":
            transfers(args[0])
        elif what == "arc":
            arc(args[0], args[1])
        elif what == "copies":
            copies(args[0], args[1:])
        else:
            sys.exit("handoff.py: unknown question %s" % what)
    except (RuntimeError, OSError, KeyError, IndexError, TypeError) as e:
        print("handoff.py %s: %s" % (what, e), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
