#!/bin/sh
# A node of the previous release and a current one in one cluster.
#
# The previous release is real: commit OLD_COMMIT, the last tree of
# message set 1 (IDENT without `proto`, no peer requests).  Its ringkvd is
# built from that commit of this repository's history (git archive, then
# autotools) and cached in the build tree, so only the first run pays for
# the build (about a minute on two cores).  A source tree inside a git
# checkout without that commit (a shallow clone) fails with one line saying
# so; one outside any checkout (a release tarball) skips (77), as there is
# no history to build from.  `make distcheck` unpacks its tarball inside
# the checkout it runs from, and builds the commit from that checkout.
#
#   - the two nodes exchange gossip and converge: the same ring digest on
#     both, each sees the other up, `ringkv status` works on both;
#   - the current node sends the old one nothing it does not know:
#     `ringkv status --deep` through the current node reports the old one
#     as not supporting peer requests at once (not after request-timeout),
#     the refusal is counted (unsupported), and the old node never logs a
#     refused peer or an unknown message;
#   - `ringkv status --deep` through the old node gets its clear error for
#     an unknown verb, and the old node keeps running.
. "$top_srcdir/tests/integration/lib.sh"
OLD_COMMIT=8ec7f87
CACHE="$top_builddir/tests/compat/$OLD_COMMIT"
OLD_RINGKVD="$CACHE/build/src/ringkvd"
# the checkout holding the source tree (git archive refuses an untracked directory)
if ! repo=$(git -C "$top_srcdir" rev-parse --show-toplevel 2> /dev/null) && [ ! -x "$OLD_RINGKVD" ]; then
    echo "compat-v1: SKIP: $top_srcdir is not in a git checkout (a release tarball): the previous release is built from the history"
    exit 77
fi
it_setup
it_key
# the old build refuses rf 1 with its default r and w of 2: both nodes run rf 3, as it did
IT_RF=3
# Long enough that an answer "at once" cannot be a timeout in disguise.
TIMEOUT_MS=3000

# build_old: the previous release's ringkvd in $OLD_RINGKVD, built once.
build_old() {
    [ -x "$OLD_RINGKVD" ] && return 0
    git -C "$repo" cat-file -e "$OLD_COMMIT^{commit}" 2> /dev/null ||
        it_fail "commit $OLD_COMMIT (the previous release) is not in the git history of $top_srcdir: this test builds that release's ringkvd, so run it from a clone with its history"
    it_log "building the ringkvd of $OLD_COMMIT once, into $CACHE"
    rm -rf "$CACHE"
    mkdir -p "$CACHE/src" "$CACHE/build"
    git -C "$repo" archive "$OLD_COMMIT" | tar -x -C "$CACHE/src" ||
        it_fail "git archive $OLD_COMMIT failed"
    if ! (cd "$CACHE/src" && autoreconf -fi && cd "$CACHE/build" && ../src/configure -q &&
        make -s -j2 src/ringkvd) > "$CACHE/build.log" 2>&1; then
        tail -n 20 "$CACHE/build.log"
        rm -rf "$CACHE/build/src/ringkvd"
        it_fail "building the ringkvd of $OLD_COMMIT failed (log: $CACHE/build.log)"
    fi
}

build_old
it_setvar old PEER "$(it_free_port)"
it_setvar new PEER "$(it_free_port)"
CURRENT=$RINGKVD
RINGKVD=$OLD_RINGKVD
it_node old --rack r1
RINGKVD=$CURRENT
it_node new --rack r2 --request-timeout "${TIMEOUT_MS}ms" --seeds "127.0.0.1:$OLD_PEER"
it_wait_ping old
it_wait_ping new

# Gossip across the versions: converged, both up, the same digest on both.
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 2 "$OLD_CLIENT" "$NEW_CLIENT" ||
    it_fail "the old and the new node did not converge"
digest() { "$RINGKV" -H "127.0.0.1:$1" status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["digest"])'; }
old_digest=$(digest "$OLD_CLIENT") || it_fail "ringkv status against the old node failed"
new_digest=$(digest "$NEW_CLIENT") || it_fail "ringkv status against the new node failed"
it_expect_eq "digest of the new node" "$new_digest" "$old_digest"
"$RINGKV" -H "127.0.0.1:$OLD_CLIENT" status > "$IT_DIR/status-old.txt" ||
    it_fail "ringkv status on the old node exited $?"
"$RINGKV" -H "127.0.0.1:$NEW_CLIENT" status > "$IT_DIR/status-new.txt" ||
    it_fail "ringkv status on the new node exited $?"
it_log "converged across versions: digest $old_digest on both"

# Through the new node: the old one is reported as not supporting requests, at once.
start=$(date +%s%N)
"$RINGKV" -H "127.0.0.1:$NEW_CLIENT" status --deep --json > "$IT_DIR/deep.json"
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
[ "$rc" -eq 3 ] || it_fail "status --deep through the new node exited $rc, expected 3"
python3 - "$IT_DIR/deep.json" << 'EOF' || it_fail "status --deep rows: $(cat "$IT_DIR/deep.json")"
import json, sys
rows = {m["id"]: m for m in json.load(open(sys.argv[1]))["members"]}
assert rows["new"]["result"] == "ok", rows["new"]
old = rows["old"]
assert old["result"] == "unsupported" and "does not support" in old["error"], old
EOF
[ "$took" -lt "$TIMEOUT_MS" ] || it_fail "the unsupported row took $took ms: it waited for request-timeout"
it_cli new INFO requests | grep -q "^ringkv_requests_status:ok=0,refused=0,timeout=0,closed=0,unsupported=1," ||
    it_fail "the refusal is not counted: $(it_cli new INFO requests)"
it_log "status --deep through the new node: the old one unsupported, in $took ms"

# Through the old node: its own error for a verb it does not know.
out=$("$RINGKV" -H "127.0.0.1:$OLD_CLIENT" status --deep 2>&1) &&
    it_fail "status --deep through the old node succeeded: $out"
echo "$out" | grep -q "unknown RINGKV verb" || it_fail "status --deep through the old node: $out"

# The old node never saw a message it does not know, and both still gossip.
! grep -q "event=peer_rejected" "$IT_DIR/old.log" ||
    it_fail "the old node refused a peer: $(grep event=peer_rejected "$IT_DIR/old.log")"
it_alive old || it_fail "the old node exited"
it_ask converged 2 "$OLD_CLIENT" "$NEW_CLIENT" || it_fail "no longer converged"
it_pass
