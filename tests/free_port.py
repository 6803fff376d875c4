#!/usr/bin/env python3
"""Print a TCP port nobody has bound on ADDRESS (default 127.0.0.1).

The port is taken from below the kernel's ephemeral range
(net.ipv4.ip_local_port_range), so no outgoing connection can be given it
while the node that owns it is stopped: a node restarted by a test would
otherwise find its port taken by some socket's local end and fail to listen.
"""
import random
import socket
import sys

addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
family = socket.AF_INET6 if ":" in addr else socket.AF_INET
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    ephemeral_low = 32768
low, high = 10000, min(ephemeral_low, 65536)
rng = random.SystemRandom()
for _ in range(500 if high - low >= 1000 else 0):
    port = rng.randrange(low, high)
    s = socket.socket(family)
    try:
        s.bind((addr, port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    sys.exit(0)
# No room below the ephemeral range: let the kernel choose.
s = socket.socket(family)
s.bind((addr, 0))
print(s.getsockname()[1])
s.close()
