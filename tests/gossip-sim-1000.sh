#!/bin/sh
# `ringkv gossip sim` at 1000 members: a new member's entry reaches every
# member within 2*log2(N) + 10 rounds, and a crashed member is held down by
# every live member within phi 8's 19 rounds plus 10 (the simulator checks
# both bounds and exits 3 past one; the JSON is checked against them here
# as well).
set -eu
: "${top_builddir:?}"
# The size is the point of this test, and under a sanitizer 1000 members'
# tables take minutes; the sanitizer builds run the same code through
# tests/gossip-sim.sh at small sizes.
case " ${RINGKV_SAN_CFLAGS:-} " in
*-fsanitize=*)
    echo "gossip-sim-1000: SKIP: a sanitizer build (gossip-sim.sh covers the code at small sizes)"
    exit 77
    ;;
esac
ringkv="$top_builddir/src/ringkv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gossip-sim-1000: $*"; exit 1; }

"$ringkv" gossip sim --nodes 1000 --seed 1000 --phases join,crash --json > "$tmp/j.json" 2> "$tmp/err" ||
    fail "the run failed: $(cat "$tmp/err")"
python3 - "$tmp/j.json" <<'PY' || fail "$(cat "$tmp/j.json")"
import json, math, sys
(r,) = json.load(open(sys.argv[1]))["runs"]
bound = 2 * math.log2(1000) + 10
assert r["nodes"] == 1000 and r["join_ok"] is True, r
assert abs(r["join_bound_rounds"] - bound) < 1e-6, r
assert 0 < r["join_rounds"] <= bound, r
crash_bound = math.ceil(8 / math.log10(math.e)) + 10
assert r["crash_ok"] is True and abs(r["crash_bound_rounds"] - crash_bound) < 1e-9, r
assert 18.4 <= r["crash_rounds"] <= crash_bound, r
# Memory: 1001 tables of 1001 entries with their rings, about 550 bytes a pair
# (membership.h, ring.c); the estimate the size was checked against is within 20% of the peak.
pairs = 1001 * 1001
assert r["maxrss_kb"] * 1024 <= 650 * pairs, r
assert 0.8 <= r["maxrss_kb"] / r["memory_estimate_kb"] <= 1.2, r
print("gossip-sim-1000: join seen by all 1000 members in %.2f rounds (bound %.1f), the crash held "
      "down by all %.2f rounds after it (bound %d), %.0f node-rounds/s, peak RSS %.0f MB "
      "(%.0f bytes a pair; estimated %.0f MB)"
      % (r["join_rounds"], bound, r["crash_rounds"], crash_bound, r["node_rounds_per_second"],
         r["maxrss_kb"] / 1024, r["maxrss_kb"] * 1024 / pairs, r["memory_estimate_kb"] / 1024))
PY
