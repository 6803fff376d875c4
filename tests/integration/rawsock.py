#!/usr/bin/env python3
"""rawsock.py - send raw bytes to a TCP port and report what comes back.

    rawsock.py PORT BYTES [--wait S] [--half N --hold S]

BYTES is a Python bytes literal body, e.g. '*-10\\r\\n'.  Prints one line:
`reply=<repr of the bytes received> closed=<yes|no>`, after the server
closed the connection or WAIT seconds (default 2) passed without more data.
With --half N it instead opens N connections, sends BYTES on each without
finishing the command, holds them for S seconds, and prints how many the
server closed during that time.
"""
import argparse
import ast
import socket
import time


def parse_bytes(text):
    return ast.literal_eval("b'" + text.replace("'", "\\'") + "'")


def send_and_read(port, data, wait):
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    s.sendall(data)
    got = b""
    closed = False
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            chunk = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            closed = True
            break
        if not chunk:
            closed = True
            break
        got += chunk
    s.close()
    return got, closed


def half_open(port, data, n, hold):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(data)
        s.setblocking(False)
        socks.append(s)
    time.sleep(hold)
    closed = 0
    for s in socks:
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except ConnectionResetError:
            closed += 1
        s.close()
    return closed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("data")
    ap.add_argument("--wait", type=float, default=2.0)
    ap.add_argument("--half", type=int, default=0)
    ap.add_argument("--hold", type=float, default=1.0)
    a = ap.parse_args()
    data = parse_bytes(a.data)
    if a.half:
        print("closed=%d" % half_open(a.port, data, a.half, a.hold))
        return
    got, closed = send_and_read(a.port, data, a.wait)
    print("reply=%r closed=%s" % (got, "yes" if closed else "no"))


if __name__ == "__main__":
    main()
