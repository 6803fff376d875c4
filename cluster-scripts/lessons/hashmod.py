#!/usr/bin/env python3
"""hashmod.py KEYS N M [PREFIX] - of the keys PREFIX0 .. PREFIX(KEYS-1),
how many change node when they are placed by hash(key) % N and then by
hash(key) % M (the hash: BLAKE2b-64 of the key, as a stand-in for any
uniform hash).  Prints one line; lesson 01 uses it."""
import hashlib
import sys

keys, n, m = (int(a) for a in sys.argv[1:4])
prefix = sys.argv[4] if len(sys.argv) > 4 else "lesson:"
moved = 0
for i in range(keys):
    h = int.from_bytes(hashlib.blake2b(b"%s%d" % (prefix.encode(), i), digest_size=8).digest(), "big")
    moved += h % n != h % m
print("keys whose node changes from hash %% %d to hash %% %d: %d of %d" % (n, m, moved, keys))
