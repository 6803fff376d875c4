#!/bin/sh
# The long lessons (tests/lessons.sh with RINGKV_LESSONS=long).
RINGKV_LESSONS=long exec sh "$top_srcdir/tests/lessons.sh"
