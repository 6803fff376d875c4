# lib.sh - what every lesson of cluster-scripts/lessons/ shares: its own
# testbed, its narration, its claims.  Sourced by a lesson (bash), never
# run; cluster-scripts/lesson runs the lessons.
#
# A lesson is NN-name.sh with three header lines that `lesson list` reads:
#   # lesson: NAME            (the short name `lesson run NAME` takes)
#   # title: ONE LINE          (what it shows)
#   # length: quick | long     (quick: under a minute; make check runs those)
# It sources this file, calls lesson_begin, then tells its story with:
#   step TEXT...      a new step: what is about to happen (a pause before
#                     it, see below)
#   run CMD ARGS...   shows `$ CMD ARGS` and runs it, its output indented;
#                     its exit status is CMD's (a failure the lesson does
#                     not expect ends it, as set -e does)
#   keep VAR CMD ARGS...  the same, and VAR holds the output
#   quiet CMD ARGS... runs it without showing it (bookkeeping)
#   notice TEXT...    what to look at in the output just shown
#   figure NAME VALUE one measured figure, printed and kept for the claim
#   claim TEXT -- CMD ARGS...
#                     the lesson's claim with its figures: holds when CMD
#                     exits 0; printed as holding or failing, and a
#                     failing claim makes the lesson exit 1
# and ends with lesson_end.  Shared checks (below): `within [-p POLL]
# SECONDS CMD` polls until CMD holds ($waited: how long it took), `show CMD
# '|' FILTER` runs a command with a long output through a filter, shown; `ask ID FILE WANT`
# sends FILE's commands and compares each reply with WANT's line, and
# `matched FILE WANT` counts the replies that were; `seen ID up|down NODE...`
# and `until_seen` (20 s at most) ask node ID's failure detector;
# `plan_join ID NODE RACK TOKENS LINES` shows a join's dry run and keeps
# the keys it would move (figure plan_keys).  Inside, `tb VERB ...` is the lesson's own
# testbed (cluster-scripts/testbed), whose folder is the working directory
# ($lesson_here is cluster-scripts/lessons, for helper programs there)
# ($lesson_dir, for the lesson's own files too), `cli ID ARGS...` is `ringkv` talking
# to node ID, `addr ID` is node ID's client address, `rcli ID ARGS...` is
# redis-cli talking to node ID (one command per line on stdin when no ARGS;
# given up after 30 s, so a paused node cannot hang a lesson), `send ID
# FILE` sends FILE's commands to node ID and counts the replies (one line
# each, as --no-raw prints them).
#
# The testbed lives in a fresh folder ($RINGKV_LESSON_DIR, default /tmp,
# ringkv-lesson-NAME.XXXXXX) on loopback addresses of the lesson's own:
# 127.61.NN.(10+i) for node i of lesson NN ($RINGKV_LESSON_NET overrides),
# so lessons never meet a testbed of yours, nor each other.  lesson_up
# starts it with the lesson's settings followed by $RINGKV_LESSON_SETTINGS
# (`--name value` pairs; a later setting wins): that is how a test runs a
# lesson against a deliberately wrong setting, which must make its claim
# fail.  On exit, Ctrl-C included, the testbed is cleaned (its nodes
# stopped by their PIDs, its fault rules removed, its folder deleted); a
# lesson that failed keeps the folder and says where, with the nodes' last
# log lines.
#
# Pauses: on a terminal, each step waits for Enter; with --pace SECONDS
# (cluster-scripts/lesson run NAME --pace S, or $RINGKV_LESSON_PACE) it
# waits that long instead; otherwise (a pipe, a test) it does not wait.

set -euo pipefail

lesson_top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lesson_here=$lesson_top/cluster-scripts/lessons
lesson_file=$(basename "$0")
lesson_num=${lesson_file%%-*}
lesson_name=$(sed -n 's/^# lesson: *//p' "$lesson_here/$lesson_file" | head -n 1)
lesson_title=$(sed -n 's/^# title: *//p' "$lesson_here/$lesson_file" | head -n 1)
lesson_steps=0
lesson_claims=0
lesson_failed=0
lesson_status=1
lesson_started=$(date +%s)

# Binaries: $RINGKV_BIN (as the testbed), else this checkout's build, else $PATH.
lesson_ringkv() {
    if [ -n "${RINGKV_BIN:-}" ] && [ -x "$RINGKV_BIN/ringkv" ]; then
        printf '%s' "$RINGKV_BIN/ringkv"
    elif [ -x "$lesson_top/build/default/src/ringkv" ]; then
        printf '%s' "$lesson_top/build/default/src/ringkv"
    else
        command -v ringkv || { echo "lesson: ringkv not found: build it (cluster-scripts/quickstart)" >&2; exit 1; }
    fi
}

lesson_pause() {
    if [ -n "${RINGKV_LESSON_PACE:-}" ]; then
        [ "$RINGKV_LESSON_PACE" = 0 ] || sleep "$RINGKV_LESSON_PACE"
    elif [ -t 0 ] && [ -t 1 ]; then
        printf '   (Enter for the next step) '
        read -r _ || true
    fi
}

lesson_cleanup() {
    local rc=$? f j clean=0
    set +e
    # a second Ctrl-C must not cut the cleanup short
    trap '' INT TERM HUP
    trap - EXIT
    for j in $(jobs -p); do kill "$j" 2> /dev/null; done
    if [ "$lesson_status" -ne 0 ] && [ "$rc" -eq 0 ]; then rc=1; fi
    if [ -n "${lesson_dir:-}" ] && [ -d "$lesson_dir" ]; then
        if [ "$rc" -ne 0 ] && [ -z "${lesson_interrupted:-}" ]; then
            for f in "$RINGKV_TESTBED"/n*/ringkvd.log; do
                [ -f "$f" ] || continue
                echo "==== $f (last 10 lines)"
                tail -n 10 "$f"
            done
            bash "$lesson_top/cluster-scripts/testbed" down > /dev/null 2>&1
            grep -o " $RINGKV_TESTBED/[^ ]*" /proc/mounts 2> /dev/null | while read -r m; do umount "$m"; done
            echo "lesson $lesson_name: kept $lesson_dir (its nodes are stopped)"
        else
            bash "$lesson_top/cluster-scripts/testbed" clean > /dev/null 2>&1 || clean=$?
            grep -o " $RINGKV_TESTBED/[^ ]*" /proc/mounts 2> /dev/null | while read -r m; do umount "$m"; done
            if [ "$clean" -eq 0 ]; then
                rm -rf "$lesson_dir"
            else
                echo "lesson $lesson_name: the testbed would not stop cleanly: kept $lesson_dir"
            fi
        fi
    fi
    if [ -n "${lesson_interrupted:-}" ]; then
        trap - "$lesson_interrupted"
        kill "-$lesson_interrupted" $$
    fi
    exit "$rc"
}

# Ctrl-C, SIGTERM or a closed terminal: clean up, then die of the same
# signal, so that whatever ran the lesson (lesson all, a shell loop) stops too.
lesson_interrupt() {
    lesson_interrupted=$1
    echo
    echo "lesson $lesson_name: interrupted ($1); cleaning up"
    lesson_cleanup
}

# lesson_needs_root WHY: before lesson_begin, in a lesson whose faults need
# root (iptables, a clock offset under libfaketime): without it, says so in
# one line and exits 77, which `lesson all` counts as skipped, not failed.
lesson_needs_root() {
    [ "$(id -u)" -eq 0 ] && return 0
    echo "lesson $lesson_name: needs root ($*): run it as root, e.g. sudo cluster-scripts/lesson run $lesson_name"
    lesson_status=0
    exit 77
}

lesson_begin() {
    local base=${RINGKV_LESSON_DIR:-${TMPDIR:-/tmp}}
    if [ -n "${RINGKV_LESSON_PACE:-}" ] && ! [[ $RINGKV_LESSON_PACE =~ ^[0-9]*\.?[0-9]+$ ]]; then
        echo "lesson: RINGKV_LESSON_PACE='$RINGKV_LESSON_PACE' is not a number of seconds" >&2
        exit 2
    fi
    # the user's own client settings are not the lesson's testbed's
    unset RINGKV_PASSWORD RINGKV_TIMEOUT RINGKV_ADDR REDISCLI_AUTH
    RINGKV=$(lesson_ringkv)
    lesson_dir=$(mktemp -d "$base/ringkv-lesson-$lesson_name.XXXXXX")
    lesson_dir=$(cd "$lesson_dir" && pwd)
    RINGKV_TESTBED=$lesson_dir/tb
    RINGKV_TESTBED_NET=${RINGKV_LESSON_NET:-127.61.$((10#$lesson_num))}
    RINGKV_TESTBED_TIMEOUT=${RINGKV_TESTBED_TIMEOUT:-60}
    [ -n "${RINGKV_BIN:-}" ] || RINGKV_BIN=$(dirname "$RINGKV")
    export RINGKV RINGKV_TESTBED RINGKV_TESTBED_NET RINGKV_TESTBED_TIMEOUT RINGKV_BIN
    trap lesson_cleanup EXIT
    trap 'lesson_interrupt INT' INT
    trap 'lesson_interrupt TERM' TERM
    trap 'lesson_interrupt HUP' HUP
    echo "==== lesson $lesson_num $lesson_name: $lesson_title"
    echo "     (testbed in $lesson_dir, nodes on $RINGKV_TESTBED_NET.11 and up)"
    cd "$lesson_dir"
}

step() {
    lesson_steps=$((lesson_steps + 1))
    [ "$lesson_steps" -eq 1 ] || lesson_pause
    echo
    echo "-- step $lesson_steps: $*"
}

run() {
    echo "   \$ $*"
    "$@" 2>&1 | sed 's/^/     /'
    return "${PIPESTATUS[0]}"
}

# keep VAR CMD ARGS...: as run, and VAR holds the output (stdout and stderr).
keep() {
    local var=$1 out rc=0
    shift
    echo "   \$ $*"
    out=$("$@" 2>&1) || rc=$?
    [ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/     /'
    printf -v "$var" '%s' "$out"
    return "$rc"
}

quiet() { "$@"; }

notice() { echo "   notice: $*"; }

figure() {
    printf '   figure: %s = %s\n' "$1" "$2"
    printf -v "fig_$1" '%s' "$2"
}

claim() {
    local text=$1
    shift
    [ "${1:-}" = -- ] && shift
    lesson_claims=$((lesson_claims + 1))
    if "$@"; then
        echo "   CLAIM HOLDS: $text"
    else
        echo "   CLAIM FAILS: $text"
        lesson_failed=$((lesson_failed + 1))
    fi
}

lesson_end() {
    local secs=$(($(date +%s) - lesson_started))
    echo
    if [ "$lesson_claims" -eq 0 ]; then
        echo "lesson $lesson_name: FAILED: it checked no claim"
        lesson_status=1
        exit 1
    elif [ "$lesson_failed" -gt 0 ]; then
        echo "lesson $lesson_name: FAILED: $lesson_failed of $lesson_claims claims did not hold (${secs} s)"
        lesson_status=1
        exit 1
    fi
    echo "lesson $lesson_name: passed: $lesson_claims claims held (${secs} s)"
    lesson_status=0
    exit 0
}

# The lesson's testbed, and ringkv or redis-cli at one of its nodes.
tb() { bash "$lesson_top/cluster-scripts/testbed" "$@"; }
addr() { printf '%s.%d:7370' "$RINGKV_TESTBED_NET" "$((10 + ${1#n}))"; }
cli() {
    local id=$1
    shift
    "$RINGKV" -H "$(addr "$id")" "$@"
}
rcli() {
    local id=$1 a
    shift
    a=$(addr "$id")
    timeout 30 redis-cli -h "${a%:*}" -p "${a##*:}" "$@"
}

# send ID FILE: FILE's commands (one a line) to node ID through redis-cli,
# shown as such; prints each distinct reply with its count.
send() {
    local a
    a=$(addr "$1")
    echo "   \$ redis-cli --no-raw -h ${a%:*} -p ${a##*:} < $(basename "$2") | sort | uniq -c"
    timeout 120 redis-cli --no-raw -h "${a%:*}" -p "${a##*:}" < "$2" | sort | uniq -c | sed 's/^/     /'
}

# lesson_up ARGS...: testbed up with the lesson's settings, then $RINGKV_LESSON_SETTINGS.
lesson_up() {
    # shellcheck disable=SC2086 # settings are words: --name value
    run tb up "$@" ${RINGKV_LESSON_SETTINGS:-}
}

# A number from the first `name:value` line of a node's INFO.
# (awk reads the whole reply: a redis-cli cut short by SIGPIPE would fail the pipeline)
info_field() { rcli "$1" INFO | tr -d '\r' | awk -F: -v k="$2" '$1 == k && v == "" { v = $2 } END { print v }'; }

# plan_join ID NODE RACK TOKENS LINES: node ID's dry run of NODE joining in
# RACK with TOKENS tokens (RINGKV PLAN JOIN: nothing changes), shown (its
# first LINES fields), and the keys it would move kept as figure plan_keys.
plan_join() {
    local a out
    a=$(addr "$1")
    echo "   \$ redis-cli -h ${a%:*} -p ${a##*:} RINGKV PLAN JOIN $2 $3 $4 | paste -d ' ' - - | head -n $5"
    out=$(rcli "$1" RINGKV PLAN JOIN "$2" "$3" "$4")
    printf '%s\n' "$out" | paste -d ' ' - - | awk -v n="$5" 'NR <= n { print "     " $0 }'
    figure plan_keys "$(printf '%s\n' "$out" | awk 'prev == "keys" && v == "" { v = $0 } { prev = $0 } END { print v }')"
}

# Arithmetic for claims: `holds 'a < b' a=1 b=2` (awk; exit 0 when true).
holds() {
    local expr=$1
    shift
    local args=()
    for kv in "$@"; do args+=(-v "$kv"); done
    awk "${args[@]}" "BEGIN { exit !($expr) }"
}

# within [-p POLL] SECONDS CMD...: poll CMD every POLL seconds (default 0.2)
# until it holds, at most SECONDS; $waited is the time it took, in seconds.
within() {
    local poll=0.2 limit t0
    if [ "$1" = -p ]; then
        poll=$2
        shift 2
    fi
    limit=$1
    shift
    t0=$(date +%s%N)
    until "$@"; do
        if [ $((($(date +%s%N) - t0) / 1000000)) -ge $((limit * 1000)) ]; then
            waited=$limit
            return 1
        fi
        sleep "$poll"
    done
    # shellcheck disable=SC2034 # read by the lessons
    waited=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.1f", ns / 1e9 }')
}

# show CMD ARGS... '|' FILTER...: as run, for a command whose output is long: shows
# `$ CMD ARGS | FILTER` and the filtered output.
show() {
    local i
    for ((i = 1; i <= $#; i++)); do [ "${!i}" != '|' ] || break; done
    echo "   \$ ${*:1:i-1} | ${*:i+1}"
    "${@:1:i-1}" 2>&1 | "${@:i+1}" | sed 's/^/     /' || true
}

# ask ID FILE WANT: FILE's commands (one a line) to node ID through redis-cli,
# one reply a line (--no-raw); prints how many replies are the ones WANT
# expects (line by line), and what the others were, counted.
ask() {
    local a
    a=$(addr "$1")
    echo "   \$ redis-cli -h ${a%:*} -p ${a##*:} --no-raw < $2   (replies compared with $3)"
    timeout 120 redis-cli --no-raw -h "${a%:*}" -p "${a##*:}" < "$2" > "$2.replies" || true
    awk 'NR == FNR { want[FNR] = $0; n = FNR; next }
        { got = FNR; if ($0 == want[FNR]) ok++; else other[$0 ~ /^\(error\)|^\(nil\)$/ ? $0 : "another value"]++ }
        END {
            printf "%d of %d replies as expected\n", ok, n
            for (k in other) printf "%d replies: %s\n", other[k], k
            if (got < n) printf "%d commands got no reply\n", n - got
        }' "$3" "$2.replies" | sed 's/^/     /'
}
# matched FILE WANT: how many of the last replies to FILE's commands are the expected ones.
matched() { awk 'NR == FNR { want[FNR] = $0; next } $0 == want[FNR] { ok++ } END { print ok + 0 }' "$2" "$1.replies"; }

# Polls and checks several lessons share.

# seen ID up|down NODE...: whether node ID sees every NODE up (or down).
seen() {
    local id=$1 want=$2
    shift 2
    { cli "$id" -t 1 status --json 2> /dev/null || true; } | python3 -c '
import json, sys
try:
    up = {m["id"]: m["up"] for m in json.load(sys.stdin)["members"]}
except ValueError:
    sys.exit(1)
sys.exit(0 if all(up.get(n) == (sys.argv[1] == "up") for n in sys.argv[2:]) else 1)' "$want" "$@"
}
# until_seen ID up|down NODE...: wait until seen, 20 s at most.
until_seen() {
    local deadline=$((SECONDS + 20))
    until seen "$@"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "   $1 does not see ${*:3} $2 after 20 s"
            return 1
        fi
        sleep 0.2
    done
}
