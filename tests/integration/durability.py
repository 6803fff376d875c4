#!/usr/bin/env python3
"""durability.py - concurrent writers that record every acknowledged write,
and the check that each one survived a crash.

    durability.py write PORT DIR [--writers N] [--pipeline P] [--keys K] [--seconds S]
    durability.py kill PID DIR
    durability.py check PORT DIR [--min-acks N] [--window-ms W]
    durability.py check PORT DIR --synced SYNCS --interval-ms B [--slack-ms S]

write: N writer processes, each on its own connection with P SETs in
flight.  Writer w's write number i sets key "d:w:(i mod K)" to
"w:i:" + padding, so a value names its writer and write number and the
key it belongs to.  For every +OK the writer appends "i t" to DIR/acked.w
(t: CLOCK_MONOTONIC ns when the reply was read), flushed at once, so the
file holds exactly what was acknowledged when the node is killed; at its
end (connection closed, an error reply, or S seconds) it writes the
number of writes it sent to DIR/sent.w.

kill: CLOCK_MONOTONIC ns into DIR/killed, then SIGKILL to PID.

check: reads back every key the writers may have written (pipelined GETs)
and fails, naming the first few, when
  - a key with an acknowledged write is missing;
  - a key holds a value that is not one its writer sent to that key, or is
    older than the last write to it that was acknowledged (a later write
    of the same writer, acknowledged or not, is allowed: it may have
    committed before the kill);
  - DBSIZE is below the number of distinct acknowledged keys, or above the
    number of distinct keys sent (only the writers wrote).
It also fails when fewer than --min-acks writes were acknowledged in all
or none in the last --window-ms before the kill (the kill did not land in
the middle of the load), so it cannot pass on a run that proves nothing.
It prints one line of figures.

With --synced, the node restarted on the image a power loss would leave
(tests/integration/powercut.c: the data file as of its last fsync, whose
times SYNCS lists): only writes acknowledged before that last fsync began
must be there; the others are counted as lost.  It then also fails when
that fsync began more than B + its own duration + S ms before the kill
(`sync batch` with sync-interval B loses at most about its last interval).
"""
import argparse
import multiprocessing
import os
import signal
import socket
import sys
import time

PAD = b"x" * 40


def key(w, i, keys):
    return b"d:%d:%d" % (w, i % keys)


def value(w, i):
    return b"%d:%d:" % (w, i) + PAD


def set_request(w, i, keys):
    k, v = key(w, i, keys), value(w, i)
    return b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)


def writer(port, d, w, pipeline, keys, seconds):
    sent = acked = 0
    deadline = time.monotonic() + seconds
    out = open(os.path.join(d, "acked.%d" % w), "w")
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        pending = b""
        while time.monotonic() < deadline:
            batch = b""
            while sent - acked < pipeline:
                batch += set_request(w, sent, keys)
                sent += 1
            s.sendall(batch)
            chunk = s.recv(65536)
            if not chunk:
                break
            pending += chunk
            now = time.monotonic_ns()
            lines = pending.split(b"\r\n")
            pending = lines.pop()
            for line in lines:
                if line != b"+OK":
                    raise SystemExit("writer %d: reply %r" % (w, line))
                out.write("%d %d\n" % (acked, now))
                acked += 1
            out.flush()
    except (ConnectionError, socket.timeout, BrokenPipeError):
        pass
    finally:
        out.close()
        with open(os.path.join(d, "sent.%d" % w), "w") as f:
            f.write("%d\n" % sent)


def cmd_write(a):
    procs = [
        multiprocessing.Process(
            target=writer, args=(a.port, a.dir, w, a.pipeline, a.keys, a.seconds))
        for w in range(a.writers)
    ]
    with open(os.path.join(a.dir, "config"), "w") as f:
        f.write("%d %d\n" % (a.writers, a.keys))
    for p in procs:
        p.start()
    for p in procs:
        p.join()


def cmd_kill(a):
    with open(os.path.join(a.dir, "killed"), "w") as f:
        f.write("%d\n" % time.monotonic_ns())
    os.kill(a.pid, signal.SIGKILL)


def read_acked(d, w):
    """(write numbers acknowledged in order, their times)."""
    nums, times = [], []
    with open(os.path.join(d, "acked.%d" % w)) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 2:  # a line cut by the end of the file
                continue
            nums.append(int(parts[0]))
            times.append(int(parts[1]))
    return nums, times


def get_all(port, names):
    """Values of names (None when missing), with pipelined GETs."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    f = s.makefile("rb")
    got = []
    for start in range(0, len(names), 256):
        part = names[start:start + 256]
        s.sendall(b"".join(
            b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(k), k) for k in part))
        for _ in part:
            head = f.readline()
            if head.startswith(b"$-1") or head.startswith(b"_"):
                got.append(None)
            elif head.startswith(b"$"):
                n = int(head[1:])
                got.append(f.read(n + 2)[:n])
            else:
                raise SystemExit("GET: unexpected reply %r" % head)
    s.sendall(b"*1\r\n$6\r\nDBSIZE\r\n")
    head = f.readline()
    if not head.startswith(b":"):
        raise SystemExit("DBSIZE: unexpected reply %r" % head)
    return got, int(head[1:])


def check_writer(w, keys, nums, sent, values, problems):
    """Check writer w's keys; returns the number of distinct keys acknowledged."""
    last_acked = {}
    for i in nums:
        last_acked[i % keys] = i
    if not nums and sent == 0:
        return 0
    for k in range(min(keys, sent)):
        v = values[k]
        name = key(w, k, keys).decode()
        if v is None:
            if k in last_acked:
                problems.append("%s missing (write %d acknowledged)" % (name, last_acked[k]))
            continue
        parts = v.split(b":")
        if len(parts) != 3 or parts[0] != b"%d" % w or parts[2] != PAD:
            problems.append("%s holds %r, not a value of writer %d" % (name, v[:40], w))
            continue
        i = int(parts[1])
        if i % keys != k or i >= sent:
            problems.append("%s holds write %d, never sent to it" % (name, i))
        elif i < last_acked.get(k, -1):
            problems.append("%s holds write %d, older than acknowledged write %d" %
                            (name, i, last_acked[k]))
    return len(last_acked)


def cmd_check(a):
    with open(os.path.join(a.dir, "config")) as f:
        writers, keys = (int(x) for x in f.read().split())
    with open(os.path.join(a.dir, "killed")) as f:
        killed = int(f.read())
    problems = []
    total_acked = distinct_acked = distinct_sent = in_window = 0
    names, per_writer = [], []
    synced = synced_ms = None
    if a.synced:
        with open(a.synced) as f:
            at, done = (int(x) for x in f.read().split("\n")[-2].split())
        synced, synced_ms = at, (done - at) / 1e6
    lost = 0
    for w in range(writers):
        nums, times = read_acked(a.dir, w)
        if synced is not None:  # what had to survive: acknowledged before the last fsync
            before = sum(1 for t in times if t < synced)
            lost_candidates = (nums[before:], times[before:])
            nums, times = nums[:before], times[:before]
        with open(os.path.join(a.dir, "sent.%d" % w)) as f:
            sent = int(f.read())
        per_writer.append((nums, sent, lost_candidates[0] if synced is not None else []))
        total_acked += len(nums)
        in_window += sum(1 for t in times if killed - t <= a.window_ms * 1000000)
        distinct_sent += min(keys, sent)
        names += [key(w, k, keys) for k in range(min(keys, sent))]
        if synced is not None:
            lost += len(lost_candidates[0])
            total_acked += len(lost_candidates[0])
            in_window += sum(1 for t in lost_candidates[1] if killed - t <= a.window_ms * 1000000)
    values, dbsize = get_all(a.port, names)
    at = gone = 0
    for w, (nums, sent, later) in enumerate(per_writer):
        n = min(keys, sent)
        distinct_acked += check_writer(w, keys, nums, sent, values[at:at + n], problems)
        for i in later:  # acknowledged after the last fsync: is it in the image?
            v = values[at + i % keys]
            parts = v.split(b":") if v is not None else []
            gone += v is None or (len(parts) == 3 and parts[1].isdigit() and int(parts[1]) < i)
        at += n
    if dbsize < distinct_acked:
        problems.append("DBSIZE %d is below the %d distinct keys acknowledged" %
                        (dbsize, distinct_acked))
    if dbsize > distinct_sent:
        problems.append("DBSIZE %d is above the %d distinct keys sent" % (dbsize, distinct_sent))
    if synced is not None:
        gap_ms = (killed - synced) / 1e6
        print("last fsync %.0f ms before the kill (it took %.1f ms); %d acknowledged writes "
              "after it began, which a power loss may lose; %d of them are not in the image" %
              (gap_ms, synced_ms, lost, gone))
        if gap_ms > a.interval_ms + synced_ms + a.slack_ms:
            problems.append("the last fsync began %.0f ms before the kill: more than the "
                            "interval %d ms + %.1f ms + %d ms" %
                            (gap_ms, a.interval_ms, synced_ms, a.slack_ms))
    if total_acked < a.min_acks:
        problems.append("only %d writes acknowledged before the kill (at least %d needed)" %
                        (total_acked, a.min_acks))
    if in_window == 0:
        problems.append("no write acknowledged in the last %d ms before the kill" % a.window_ms)
    print("acked %d writes (%d distinct keys, %d in the last %d ms before the kill), "
          "keys sent %d, DBSIZE %d" %
          (total_acked, distinct_acked, in_window, a.window_ms, distinct_sent, dbsize))
    if problems:
        for p in problems[:10]:
            print("problem: " + p)
        print("%d problems" % len(problems))
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("port", type=int)
    w.add_argument("dir")
    w.add_argument("--writers", type=int, default=4)
    w.add_argument("--pipeline", type=int, default=16)
    w.add_argument("--keys", type=int, default=2000)
    w.add_argument("--seconds", type=float, default=30.0)
    k = sub.add_parser("kill")
    k.add_argument("pid", type=int)
    k.add_argument("dir")
    c = sub.add_parser("check")
    c.add_argument("port", type=int)
    c.add_argument("dir")
    c.add_argument("--min-acks", type=int, default=2000)
    c.add_argument("--window-ms", type=int, default=1000)
    c.add_argument("--synced")
    c.add_argument("--interval-ms", type=int, default=0)
    c.add_argument("--slack-ms", type=int, default=500)
    a = ap.parse_args()
    {"write": cmd_write, "kill": cmd_kill, "check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    main()
