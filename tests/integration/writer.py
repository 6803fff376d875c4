#!/usr/bin/env python3
"""writer.py - write keys one at a time and record each acknowledged one.

    writer.py PORT PREFIX ACKED-FILE [--max N] [--seconds S] [--pipeline K]

Sends `SET PREFIX:i v:i` for i = 0, 1, ... (K requests in flight), and for
every +OK reply appends i to ACKED-FILE, flushed at once, so a test can
kill the server at any moment and know exactly which writes were
acknowledged.  Stops at the first error reply, a closed connection, N
writes or S seconds.
"""
import argparse
import socket
import time


def request(prefix, i):
    k = b"%s:%d" % (prefix, i)
    v = b"v:%d" % i
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("prefix")
    ap.add_argument("acked")
    ap.add_argument("--max", type=int, default=1000000)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--pipeline", type=int, default=1)
    a = ap.parse_args()
    prefix = a.prefix.encode()
    s = socket.create_connection(("127.0.0.1", a.port), timeout=10)
    out = open(a.acked, "w")
    sent = acked = 0
    pending = b""
    deadline = time.monotonic() + a.seconds
    while acked < a.max and time.monotonic() < deadline:
        while sent < a.max and sent - acked < a.pipeline:
            s.sendall(request(prefix, sent))
            sent += 1
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        pending += chunk
        while b"\r\n" in pending:
            line, pending = pending.split(b"\r\n", 1)
            if line != b"+OK":
                out.close()
                return
            out.write("%d\n" % acked)
            out.flush()
            acked += 1
    out.close()


if __name__ == "__main__":
    main()
