#!/usr/bin/env python3
"""durability.py - the kill -9 tests' two steps around `ringkv workload` and
`ringkv verify`: kill the node at a recorded time, then judge verify's
report against that time.

    durability.py kill PID DIR
    durability.py verdict REPORT DIR [--min-acks N] [--window-ms W]
                          [--synced SYNCS --interval-ms B --slack-ms S]

kill: CLOCK_MONOTONIC ns into DIR/killed, then SIGKILL to PID.  The
workload's history is on the same clock (in microseconds).

verdict: REPORT is `ringkv verify --json`'s output for the history of the
load the kill interrupted.  It fails, naming each problem, when
  - verify found a violation (an acknowledged write lost, or more: the
    rules are ringkv verify's);
  - fewer than --min-acks writes were acknowledged, or none in the last
    --window-ms before the kill (the kill did not land in the middle of the
    load), so it cannot pass on a run that proves nothing.
With --synced (the node restarted on the image a power loss would leave,
tests/integration/powercut.c: the data file as of its last fsync, whose
times SYNCS lists) verify must have run with --allow-loss-after-us at that
fsync's start, so the writes acknowledged after it are counted as
lost_allowed; it then also fails when that fsync began more than B + its
own duration + S ms before the kill (`sync batch` with sync-interval B
loses at most about its last interval).  It prints one line of figures.
"""
import argparse
import json
import os
import signal
import sys
import time


def cmd_kill(a):
    with open(os.path.join(a.dir, "killed"), "w") as f:
        f.write("%d\n" % time.monotonic_ns())
    os.kill(a.pid, signal.SIGKILL)


def last_sync(path):
    """(start, end) in ns of the last fsync listed in path."""
    with open(path) as f:
        at, done = (int(x) for x in f.read().split("\n")[-2].split())
    return at, done


def cmd_verdict(a):
    with open(a.report) as f:
        report = json.load(f)
    with open(os.path.join(a.dir, "killed")) as f:
        killed_us = int(f.read()) // 1000
    c = report["counts"]
    problems = ["%s: key %s, value %s, line %s (other line %s)" %
                (v["kind"], v["key"], v["value"], v["line"], v["other_line"])
                for v in report["violations"]]
    if c["writes_ok"] < a.min_acks:
        problems.append("only %d writes acknowledged before the kill (at least %d needed)" %
                        (c["writes_ok"], a.min_acks))
    gap_ms = (killed_us - c["last_ok_write_end_us"]) / 1000
    if gap_ms > a.window_ms:
        problems.append("no write acknowledged in the last %d ms before the kill (the last "
                        "%.0f ms before)" % (a.window_ms, gap_ms))
    line = ("acked %d writes (last %d ms before the kill), %d present, %d superseded, "
            "%d unknown, %d lost" % (c["writes_ok"], round(gap_ms), c["present"], c["superseded"],
                                     c["unknown"], c["lost"]))
    if a.synced:
        at, done = last_sync(a.synced)
        sync_gap_ms, took_ms = (killed_us - at // 1000) / 1000, (done - at) / 1e6
        line += ("; last fsync %.0f ms before the kill (it took %.1f ms); %d acknowledged "
                 "after it began are not in the image" %
                 (sync_gap_ms, took_ms, c["lost_allowed"]))
        if sync_gap_ms > a.interval_ms + took_ms + a.slack_ms:
            problems.append("the last fsync began %.0f ms before the kill: more than the "
                            "interval %d ms + %.1f ms + %d ms" %
                            (sync_gap_ms, a.interval_ms, took_ms, a.slack_ms))
    print(line)
    for p in problems[:10]:
        print("problem: " + p)
    if problems:
        print("%d problems" % len(problems))
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kill")
    k.add_argument("pid", type=int)
    k.add_argument("dir")
    v = sub.add_parser("verdict")
    v.add_argument("report")
    v.add_argument("dir")
    v.add_argument("--min-acks", type=int, default=2000)
    v.add_argument("--window-ms", type=int, default=1000)
    v.add_argument("--synced")
    v.add_argument("--interval-ms", type=int, default=0)
    v.add_argument("--slack-ms", type=int, default=500)
    a = ap.parse_args()
    {"kill": cmd_kill, "verdict": cmd_verdict}[a.cmd](a)


if __name__ == "__main__":
    main()
