#!/bin/sh
# `make fuzz`: run every fuzz target for FUZZ_SECONDS each.  Under libFuzzer
# new inputs go to fuzz-work/NAME in the build tree, never into the
# committed seed corpus; crashes are left there as crash-* files.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}" "${FUZZ_TARGETS:?}" "${FUZZ_SECONDS:?}"
# libFuzzer's inputs grow to the largest seed (at least 4 KiB) unless told:
# the driver's bound (64 KiB, tests/fuzz/driver.c), so the config target
# reaches lines at the 32 KiB limit and over it.
FUZZ_MAX_LEN=65536
for t in $FUZZ_TARGETS; do
    name=$(basename "$t" | sed 's/^fuzz_//')
    corpus="$top_srcdir/tests/fuzz/corpus/$name"
    work="$top_builddir/fuzz-work/$name"
    bin="$top_builddir/$t"
    mkdir -p "$work"
    echo "== fuzz $name for ${FUZZ_SECONDS}s"
    if "$bin" -help=1 2>&1 | grep -q libFuzzer; then
        (cd "$work" && "$bin" -max_len="$FUZZ_MAX_LEN" -max_total_time="$FUZZ_SECONDS" \
            -print_final_stats=1 "$work" "$corpus")
    else
        "$bin" -n 4000000000 -t "$FUZZ_SECONDS" "$corpus"
    fi
done
