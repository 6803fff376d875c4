# faults.sh - network, clock and disk faults between ringkv nodes on
# loopback, for cluster-scripts/testbed and tests/integration/lib.sh (one
# implementation, sourced by both; POSIX sh, so dash can source it too).
#
# Every node has an address of its own on 127/8 and binds its outgoing
# peer connections to it (ringkvd dials from its `listen` host), so a cut
# between two nodes is an iptables rule on the pair of addresses; a client
# on 127.0.0.1 matches no such rule.
#
# Network faults (need root; fault_root says so in one line, status 2):
#   fault_partition NET "A B | C D"  drop every packet between a member of
#                                    one group and a member of another,
#                                    both ways (addresses; an address in
#                                    no group keeps talking to everyone)
#   fault_cut NET FROM TO            drop packets FROM sends to TO (one way)
#   fault_loss NET ADDR PERCENT      drop PERCENT % of the packets ADDR sends
#                                    or receives (iptables statistic, random)
#   fault_slow ADDR RATE             all of ADDR's traffic on lo shares RATE
#                                    (tc htb class and u32 filters on lo)
#   fault_clear NET ADDR             end ADDR's loss and rate limit
#   fault_heal NET                   end every network fault of NET
#   fault_remove NET                 fault_heal, then remove NET's chains
#
# NET is the first three numbers of the nodes' addresses (127.0.0): the
# rules of one NET live in iptables chains of its own, rk-NET-cut (cuts)
# and rk-NET-loss (losses), hooked into INPUT for packets arriving on lo, so
# two testbeds or tests on different NETs never touch each other's rules.
# Drops happen in INPUT only: a packet on lo passes OUTPUT and INPUT once
# each, so one hook keeps a loss percentage exact, and a drop on input is
# silence to the sender (a real lost packet) where a drop in OUTPUT would
# fail its send() with EPERM at once.  Rate limits share lo's root htb
# qdisc (handle 1:, unclassified traffic passes directly, unshaped): an
# address gets the class 1:M (its filters have preference M) where M is
# b*256+c for 127.a.b.c, or the next free number when another address (of
# another NET) holds that one; an address's class is found again by its
# filters, never by its number alone.  The root qdisc goes when its last
# class does.
#
# Clock (no root): fault_faketime_env CLOCKFILE prints the environment
# that starts a process under libfaketime with its wall clock offset by
# the seconds in CLOCKFILE ("+0", "-3600"), read again at most once a
# second; the monotonic clock stays real.  fault_skew CLOCKFILE SECONDS
# replaces the file whole.
#
# Disk (needs root): fault_disk_mount DIR SIZE mounts a tmpfs of SIZE on
# DIR (mode 0700); fault_disk_fill DIR writes DIR/filler until the tmpfs
# is full, fault_disk_free DIR removes it; fault_disk_umount DIR unmounts.
#
# Functions return 0, or 1 with one line on stderr saying why (2: root is
# needed, or an argument is not valid).

FAULT_PROG=${FAULT_PROG:-faults}

fault_say() { printf '%s: %s\n' "$FAULT_PROG" "$*" >&2; }

# fault_root WHAT: succeed as root, else say that WHAT needs root and fail with 2.
fault_root() {
    [ "$(id -u)" -eq 0 ] && return 0
    fault_say "$1 needs root (iptables, tc, mount): run it as root"
    return 2
}

fault_need_tool() {
    command -v "$1" > /dev/null 2>&1 && return 0
    fault_say "$1 not found: run cluster-scripts/install-deps ($2)"
    return 1
}

fault_chain() { printf 'rk-%s-%s' "$1" "$2"; }

# fault_chains NET: create NET's chains and their INPUT hooks when missing.
fault_chains() {
    local kind chain
    fault_root "a network fault" || return
    fault_need_tool iptables iptables || return
    for kind in cut loss; do
        chain=$(fault_chain "$1" "$kind")
        iptables -w -n -L "$chain" > /dev/null 2>&1 || iptables -w -N "$chain" || return 1
        iptables -w -C INPUT -i lo -j "$chain" 2> /dev/null ||
            iptables -w -I INPUT -i lo -j "$chain" || return 1
    done
}

# fault_is_addr ADDR: an IPv4 address on 127/8.
fault_is_addr() {
    echo "$1" | grep -Eq '^127(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){3}$'
}

# fault_cut NET FROM TO: one rule per pair, however often the cut is asked for.
fault_cut() {
    fault_chains "$1" || return
    iptables -w -C "$(fault_chain "$1" cut)" -s "$2/32" -d "$3/32" -j DROP 2> /dev/null ||
        iptables -w -A "$(fault_chain "$1" cut)" -s "$2/32" -d "$3/32" -j DROP
}

# fault_partition NET "A B | C D | ...": cut every pair of addresses in different groups.
fault_partition() {
    local net="$1" groups
    groups=$(printf '%s\n' "$2" | tr '|' '\n')
    [ "$(printf '%s\n' "$groups" | grep -c .)" -ge 2 ] || {
        fault_say "a partition needs two groups or more, split by '|': \"n1 | n2 n3\""
        return 2
    }
    # An address in two groups would be cut from itself.
    [ -z "$(printf '%s\n' "$groups" | tr ' ' '\n' | grep . | sort | uniq -d)" ] || {
        fault_say "partition: an address is named twice in '$2'"
        return 2
    }
    fault_chains "$net" || return
    # Every address of group i against every address of each later group, both ways.
    printf '%s\n' "$groups" | awk '
        { n[NR] = split($0, w, " "); for (i = 1; i <= n[NR]; i++) m[NR, i] = w[i] }
        END { for (a = 1; a <= NR; a++) for (b = a + 1; b <= NR; b++)
                  for (i = 1; i <= n[a]; i++) for (j = 1; j <= n[b]; j++)
                      print m[a, i], m[b, j] }' |
        while read -r a b; do
            fault_cut "$net" "$a" "$b" && fault_cut "$net" "$b" "$a" || exit 1
        done
}

# fault_rules_del CHAIN ADDR: delete CHAIN's rules naming ADDR as source or destination.
# (No pipeline ends in a grep that may find nothing: the testbed runs with pipefail.)
fault_rules_del() {
    local rules rule
    rules=$(iptables -w -S "$1" 2> /dev/null) || return 0
    printf '%s\n' "$rules" | while read -r rule; do
        case $rule in
        "-A $1 -s $2/32 "* | "-A $1 -d $2/32 "*)
            # shellcheck disable=SC2086 # a rule as iptables -S prints it: words without quotes
            iptables -w -D ${rule#-A } || exit 1
            ;;
        esac
    done
}

# fault_htb: whether lo's root qdisc is the htb one the rate limits share.
fault_htb() {
    case $(tc qdisc show dev lo) in *"qdisc htb 1: root"*) return 0 ;; esac
    return 1
}

fault_loss() {
    case $3 in
    [0-9] | [1-9][0-9] | 100) ;;
    *)
        fault_say "loss: PERCENT must be a whole number from 0 to 100, not '$3'"
        return 2
        ;;
    esac
    local chain match dir
    fault_chains "$1" || return
    chain=$(fault_chain "$1" loss)
    fault_rules_del "$chain" "$2" || return 1
    [ "$3" -gt 0 ] || return 0
    if [ "$3" -eq 100 ]; then
        match=""
    else
        match="-m statistic --mode random --probability $(awk -v p="$3" 'BEGIN { printf "%.2f", p / 100 }')"
    fi
    for dir in -s -d; do
        # shellcheck disable=SC2086
        iptables -w -A "$chain" "$dir" "$2/32" $match -j DROP || return 1
    done
}

# fault_addr_hex ADDR: the address as tc prints it in a u32 match (7f00000b).
fault_addr_hex() {
    echo "$1" | awk -F. '{ printf "%02x%02x%02x%02x", $1, $2, $3, $4 }'
}

# fault_class_of ADDR: the htb class minor (hex) whose filter matches ADDR as
# source, if any: what fault_slow gave it.
fault_class_of() {
    tc filter show dev lo 2> /dev/null | awk -v m="match $(fault_addr_hex "$1")/ffffffff at 12" '
        /flowid 1:/ { for (i = 1; i <= NF; i++) if ($i ~ /flowid$/) f = $(i + 1) }
        index($0, m) { sub(/^1:/, "", f); print f; exit }'
}

# fault_class_new ADDR: a free class minor (hex) for ADDR: b*256+c for
# 127.a.b.c, else the next one no class holds (addresses of two NETs that
# differ in their second number would share it).
fault_class_new() {
    local used m
    used=$({
        tc class show dev lo | awk '$2 == "htb" { print $3 }'
        tc filter show dev lo | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /flowid$/) print $(i + 1) }'
    } 2> /dev/null | sed 's/^1://')
    m=$(echo "$1" | awk -F. '{ print $3 * 256 + $4 }')
    while printf '%s\n' "$used" | grep -qx "$(printf '%x' "$m")"; do
        m=$((m % 65535 + 1))
    done
    printf '%x' "$m"
}

fault_slow() {
    fault_root "slow" || return
    fault_need_tool tc iproute2 || return
    echo "$2" | grep -Eq '^[0-9]{1,9}(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)$' || {
        fault_say "slow: RATE is a number and a unit (kbit, mbit, gbit, bps, kbps, mbps), not '$2'"
        return 2
    }
    local minor pref dir
    fault_slow_del "$1"
    fault_htb || tc qdisc add dev lo root handle 1: htb || return 1
    minor=$(fault_class_new "$1")
    pref=$((0x$minor))
    # Filters first: a verb stopped half way leaves filters, by which
    # fault_slow_del finds what to remove, never a class nothing names.
    for dir in src dst; do
        tc filter add dev lo parent 1: protocol ip pref "$pref" u32 \
            match ip "$dir" "$1/32" flowid "1:$minor" || return 1
    done
    tc class add dev lo parent 1: classid "1:$minor" htb rate "$2" ceil "$2" || return 1
}

# fault_slow_del ADDR: remove ADDR's class and filters, and the root qdisc with its last class.
fault_slow_del() {
    command -v tc > /dev/null 2>&1 || return 0
    local minor
    fault_htb || return 0
    minor=$(fault_class_of "$1")
    if [ -n "$minor" ]; then
        tc filter del dev lo parent 1: pref "$((0x$minor))" 2> /dev/null
        tc class del dev lo classid "1:$minor" 2> /dev/null
    fi
    [ -n "$(tc class show dev lo)" ] || tc qdisc del dev lo root 2> /dev/null
    return 0
}

fault_clear() {
    fault_root "clear" || return
    if iptables -w -n -L "$(fault_chain "$1" loss)" > /dev/null 2>&1; then
        fault_rules_del "$(fault_chain "$1" loss)" "$2" || return 1
    fi
    fault_slow_del "$2"
}

# fault_heal NET [ADDR...]: flush NET's chains; remove the rate limits of the ADDRs.
fault_heal() {
    local net="$1" kind chain addr
    fault_root "heal" || return
    shift
    for kind in cut loss; do
        chain=$(fault_chain "$net" "$kind")
        ! iptables -w -n -L "$chain" > /dev/null 2>&1 || iptables -w -F "$chain" || return 1
    done
    for addr in "$@"; do
        fault_slow_del "$addr"
    done
}

# fault_remove NET [ADDR...]: fault_heal, then unhook and delete NET's chains.
fault_remove() {
    [ "$(id -u)" -eq 0 ] && command -v iptables > /dev/null 2>&1 || return 0
    local kind chain
    fault_heal "$@" || return
    for kind in cut loss; do
        chain=$(fault_chain "$1" "$kind")
        while iptables -w -D INPUT -i lo -j "$chain" 2> /dev/null; do :; done
        ! iptables -w -n -L "$chain" > /dev/null 2>&1 || iptables -w -X "$chain" || return 1
    done
}

# --- clock -----------------------------------------------------------------------

# The path of libfaketime, if it is installed.
fault_faketime_lib() {
    local f
    for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
        [ -f "$f" ] && printf '%s' "$f" && return 0
    done
    return 1
}

# fault_faketime_env CLOCKFILE: NAME=VALUE words for env(1), or nothing when libfaketime is absent.
fault_faketime_env() {
    local lib
    lib=$(fault_faketime_lib) || return 0
    [ -f "$1" ] || fault_skew "$1" 0 || return 1
    printf '%s ' "LD_PRELOAD=$lib" "FAKETIME_TIMESTAMP_FILE=$1" "FAKETIME_CACHE_DURATION=1" \
        "FAKETIME_DONT_FAKE_MONOTONIC=1" \
        "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
}

# fault_faked PID: whether process PID runs with libfaketime loaded.
fault_faked() { grep -q libfaketime "/proc/$1/maps" 2> /dev/null; }

# fault_skew CLOCKFILE SECONDS: the offset, replaced whole, never seen half written.
fault_skew() {
    echo "$2" | grep -Eq '^[+-]?[0-9]{1,9}$' || {
        fault_say "skew: SECONDS must be a whole number of seconds from -999999999 to +999999999 (about 31 years; +3600, -60, 0), not '$2'"
        return 2
    }
    printf '%+d\n' "$2" > "$1.new" && mv "$1.new" "$1"
}

# --- disk ------------------------------------------------------------------------

fault_disk_mount() {
    fault_root "a disk of its own" || return
    mkdir -p "$1" && mount -t tmpfs -o "size=$2,mode=0700" ringkv-disk "$1"
}

fault_disk_mounted() { mountpoint -q "$1" 2> /dev/null; }

fault_disk_fill() {
    fault_root "diskfull" || return
    fault_disk_mounted "$1" || {
        fault_say "$1 is not a tmpfs of its own: the node was created without root"
        return 1
    }
    # cat stops at ENOSPC, with every page of the tmpfs taken.
    cat /dev/zero > "$1/filler" 2> /dev/null
    [ "$(df -P -k "$1" | awk 'NR == 2 { print $4 }')" -eq 0 ] || {
        fault_say "$1 still has room after filling it"
        return 1
    }
}

fault_disk_free() {
    fault_root "diskfree" || return
    rm -f "$1/filler"
}

fault_disk_umount() {
    ! fault_disk_mounted "$1" || umount "$1"
}
