#!/bin/sh
# The lessons of cluster-scripts/lessons/ against the built binaries, and
# their runner (cluster-scripts/lesson):
#   - `lesson list` lists every lesson file, with a name, a length and a
#     title; `lesson run` of an unknown lesson and a bad --pace exit 2;
#   - each lesson of the set asked for passes (RINGKV_LESSONS: quick, the
#     default, as `make check` runs them; long; all), run by `lesson all`
#     with no pause;
#   - with LESSON_WRONG (the default for the quick set), lesson 04 (racks,
#     whose claim is that writes at w 2 survive a whole rack stopped) run
#     with --w 3 in RINGKV_LESSON_SETTINGS must exit non-zero saying its
#     claim fails: a lesson whose claim is false does not pass;
#   - Ctrl-C (SIGINT to the process group) during lesson 01 of `lesson all`,
#     and again while it cleans up, leaves no node running (judged by the
#     PIDs its PID files named) and no folder behind, and stops `lesson all`;
#   - no lesson leaves a node running or a folder behind when it passes.
# Lessons run in a temporary folder (RINGKV_LESSON_DIR), on their own
# addresses (127.61.NN.x); the wrong-setting and Ctrl-C runs use a random
# 127.x.y of their own, so they never meet a run of the same lesson.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
lesson="$top_srcdir/cluster-scripts/lesson"
set_=${RINGKV_LESSONS:-quick}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringkv-lessons.XXXXXX")
RINGKV_BIN="$top_builddir/src"
RINGKV_LESSON_DIR="$tmp"
export RINGKV_BIN RINGKV_LESSON_DIR
seed=${RINGKV_TEST_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
passed=0

log() { echo "lessons: $*"; }
fail() {
    log "FAIL: $*"
    exit 1
}
cleanup() {
    status=$?
    set +e
    # a lesson's own cleanup stops its nodes; a node that outlived it is killed here by its PID
    for f in "$tmp"/*/tb/n*/ringkvd.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f")
        if grep -q "ringkvd" "/proc/$pid/cmdline" 2> /dev/null; then kill -9 "$pid"; fi
    done
    grep -o " $tmp/[^ ]*" /proc/mounts 2> /dev/null | while read -r m; do umount "$m"; done
    if [ "$passed" -eq 1 ]; then rm -rf "$tmp"; else log "kept $tmp (seed $seed)"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# SIGINT to process group PGID, as Ctrl-C on a terminal sends it.
killpg() { python3 -c 'import os, signal, sys; os.killpg(int(sys.argv[1]), signal.SIGINT)' "$1"; }

# Whether PID is a live process (a zombie, stopped but not yet reaped, is not).
alive() {
    st=$(ps -o stat= -p "$1" 2> /dev/null) || return 1
    case $st in *Z*) return 1 ;; esac
    return 0
}

# Nothing of a finished lesson may remain: a folder, or a ringkvd whose config is under $tmp.
nothing_left() {
    left=$(find "$tmp" -mindepth 1 -maxdepth 1 -name 'ringkv-lesson-*' 2> /dev/null)
    [ -z "$left" ] || fail "$1 left $left behind"
    ! pgrep -f "ringkvd $tmp/" > /dev/null || fail "$1 left a ringkvd running: $(pgrep -af "ringkvd $tmp/")"
}

# list: every lesson file, each with a name, a length, a title.
out=$(bash "$lesson" list) || fail "lesson list failed: $out"
files=$(ls "$top_srcdir"/cluster-scripts/lessons/[0-9][0-9]-*.sh | wc -l)
[ "$(printf '%s\n' "$out" | grep -cE '^[0-9]{2}  [a-z0-9-]+ +(quick|long) +[^ ]')" -eq "$files" ] ||
    fail "lesson list does not show $files lessons with a name, a length and a title: $out"
log "list: $files lessons"
rc=0
bash "$lesson" run no-such-lesson > "$tmp/out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "no lesson 'no-such-lesson'" "$tmp/out" || fail "run of an unknown lesson: exit $rc: $(cat "$tmp/out")"
rc=0
bash "$lesson" run 01 --pace soon > "$tmp/out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "a bad --pace: exit $rc: $(cat "$tmp/out")"

# The set asked for, every lesson with no pause.
case $set_ in
quick) all="--quick" ;;
all) all="" ;;
long) all="" ;;
*) fail "RINGKV_LESSONS=$set_: quick, long or all" ;;
esac
if [ "$set_" = long ]; then
    for f in "$top_srcdir"/cluster-scripts/lessons/[0-9][0-9]-*.sh; do
        grep -q '^# length: long' "$f" || continue
        name=$(sed -n 's/^# lesson: *//p' "$f")
        bash "$lesson" run "$name" < /dev/null > "$tmp/$name.out" 2>&1 || {
            cat "$tmp/$name.out"
            fail "lesson $name failed"
        }
        grep "CLAIM HOLDS\|^lesson $name:" "$tmp/$name.out"
        nothing_left "lesson $name"
    done
else
    # shellcheck disable=SC2086 # one flag or none
    rc=0
    bash "$lesson" all $all < /dev/null > "$tmp/all.out" 2>&1 || rc=$?
    # without root the lessons that cut the network are skipped (77), the others must pass
    if [ "$rc" -ne 0 ] && { [ "$rc" -ne 77 ] || [ "$(id -u)" -eq 0 ]; }; then
        cat "$tmp/all.out"
        fail "lesson all $all exited $rc"
    fi
    grep "CLAIM HOLDS\|^lesson [a-z0-9-]*: passed" "$tmp/all.out"
    sed -n '/^==== lessons$/,$p' "$tmp/all.out"
    nothing_left "lesson all $all"
fi

if [ "$set_" != long ]; then
    # A false claim fails the lesson: racks at w 3 with a whole rack stopped.
    RINGKV_LESSON_NET="127.$((seed % 200 + 20)).$((seed / 200 % 250))"
    rc=0
    RINGKV_LESSON_NET=$RINGKV_LESSON_NET RINGKV_LESSON_SETTINGS="--w 3" \
        bash "$lesson" run racks < /dev/null > "$tmp/wrong.out" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && grep -q "CLAIM FAILS" "$tmp/wrong.out" ||
        { cat "$tmp/wrong.out"; fail "lesson racks at --w 3 exited $rc without a failing claim"; }
    log "racks at --w 3: exit $rc, $(grep -c 'CLAIM FAILS' "$tmp/wrong.out") claim(s) failed"
    # the failed lesson kept its folder for the student, with its nodes stopped
    ! pgrep -f "ringkvd $tmp/" > /dev/null || fail "the failed lesson left a ringkvd running"
    rm -rf "$tmp"/ringkv-lesson-*

    # Ctrl-C in the middle of lesson 01 of `lesson all`, as a terminal sends it (to the whole
    # process group), and again while the lesson cleans up: nodes stopped, folder removed,
    # and no other lesson started.  (Started from python3 in a process group of its own: a
    # shell's background job would ignore SIGINT for good.)
    RINGKV_LESSON_NET="127.$((seed % 200 + 20)).$(((seed / 200 + 1) % 250))" python3 -c '
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL)
os.setpgrp()
os.execvp("bash", ["bash"] + sys.argv[1:])' "$lesson" all --quick < /dev/null > "$tmp/int.out" 2>&1 &
    runner=$!
    deadline=$(($(date +%s) + 60))
    until grep -q '^-- step 2' "$tmp/int.out"; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "lesson 01 never reached step 2: $(cat "$tmp/int.out")"
        sleep 0.1
    done
    pids=$(cat "$tmp"/ringkv-lesson-*/tb/n*/ringkvd.pid)
    killpg "$runner"
    until grep -q 'cleaning up' "$tmp/int.out"; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "no word of the interruption: $(cat "$tmp/int.out")"
        sleep 0.05
    done
    sleep 0.2
    killpg "$runner" 2> /dev/null || true
    rc=0
    wait "$runner" || rc=$?
    [ "$rc" -ne 0 ] || fail "an interrupted lesson all exited 0"
    [ "$(grep -c '^==== lesson ' "$tmp/int.out")" -eq 1 ] || fail "lesson all went on after Ctrl-C: $(cat "$tmp/int.out")"
    for pid in $pids; do
        ! alive "$pid" || fail "node pid $pid outlived a double Ctrl-C"
    done
    nothing_left "an interrupted lesson"
    log "Ctrl-C twice in lesson all: exit $rc, $(echo "$pids" | wc -w) nodes stopped, folder removed, no other lesson run"
fi
passed=1
log "PASS"
