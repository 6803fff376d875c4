#!/bin/sh
# The layer check (tests/check-layers.py) on this tree, and on a small
# synthetic tree with one upward include and one upward call, which it must
# refuse, naming the file and line and the object and symbol.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
checker="$top_srcdir/tests/check-layers.py"

cd "$top_builddir"
objs=$(find src proto storage -name '*.o' | sort)
python3 "$checker" --root "$top_srcdir" --objects $objs --graph

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringkv-layers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/base" "$tmp/src/node" "$tmp/src/cli"
printf 'int low(void);\n' > "$tmp/src/base/low.h"
printf '#include "low.h"\nint high(void);\nint low(void) { return high(); }\n' > "$tmp/src/base/low.c"
printf '#include "low.h"\nint high(void) { return low(); }\n' > "$tmp/src/node/high.c"
printf '#ifndef H\n#define H\nint high(void);\n#endif\n' > "$tmp/src/node/high.h"
printf '/* a tool */\n#include "high.h"\n' > "$tmp/src/cli/tool.c"
cc -c -o "$tmp/src/base/low.o" "$tmp/src/base/low.c" -I"$tmp/src/base"
cc -c -o "$tmp/src/node/high.o" "$tmp/src/node/high.c" -I"$tmp/src/base"
# The synthetic tree is clean but for the call; add the upward include.
printf '#include "high.h"\n' >> "$tmp/src/base/low.h"
out=$(python3 "$checker" --root "$tmp" --objects "$tmp/src/base/low.o" "$tmp/src/node/high.o") && {
    echo "check-layers accepted an upward include and call:"; echo "$out"; exit 1; }
echo "$out"
echo "$out" | grep -q '^src/base/low.h:2: #include "high.h": src/base (base) may not use src/node (node)$' ||
    { echo "no line for the upward include"; exit 1; }
echo "$out" | grep -q '^src/base/low.o: calls high, defined in src/node/high.o' ||
    { echo "no line for the upward call"; exit 1; }
echo "$out" | grep -q '^src/cli/tool.c:2: #include "high.h": src/cli (tools) may not use src/node (node)$' ||
    { echo "no line for the CLI using the node's internals"; exit 1; }
echo "check-layers: the synthetic upward include, call and CLI use are refused"
