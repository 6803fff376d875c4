#!/bin/sh
# gen.sh TEMPLATE VERSION OUTPUT PROGRAM [ARGS...]: write OUTPUT, the man page
# TEMPLATE with its @GENERATED@ line replaced by what PROGRAM ARGS prints
# (the hidden --help-man options of ringkvd and ringkv, from the settings
# and verb tables) and @VERSION@ by VERSION.  OUTPUT appears whole or not
# at all, and a failing PROGRAM fails the build.
set -eu
template=$1
version=$2
output=$3
shift 3
"$@" > "$output.part"
awk -v part="$output.part" -v version="$version" '
    $0 == "@GENERATED@" { while ((getline line < part) > 0) print line; next }
    { gsub(/@VERSION@/, version); print }
' "$template" > "$output.tmp"
rm -f "$output.part"
mv "$output.tmp" "$output"
