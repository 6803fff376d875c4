#!/bin/sh
# `ringkv keygen`: without FILE it prints 64 hex digits and a newline; with
# FILE it writes them with mode 0600, never over an existing file or
# symlink, and says why it cannot write (one line, exit 1).  A key it
# writes is one a node loads: peer-check gets past loading it and fails
# only at connecting.  Usage errors exit 2.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
ringkv="$top_builddir/src/ringkv"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fail() { echo "cli-keygen: $*"; exit 1; }

# Run ringkv with its arguments; expect exit code $1, keep stdout and stderr.
expect() {
    code=$1; shift
    set +e
    timeout 30 "$ringkv" "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    set -e
    [ "$rc" -eq "$code" ] || fail "'ringkv $*' exited $rc, expected $code: $(cat "$tmp/err")"
}

# One line on stderr, starting "ringkv: " and holding the phrase $1.
one_error_line() {
    [ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "expected one error line, got: $(cat "$tmp/err")"
    grep -q "^ringkv: .*$1" "$tmp/err" || fail "expected '$1' in: $(cat "$tmp/err")"
}

# To stdout: exactly 64 lowercase hex digits and a newline, fresh each time.
expect 0 keygen
[ "$(wc -c < "$tmp/out")" -eq 65 ] || fail "stdout key is not 65 bytes: $(cat "$tmp/out")"
grep -Eqx '[0-9a-f]{64}' "$tmp/out" || fail "stdout key is not 64 hex digits: $(cat "$tmp/out")"
[ ! -s "$tmp/err" ] || fail "keygen wrote to stderr: $(cat "$tmp/err")"
first=$(cat "$tmp/out")
expect 0 keygen
[ "$(cat "$tmp/out")" != "$first" ] || fail "two keygen runs printed the same key"

expect 0 keygen --json
python3 -c 'import json,re,sys; k=json.load(open(sys.argv[1]))["key"]; assert re.fullmatch("[0-9a-f]{64}", k), k' \
    "$tmp/out" || fail "keygen --json: $(cat "$tmp/out")"

# To FILE: mode 600, 64 hex digits and a newline, the cluster id on stdout.
expect 0 keygen "$tmp/key"
[ "$(stat -c %a "$tmp/key")" = 600 ] || fail "key file mode is $(stat -c %a "$tmp/key")"
[ "$(wc -c < "$tmp/key")" -eq 65 ] || fail "key file is not 65 bytes"
grep -Eqx '[0-9a-f]{64}' "$tmp/key" || fail "key file is not 64 hex digits"
grep -Eq "$tmp/key .*cluster id [0-9a-f]{32}" "$tmp/out" || fail "no cluster id in: $(cat "$tmp/out")"
# even under a umask that would let others read it
(umask 000 && "$ringkv" keygen "$tmp/key-umask" > /dev/null) || fail "keygen under umask 000"
[ "$(stat -c %a "$tmp/key-umask")" = 600 ] || fail "umask 000 gave mode $(stat -c %a "$tmp/key-umask")"

expect 0 keygen --json "$tmp/key-json"
python3 -c 'import json,re,sys; j=json.load(open(sys.argv[1])); assert j["file"] == sys.argv[2], j; assert re.fullmatch("[0-9a-f]{32}", j["cluster_id"]), j' \
    "$tmp/out" "$tmp/key-json" || fail "keygen --json FILE: $(cat "$tmp/out")"

# Never over an existing file, nor through a symlink, dangling or not.
cp "$tmp/key" "$tmp/key.before"
expect 1 keygen "$tmp/key"
one_error_line "already exists: refusing to overwrite"
cmp -s "$tmp/key" "$tmp/key.before" || fail "an existing key file was changed"
[ ! -s "$tmp/out" ] || fail "a refused keygen printed: $(cat "$tmp/out")"
ln -s "$tmp/target" "$tmp/link"
expect 1 keygen "$tmp/link"
one_error_line "already exists"
[ ! -e "$tmp/target" ] || fail "keygen wrote through a dangling symlink"

# Where it cannot write: a missing directory, and (unless root, who may
# write anywhere) a directory without write permission.
expect 1 keygen "$tmp/missing/key"
one_error_line "cannot create cluster key file $tmp/missing/key: No such file or directory"
if [ "$(id -u)" -ne 0 ]; then
    mkdir "$tmp/ro"
    chmod 500 "$tmp/ro"
    expect 1 keygen "$tmp/ro/key"
    one_error_line "cannot create cluster key file $tmp/ro/key: Permission denied"
    [ ! -e "$tmp/ro/key" ] || fail "a key file appeared in a read-only directory"
fi

# The file is what a node loads: peer-check loads it, then fails only to
# connect (port 1 on loopback refuses).  A damaged file fails at loading.
expect 1 peer-check --cluster-key "$tmp/key" -t 2 127.0.0.1:1
one_error_line "cannot connect to 127.0.0.1:1"
head -c 64 "$tmp/key.before" > "$tmp/short"
chmod 600 "$tmp/short"
expect 1 peer-check --cluster-key "$tmp/short" -t 2 127.0.0.1:1
one_error_line "must hold 64 hex digits and a newline"

# Usage errors: exit 2.
expect 2 keygen "$tmp/a" "$tmp/b"
expect 2 keygen --bogus
[ ! -e "$tmp/a" ] || fail "a usage error still wrote a key"

echo "cli-keygen: ok"
