#!/usr/bin/env python3
"""gossip_watch.py - watch every member's view of a cluster, for bench_gossip.sh.

    gossip_watch.py ports BASE N PORT1 PORT2
    gossip_watch.py converge SYSTEM NODES --t0 T [--timeout S] [--log FILE]
    gossip_watch.py detect SYSTEM NODES --victim ID --kill PID [--settle S]
                    [--timeout S] [--log FILE]

SYSTEM is `ringkv` or `serf`; NODES is a space-separated list of ID=HOST:PORT,
the client port of each ringkvd or the RPC address of each serf agent.

`ports` prints, for the addresses 127.0.0.(BASE+i), i = 1..N, one line
`ADDR P1 P2`: PORT1 and PORT2 when they are free on that address (for TCP,
and for UDP as well on the first, which serf's gossip uses), else other free
ones.

`converge` polls every node until each one lists exactly the NODES, all of
them alive; `detect` watches for SETTLE seconds (default 5), sends SIGKILL
to PID (the process of member VICTIM) and polls until every other node lists
VICTIM as down (ringkv) or failed (serf).  Both print one line,
    converge SECONDS|timeout fp COUNT polls ROUNDS
    detect SECONDS|timeout fp COUNT polls ROUNDS [info ...]
where SECONDS runs from T (wall clock, `date +%s.%N` taken just before the
last node was started) or from the kill to the reply in which the last
node's view first met the condition, and COUNT is the number of times a
node's view of a member other than VICTIM turned suspect, down or failed.
For ringkv, info gives the range over the observers of the victim's
mean_interval_ms and phi in their replies that first said down.  With --log, each of those and the time each node met the condition are
appended to FILE, one line each.

Polling: one round every 50 ms, every node in turn over a connection kept
open (RESP `RINGKV MEMBERS` for ringkvd; serf's msgpack RPC, the `members`
command that `serf members` sends), each request under a 0.5 s timeout; a
node that does not answer counts as not there yet, and is dialled again
next round.  One poller for both systems, so both pay the same for being
watched.
"""
import argparse
import os
import signal
import socket
import struct
import sys
import time

ROUND_S = 0.05
REQUEST_TIMEOUT_S = 0.5

# --- msgpack, the subset serf's RPC uses ----------------------------------


def mp_pack(obj):
    """Encode a dict of str keys to str or non-negative int values."""
    out = bytearray()

    def put(v):
        if isinstance(v, dict):
            out.append(0x80 | len(v))
            for k, x in v.items():
                put(k)
                put(x)
        elif isinstance(v, str):
            b = v.encode()
            out.append(0xA0 | len(b))
            out.extend(b)
        elif v < 0x80:
            out.append(v)
        else:
            out.append(0xCF)
            out.extend(struct.pack(">Q", v))

    assert len(obj) < 16
    put(obj)
    return bytes(out)


def read_exact(f, n):
    b = f.read(n)
    if len(b) != n:
        raise EOFError("connection closed")
    return b


# type byte -> (struct format of the fixed-size value or length, kind)
MP_FIXED = {
    0xCC: (">B", "num"), 0xCD: (">H", "num"), 0xCE: (">I", "num"), 0xCF: (">Q", "num"),
    0xD0: (">b", "num"), 0xD1: (">h", "num"), 0xD2: (">i", "num"), 0xD3: (">q", "num"),
    0xCA: (">f", "num"), 0xCB: (">d", "num"),
    0xC4: (">B", "bin"), 0xC5: (">H", "bin"), 0xC6: (">I", "bin"),
    0xD9: (">B", "str"), 0xDA: (">H", "str"), 0xDB: (">I", "str"),
    0xDC: (">H", "array"), 0xDD: (">I", "array"),
    0xDE: (">H", "map"), 0xDF: (">I", "map"),
    0xC7: (">B", "ext"), 0xC8: (">H", "ext"), 0xC9: (">I", "ext"),
}
MP_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}


def mp_unpack(f):
    b = read_exact(f, 1)[0]
    if b <= 0x7F:
        return b
    if b >= 0xE0:
        return b - 0x100
    if b <= 0x8F:
        return mp_compound(f, "map", b & 0x0F)
    if b <= 0x9F:
        return mp_compound(f, "array", b & 0x0F)
    if b <= 0xBF:
        return read_exact(f, b & 0x1F).decode(errors="replace")
    if b in (0xC0, 0xC2, 0xC3):
        return {0xC0: None, 0xC2: False, 0xC3: True}[b]
    if b in MP_FIXEXT:
        return read_exact(f, 1 + MP_FIXEXT[b])
    if b not in MP_FIXED:
        raise ValueError("msgpack type byte 0x%02x" % b)
    fmt, kind = MP_FIXED[b]
    v = struct.unpack(fmt, read_exact(f, struct.calcsize(fmt)))[0]
    if kind == "num":
        return v
    if kind in ("bin", "str"):
        raw = read_exact(f, v)
        return raw.decode(errors="replace") if kind == "str" else raw
    if kind == "ext":
        return read_exact(f, 1 + v)
    return mp_compound(f, kind, v)


def mp_compound(f, kind, n):
    if kind == "array":
        return [mp_unpack(f) for _ in range(n)]
    return {mp_unpack(f): mp_unpack(f) for _ in range(n)}


# --- RESP -----------------------------------------------------------------


def resp_read(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise EOFError("connection closed")
    t, rest = line[:1], line[1:-2]
    if t in (b"+", b",", b"#"):
        return rest.decode()
    if t == b"-":
        raise RuntimeError(rest.decode())
    if t == b":":
        return int(rest)
    if t == b"_":
        return None
    if t == b"$":
        n = int(rest)
        return None if n < 0 else read_exact(f, n + 2)[:-2].decode(errors="replace")
    if t in (b"*", b"%"):
        n = int(rest) * (2 if t == b"%" else 1)
        items = [resp_read(f) for _ in range(max(n, 0))]
        return dict(zip(items[0::2], items[1::2])) if t == b"%" else items
    raise ValueError("RESP type %r" % t)


def as_map(entry):
    """A RESP3 map arrives as a dict, a RESP2 one as a flat key, value list."""
    return entry if isinstance(entry, dict) else dict(zip(entry[0::2], entry[1::2]))


# --- one node's view ------------------------------------------------------


class Node:
    """A kept-open connection to one node; view() is {member id: state}."""

    def __init__(self, system, ident, addr):
        self.system, self.id = system, ident
        host, port = addr.rsplit(":", 1)
        self.addr = (host, int(port))
        self.sock = self.f = None
        self.seq = 0
        self.rows = {}  # member id -> the whole entry, from the last reply

    def close(self):
        if self.sock is not None:
            self.sock.close()
        self.sock = self.f = None

    def dial(self):
        self.sock = socket.create_connection(self.addr, timeout=REQUEST_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.sock.makefile("rb")
        if self.system == "serf":
            self.serf_call("handshake", {"Version": 1}, body=False)

    def serf_call(self, command, body_out=None, body=True):
        self.seq += 1
        req = mp_pack({"Command": command, "Seq": self.seq})
        if body_out is not None:
            req += mp_pack(body_out)
        self.sock.sendall(req)
        header = mp_unpack(self.f)
        if header.get("Error"):
            raise RuntimeError("serf %s: %s" % (command, header["Error"]))
        return mp_unpack(self.f) if body else None

    def fetch(self):
        if self.system == "serf":
            return {m["Name"]: m for m in self.serf_call("members")["Members"]}
        self.sock.sendall(b"*2\r\n$6\r\nRINGKV\r\n$7\r\nMEMBERS\r\n")
        rows = [as_map(e) for e in resp_read(self.f)]
        return {r["id"]: r for r in rows}

    def view(self):
        """The member states, or None when the node did not answer in time."""
        try:
            if self.sock is None:
                self.dial()
            self.rows = self.fetch()
        except (OSError, EOFError, ValueError, RuntimeError):
            self.close()
            return None
        key = "Status" if self.system == "serf" else "state"
        return {m: r[key] for m, r in self.rows.items()}


def healthy(system, state):
    return state == "alive" if system == "serf" else state in ("alive", "self")


def is_down(system, state):
    return state == ("failed" if system == "serf" else "down")


# --- the watch loop -------------------------------------------------------


class Watch:
    """Polls every node each round; counts false positives as it goes."""

    def __init__(self, args):
        self.system = args.system
        self.nodes = []
        for spec in args.nodes.split():
            ident, addr = spec.split("=", 1)
            self.nodes.append(Node(args.system, ident, addr))
        self.ids = {n.id for n in self.nodes}
        self.victim = getattr(args, "victim", None)
        self.bad = set()  # (observer, member) pairs seen unhealthy
        self.fp = 0
        self.rounds = 0
        self.t0 = 0.0  # the time figures are measured from
        self.met_rows = {}  # node id -> its member rows in the reply that met the condition
        self.log = open(args.log, "a") if args.log else None

    def note(self, text):
        if self.log is not None:
            self.log.write("%.3f %s\n" % (time.time(), text))
            self.log.flush()

    def check_false_positives(self, node, view):
        for member, state in view.items():
            pair = (node.id, member)
            if member == self.victim or member == node.id or healthy(self.system, state):
                self.bad.discard(pair)
                continue
            if pair not in self.bad:
                self.bad.add(pair)
                self.fp += 1
                self.note("false_positive observer=%s member=%s state=%s row=%s"
                          % (node.id, member, state, node.rows.get(member)))

    def poll(self, nodes, done, deadline):
        """Rounds until done(node, view) held once for each of nodes; {id: time}."""
        met = {}
        while len(met) < len(nodes) and time.time() < deadline:
            start = time.time()
            self.rounds += 1
            for node in self.nodes:
                view = node.view()
                if view is None:
                    continue
                now = time.time()
                self.check_false_positives(node, view)
                if node in nodes and node.id not in met and done(node, view):
                    met[node.id] = now
                    self.met_rows[node.id] = node.rows
                    self.note("met observer=%s after %.3f" % (node.id, now - self.t0))
            time.sleep(max(0.0, ROUND_S - (time.time() - start)))
        return met if len(met) == len(nodes) else None

    def settle(self, seconds):
        end = time.time() + seconds
        self.poll(self.nodes, lambda node, view: False, end)


def fmt_result(name, t, watch, extra=""):
    secs = "timeout" if t is None else "%.3f" % t
    return "%s %s fp %d polls %d%s" % (name, secs, watch.fp, watch.rounds, extra)


def cmd_converge(args):
    w = Watch(args)

    def complete(node, view):
        return set(view) == w.ids and all(healthy(w.system, s) for s in view.values())

    w.t0 = args.t0
    met = w.poll(w.nodes, complete, args.t0 + args.timeout)
    t = None if met is None else max(met.values()) - args.t0
    print(fmt_result("converge", t, w))


def victim_info(w, observers):
    """For ringkv: the detectors' view of the victim in the replies that first said down."""
    if w.system != "ringkv":
        return ""
    rows = [w.met_rows[n.id][w.victim] for n in observers if n.id in w.met_rows]
    means = sorted(float(r["mean_interval_ms"]) for r in rows)
    phis = sorted(float(r["phi"]) for r in rows)
    if not means:
        return ""
    return " info mean_interval_ms %.1f-%.1f phi_seen_down %.2f-%.2f" % (
        means[0], means[-1], phis[0], phis[-1])


def cmd_detect(args):
    w = Watch(args)
    victim = [n for n in w.nodes if n.id == args.victim]
    assert victim, "victim %s is not among the nodes" % args.victim
    observers = [n for n in w.nodes if n.id != args.victim]
    w.settle(args.settle)
    victim[0].close()
    os.kill(args.kill, signal.SIGKILL)
    t0 = w.t0 = time.time()
    w.note("killed %s pid %d" % (args.victim, args.kill))
    w.nodes = observers
    met = w.poll(observers, lambda node, view: is_down(w.system, view.get(args.victim)),
                 t0 + args.timeout)
    t = None if met is None else max(met.values()) - t0
    print(fmt_result("detect", t, w, victim_info(w, observers)))


def port_free(addr, port, udp):
    kinds = [socket.SOCK_STREAM] + ([socket.SOCK_DGRAM] if udp else [])
    socks = []
    try:
        for kind in kinds:
            s = socket.socket(socket.AF_INET, kind)
            socks.append(s)
            if kind == socket.SOCK_STREAM:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((addr, port))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()


def pick_port(addr, want, udp, taken):
    if want not in taken and port_free(addr, want, udp):
        return want
    for _ in range(100):
        s = socket.socket()
        s.bind((addr, 0))
        port = s.getsockname()[1]
        s.close()
        if port not in taken and port_free(addr, port, udp):
            return port
    sys.exit("gossip_watch: no free port on %s" % addr)


def cmd_ports(args):
    for i in range(1, args.n + 1):
        addr = "127.0.0.%d" % (args.base + i)
        p1 = pick_port(addr, args.port1, True, set())
        p2 = pick_port(addr, args.port2, False, {p1})
        print(addr, p1, p2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ports")
    p.add_argument("base", type=int)
    p.add_argument("n", type=int)
    p.add_argument("port1", type=int)
    p.add_argument("port2", type=int)
    for name in ("converge", "detect"):
        p = sub.add_parser(name)
        p.add_argument("system", choices=("ringkv", "serf"))
        p.add_argument("nodes")
        p.add_argument("--timeout", type=float, default=60.0)
        p.add_argument("--log")
        if name == "converge":
            p.add_argument("--t0", type=float, required=True)
        else:
            p.add_argument("--victim", required=True)
            p.add_argument("--kill", type=int, required=True)
            p.add_argument("--settle", type=float, default=5.0)
    args = ap.parse_args()
    {"ports": cmd_ports, "converge": cmd_converge, "detect": cmd_detect}[args.cmd](args)


if __name__ == "__main__":
    main()
