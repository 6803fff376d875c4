#!/usr/bin/env python3
"""cluster.py - questions about a running cluster, asked of its nodes.

    cluster.py RINGKV converged N PORT...        every node: converged, N members (not
                                                 counting left or removed ones), all up
    cluster.py RINGKV status WORD ID PORT...     every node lists member ID with status WORD
    cluster.py RINGKV state STATE ID PORT...     every node sees member ID in STATE
    cluster.py RINGKV wrongly-down EXCEPT PORT...  print members seen suspect or down
                                                 (other than EXCEPT) on any node
    cluster.py RINGKV lacks ID PORT...           no node lists member ID
    cluster.py RINGKV tokens N ID PORT...        every node lists member ID with N tokens

RINGKV is the ringkv CLI; each PORT is a node's client port on 127.0.0.1, or
ADDRESS:PORT.
Exit status 0 when the answer is yes (for wrongly-down: when none are).
"""
import json
import subprocess
import sys


def ask(ringkv, port, verb):
    host = port if ":" in port else "127.0.0.1:%s" % port
    out = subprocess.run([ringkv, "-H", host, "-t", "2", verb, "--json"],
                         capture_output=True, text=True, timeout=10)
    if out.returncode not in (0, 3):
        raise RuntimeError("node %s: %s" % (port, out.stderr.strip()))
    return json.loads(out.stdout)


def converged(ringkv, n, ports):
    for p in ports:
        s = ask(ringkv, p, "status")
        current = [m for m in s["members"] if m["status"] not in ("left", "removed")]
        if not s["converged"] or len(current) != n or not all(m["up"] for m in current):
            return False
    return True


def status(ringkv, word, ident, ports):
    for p in ports:
        members = ask(ringkv, p, "status")["members"]
        if not any(m["id"] == ident and m["status"] == word for m in members):
            return False
    return True


def state(ringkv, want, ident, ports):
    for p in ports:
        members = ask(ringkv, p, "members")["members"]
        if not any(m["id"] == ident and m["state"] == want for m in members):
            return False
    return True


def wrongly_down(ringkv, except_id, ports):
    bad = []
    for p in ports:
        for m in ask(ringkv, p, "members")["members"]:
            if m["id"] != except_id and m["state"] in ("suspect", "down"):
                bad.append("%s sees %s %s" % (p, m["id"], m["state"]))
    print("\n".join(bad))
    return not bad


def lacks(ringkv, ident, ports):
    return all(not any(m["id"] == ident for m in ask(ringkv, p, "members")["members"])
               for p in ports)


def tokens(ringkv, n, ident, ports):
    return all(any(m["id"] == ident and m["tokens"] == n
                   for m in ask(ringkv, p, "status")["members"]) for p in ports)


def main():
    ringkv, what = sys.argv[1], sys.argv[2]
    args = sys.argv[3:]
    try:
        if what == "converged":
            ok = converged(ringkv, int(args[0]), args[1:])
        elif what == "status":
            ok = status(ringkv, args[0], args[1], args[2:])
        elif what == "state":
            ok = state(ringkv, args[0], args[1], args[2:])
        elif what == "wrongly-down":
            ok = wrongly_down(ringkv, args[0], args[1:])
        elif what == "lacks":
            ok = lacks(ringkv, args[0], args[1:])
        elif what == "tokens":
            ok = tokens(ringkv, int(args[0]), args[1], args[2:])
        else:
            sys.exit("unknown question %s" % what)
    except (RuntimeError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
        print(e, file=sys.stderr)
        ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
