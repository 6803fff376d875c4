#!/bin/sh
# Run every fuzz target briefly: its seed corpus, then a bounded number of
# mutated inputs (driver build) or of libFuzzer runs (--enable-fuzzing).
# Part of `make check`; `make fuzz` runs the same targets for longer.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}" "${FUZZ_TARGETS:?}"
runs=${FUZZ_SMOKE_RUNS:-20000}
# libFuzzer's inputs grow to the largest seed (at least 4 KiB) unless told:
# the driver's bound (64 KiB, tests/fuzz/driver.c), so the config target
# reaches lines at the 32 KiB limit and over it.
FUZZ_MAX_LEN=65536
for t in $FUZZ_TARGETS; do
    name=$(basename "$t" | sed 's/^fuzz_//')
    corpus="$top_srcdir/tests/fuzz/corpus/$name"
    bin="$top_builddir/$t"
    if "$bin" -help=1 2>&1 | grep -q libFuzzer; then
        "$bin" -max_len="$FUZZ_MAX_LEN" -runs="$runs" -max_total_time=60 "$corpus"
    else
        "$bin" -n "$runs" -t 60 -s "${FUZZ_SEED:-12345}" "$corpus"
    fi
    echo "fuzz smoke: $name ok"
done
