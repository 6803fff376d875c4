"""relay.py - a keyless TCP relay that sends every connection it receives
back to one port, as an attacker without the cluster key could.

    python3 relay.py LISTEN_PORT TARGET_PORT COUNT_FILE SECONDS

Listens on 127.0.0.1:LISTEN_PORT; for each connection it accepts, it
connects to 127.0.0.1:TARGET_PORT and copies bytes both ways until either
side closes.  After each relayed connection it writes how many it has
relayed so far to COUNT_FILE.  Exits after SECONDS.
"""
import os
import socket
import sys
import threading
import time


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    count_file, seconds = sys.argv[3], float(sys.argv[4])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen_port))
    ls.listen(64)
    ls.settimeout(0.2)
    relayed = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            a, _ = ls.accept()
        except socket.timeout:
            continue
        try:
            b = socket.create_connection(("127.0.0.1", target_port), timeout=2)
        except OSError:
            a.close()
            continue
        a.settimeout(None)
        b.settimeout(None)
        for src, dst in ((a, b), (b, a)):
            threading.Thread(target=pipe, args=(src, dst), daemon=True).start()
        relayed += 1
        with open(count_file + ".tmp", "w") as f:
            f.write("%d\n" % relayed)
        os.rename(count_file + ".tmp", count_file)


if __name__ == "__main__":
    main()
