"""holdconn.py - open many idle TCP connections and keep them, for tests of a
node's ports under connection floods.

    python3 holdconn.py PORT COUNT SECONDS [--from IP] [--host IP] [--ready FILE]

Opens up to COUNT connections to HOST:PORT (127.0.0.1), from source
address IP when given, one after another; a connection the node closed at
once, or a refused one, is counted as closed.  Writes "open=N" to FILE
(when given) once all attempts are done, then holds the open ones for
SECONDS (or until stdin closes when SECONDS is 0), then prints
"opened=N closed=M" and exits.  Every wait has a deadline.
"""
import argparse
import os
import select
import socket
import sys
import time


def peer_closed(s):
    """Whether the other end closed (or reset) a readable socket."""
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("seconds", type=float)
    ap.add_argument("--from", dest="src", default=None)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--ready", default=None)
    a = ap.parse_args()
    socks = []
    for _ in range(a.count):
        s = socket.socket()
        s.settimeout(2)
        try:
            if a.src:
                s.bind((a.src, 0))
            s.connect((a.host, a.port))
        except OSError:
            s.close()
            continue
        socks.append(s)
    # A connection the node refused is closed by it right away: give it a moment, then look.
    time.sleep(0.3)
    alive = []
    for s in socks:
        r, _, _ = select.select([s], [], [], 0)
        if r and peer_closed(s):
            s.close()
            continue
        alive.append(s)
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write("open=%d\n" % len(alive))
        os.rename(a.ready + ".tmp", a.ready)
    if a.seconds > 0:
        time.sleep(a.seconds)
    else:
        sys.stdin.read()
    print("opened=%d closed=%d" % (len(alive), a.count - len(alive)))
    for s in alive:
        s.close()


if __name__ == "__main__":
    main()
