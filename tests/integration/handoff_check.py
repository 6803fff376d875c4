#!/usr/bin/env python3
"""handoff_check.py - keys loaded, read back and placed, for the handoff tests.

    handoff_check.py load PREFIX N ADDR:PORT...      SET PREFIXi to vPREFIXi (i < N), key i
                                               through node i mod the nodes' count,
                                               pipelined; every reply must be OK
    handoff_check.py check PREFIX N ADDR:PORT...     GET them back the same way: every value
                                               must be the one loaded
    handoff_check.py placement RF ADDR:PORT...       where each key's copies are (SCAN of each
                                               node's own store) against its preference
                                               list (RINGKV PREFLIST through the first
                                               node, every key held anywhere)
    handoff_check.py agree PREFIX ADDR:PORT...       RINGKV REPLICAS of every key under
                                               PREFIX held anywhere: every replica
                                               answered and all hold the same version

placement prints `distinct N`, then `node ID KEYS PREFIXED` for each node
(PREFIXED: its keys starting with $HANDOFF_PREFIX, default "pre:"), then
`misplaced M` and at most 10 lines `key K held-by A,B want C,D`; it exits 0
when every key is held by exactly its rf preference-list nodes (primary and
replicas), else 1.  agree prints `keys N disagree D` and at most 10 keys
with each replica's row; exit 0 when D is 0.  The other two print one
summary line and exit 1 on the first wrong reply.

A RESP2 client of its own (no redis-py): the tests run it with the
python3 on PATH, which need not have one.
"""
import os
import socket
import sys

BATCH = 500


class Node:
    """One connection to a node's client port; commands pipelined in batches."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.addr = addr
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            data = self.sock.recv(1 << 16)
            if not data:
                raise RuntimeError("%s closed the connection" % self.addr)
            self.buf += data
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _bytes(self, n):
        while len(self.buf) < n + 2:
            data = self.sock.recv(1 << 16)
            if not data:
                raise RuntimeError("%s closed the connection" % self.addr)
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n + 2:]
        return out

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._bytes(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError("%s: unexpected reply line %r" % (self.addr, line))

    def pipeline(self, cmds):
        """The replies of cmds (lists of str or bytes), in order."""
        out = []
        for i in range(0, len(cmds), BATCH):
            chunk = cmds[i:i + BATCH]
            data = b""
            for c in chunk:
                args = [a if isinstance(a, bytes) else str(a).encode() for a in c]
                data += b"*%d\r\n" % len(args)
                data += b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
            self.sock.sendall(data)
            out.extend(self.reply() for _ in chunk)
        return out

    def call(self, *args):
        r = self.pipeline([list(args)])[0]
        if isinstance(r, RuntimeError):
            raise RuntimeError("%s: %s: %s" % (self.addr, " ".join(map(str, args)), r))
        return r


def as_map(flat):
    """A RESP2 map (a flat array of names and values) as a dict of str names."""
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def spread(n, nodes):
    """The commands for key i go to node i mod len(nodes)."""
    per = [[] for _ in nodes]
    for i in range(n):
        per[i % len(nodes)].append(i)
    return per


def load(prefix, n, addrs):
    nodes = [Node(a) for a in addrs]
    for node, idx in zip(nodes, spread(n, nodes)):
        cmds = [["SET", "%s%d" % (prefix, i), "v%s%d" % (prefix, i)] for i in idx]
        for i, r in zip(idx, node.pipeline(cmds)):
            if r != "OK":
                sys.exit("SET %s%d through %s: %r" % (prefix, i, node.addr, r))
    print("loaded %d keys" % n)


def check(prefix, n, addrs):
    nodes = [Node(a) for a in addrs]
    for node, idx in zip(nodes, spread(n, nodes)):
        cmds = [["GET", "%s%d" % (prefix, i)] for i in idx]
        for i, r in zip(idx, node.pipeline(cmds)):
            want = ("v%s%d" % (prefix, i)).encode()
            if r != want:
                sys.exit("GET %s%d through %s: %r, want %r" % (prefix, i, node.addr, r, want))
    print("read %d keys back" % n)


def local_keys(node):
    """Every live key of the node's own store (SCAN walks only it)."""
    keys, cursor = set(), b"0"
    while True:
        cursor, batch = node.call("SCAN", cursor, "COUNT", "1000")
        keys.update(batch)
        if cursor == b"0":
            return keys


def node_id(node):
    info = node.call("INFO", "cluster").decode()
    return [l.split(":", 1)[1] for l in info.splitlines() if l.startswith("ringkv_node_id:")][0]


def holders(addrs):
    """{node id: its keys}, the first node's connection."""
    nodes = [Node(a) for a in addrs]
    return {node_id(n): local_keys(n) for n in nodes}, nodes[0]


def placement(rf, addrs):
    held, first = holders(addrs)
    prefix = os.environ.get("HANDOFF_PREFIX", "pre:").encode()
    every = sorted(set().union(*held.values()))
    print("distinct %d" % len(every))
    for ident in sorted(held):
        print("node %s %d %d" % (ident, len(held[ident]),
                                 sum(1 for k in held[ident] if k.startswith(prefix))))
    wrong = []
    for k, r in zip(every, first.pipeline([["RINGKV", "PREFLIST", k] for k in every])):
        if isinstance(r, RuntimeError):
            sys.exit("RINGKV PREFLIST %r: %s" % (k, r))
        want = sorted(as_map(n)["node"].decode() for n in as_map(r)["nodes"]
                      if as_map(n)["role"] in (b"primary", b"replica"))
        got = sorted(ident for ident in held if k in held[ident])
        if got != want or len(want) != rf:
            wrong.append("key %s held-by %s want %s" % (k.decode(errors="replace"),
                                                        ",".join(got), ",".join(want)))
    print("misplaced %d" % len(wrong))
    print("\n".join(wrong[:10]))
    return not wrong


def agree(prefix, addrs):
    held, first = holders(addrs)
    keys = sorted(k for k in set().union(*held.values()) if k.startswith(prefix.encode()))
    bad = []
    for k, rows in zip(keys, first.pipeline([["RINGKV", "REPLICAS", k] for k in keys])):
        if isinstance(rows, RuntimeError):
            sys.exit("RINGKV REPLICAS %r: %s" % (k, rows))
        rows = [as_map(r) for r in rows]
        seen = {(r["present"], r["tombstone"], r["vclock"], r["digest"]) for r in rows}
        if len(seen) != 1 or not all(r["answered"] == 1 for r in rows):
            bad.append("key %s: %s" % (k.decode(errors="replace"), "; ".join(
                "%s answered=%d present=%d vclock=%s digest=%s" %
                (r["node"].decode(), r["answered"], r["present"], r["vclock"].decode(),
                 r["digest"].decode()) for r in rows)))
    print("keys %d disagree %d" % (len(keys), len(bad)))
    print("\n".join(bad[:10]))
    return not bad


def main():
    what, args = sys.argv[1], sys.argv[2:]
    if what == "load":
        load(args[0], int(args[1]), args[2:])
    elif what == "check":
        check(args[0], int(args[1]), args[2:])
    elif what == "placement":
        sys.exit(0 if placement(int(args[0]), args[1:]) else 1)
    elif what == "agree":
        sys.exit(0 if agree(args[0], args[1:]) else 1)
    else:
        sys.exit("unknown question %s" % what)


if __name__ == "__main__":
    main()
