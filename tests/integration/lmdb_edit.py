#!/usr/bin/python3
"""Edit a stopped node's stored records (python3-lmdb); the data table's keys
are an 8-byte ring position and the key (storage/store.c).

lmdb_edit.py DATADIR save KEY FILE      write KEY's stored record bytes to FILE
lmdb_edit.py DATADIR put KEY FILE       store FILE's bytes as KEY's record
lmdb_edit.py DATADIR forget KEY         delete KEY's record, if it has one
lmdb_edit.py DATADIR forget-hints -      delete every hint the node keeps
lmdb_edit.py DATADIR damage KEY HOW     damage KEY's record (storage/record.h's layout):
    trunc    its last byte cut off          extra    a byte past its end
    zero     a sibling count of 0           format   an unknown format byte
    badnode  a clock entry's id with a blank in it
    ctrzero  a clock entry's counter 0
"""
import sys

import lmdb

path, cmd, key = sys.argv[1], sys.argv[2], sys.argv[3].encode()
env = lmdb.open(path, subdir=True, max_dbs=8, map_size=1 << 34)
db = env.open_db(b"data", create=False)
if cmd == "forget-hints":
    hints = env.open_db(b"hints", create=False)
    with env.begin(write=True, db=hints) as txn:
        txn.drop(hints, delete=False)
    env.close()
    sys.exit(0)
if cmd == "forget":
    with env.begin(write=True, db=db) as txn:
        for k in [k for k, _ in txn.cursor() if k[8:] == key]:
            txn.delete(k)
    env.close()
    sys.exit(0)
with env.begin(write=True, db=db) as txn:
    found = [(k, v) for k, v in txn.cursor() if k[8:] == key]
    if len(found) != 1:
        raise SystemExit("key %r: %d records" % (key, len(found)))
    k, v = found[0]
    if cmd == "save":
        open(sys.argv[4], "wb").write(v)
    elif cmd == "put":
        txn.put(k, open(sys.argv[4], "rb").read())
    elif cmd == "damage":
        b = bytearray(v)
        how = sys.argv[4]
        clock = 4  # the format byte, a zero byte, the sibling count (2 bytes)
        if how == "trunc":
            b = b[:-1]
        elif how == "extra":
            b += b"\x00"
        elif how == "zero":
            b[2] = b[3] = 0
        elif how == "format":
            b[0] ^= 0xFF
        elif how == "badnode":  # the clock's entry count (2 bytes), the id's length, its first byte
            b[clock + 2 + 1] = 0x20
        elif how == "ctrzero":
            o = clock + 2 + 1 + b[clock + 2]
            b[o:o + 8] = bytes(8)
        else:
            raise SystemExit("unknown damage " + how)
        txn.put(k, bytes(b))
    else:
        raise SystemExit(__doc__)
env.close()
