#!/bin/sh
# Integer arguments of commands are read strictly: digits only, within
# their range, the whole argument.  `RINGKV RING 2abc` is not rf 2, "-1" is
# not 2^64-1, 99999999999999999999 does not wrap, and "0<NUL>junk" is not
# 0: each gets an error reply naming the problem, the connection stays
# usable, and the well-formed forms still work.  CONFIG SET refuses a name
# or value holding a NUL byte (the rest would be cut off unseen).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_node n1 --rf 1 --r 1 --w 1 --tokens 8
it_wait_ping n1

# one ARG...: send one command (arguments as Python bytes literal bodies,
# so a NUL byte can be given as \x00) and print its first reply line.
one() {
    python3 - "$N1_CLIENT" "$@" << 'PY'
import ast, socket, sys
args = [ast.literal_eval("b'" + a.replace("'", "\\'") + "'") for a in sys.argv[2:]]
req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(req + b"*1\r\n$4\r\nPING\r\n")
f = s.makefile("rb")
line = f.readline().rstrip(b"\r\n")
if line.startswith((b"%", b"*")):  # an aggregate reply: its type is enough here
    line = line[:1]
    while f.readline() not in (b"+PONG\r\n", b""):
        pass
elif f.readline() != b"+PONG\r\n":
    sys.exit("connection unusable after %r" % line)
print(line.decode("latin-1"))
PY
}

# expect WHAT WANT ARG...: the reply line of the command is WANT.
expect() {
    what=$1
    want=$2
    shift 2
    got=$(one "$@") || it_fail "$what: $got"
    it_expect_eq "$what" "$got" "$want"
}

rf_err() {
    printf -- "-ERR RINGKV RING: rf must be an integer from 1 to 16, not '%s'" "$1"
}
expect "RINGKV RING 1" "*" RINGKV RING 1
expect "RINGKV RING 3" "*" RINGKV RING 3
expect "RINGKV RING 01" "*" RINGKV RING 01
expect "RINGKV RING 2abc" "$(rf_err 2abc)" RINGKV RING 2abc
expect "RINGKV RING -1" "$(rf_err -1)" RINGKV RING -1
expect "RINGKV RING +2" "$(rf_err +2)" RINGKV RING +2
expect "RINGKV RING ' 2'" "$(rf_err ' 2')" RINGKV RING ' 2'
expect "RINGKV RING 0" "$(rf_err 0)" RINGKV RING 0
expect "RINGKV RING 17" "$(rf_err 17)" RINGKV RING 17
expect "RINGKV RING 2^64+1" "$(rf_err 18446744073709551617)" RINGKV RING 18446744073709551617
expect "RINGKV RING 99999999999999999999" "$(rf_err 99999999999999999999)" \
    RINGKV RING 99999999999999999999
expect "RINGKV RING empty" "$(rf_err '')" RINGKV RING ''
expect "RINGKV RING 2<NUL>" "$(rf_err 2)" RINGKV RING '2\x00'

bt="-ERR RINGKV BULKTEST: '%s' is not a byte count"
expect "RINGKV BULKTEST n1 10x" "$(printf -- "$bt" 10x)" RINGKV BULKTEST n1 10x
expect "RINGKV BULKTEST n1 -1" "$(printf -- "$bt" -1)" RINGKV BULKTEST n1 -1
expect "RINGKV BULKTEST n1 2^64" "$(printf -- "$bt" 18446744073709551616)" \
    RINGKV BULKTEST n1 18446744073709551616

expect "SELECT 0" "+OK" SELECT 0
expect "SELECT 00" "+OK" SELECT 00
expect "SELECT 1" "-ERR DB index is out of range" SELECT 1
expect "SELECT 99999999999999999999" "-ERR DB index is out of range" SELECT 99999999999999999999
expect "SELECT 0abc" "-ERR value is not an integer or out of range" SELECT 0abc
expect "SELECT -1" "-ERR value is not an integer or out of range" SELECT -1
expect "SELECT 0<NUL>1" "-ERR value is not an integer or out of range" SELECT '0\x001'

expect "HELLO 2" "*" HELLO 2
expect "HELLO 3" "%" HELLO 3
expect "HELLO 4" "-NOPROTO unsupported protocol version" HELLO 4
expect "HELLO 1" "-NOPROTO unsupported protocol version" HELLO 1
expect "HELLO 3x" "-ERR Protocol version is not an integer or out of range" HELLO 3x
expect "HELLO 3<NUL>" "-ERR Protocol version is not an integer or out of range" HELLO '3\x00'
expect "HELLO -3" "-ERR Protocol version is not an integer or out of range" HELLO -3

nul="-ERR CONFIG SET failed: a setting's name and value hold no NUL bytes"
expect "CONFIG SET maxclients 100" "+OK" CONFIG SET maxclients 100
expect "CONFIG SET maxclients 5<NUL>0" "$nul" CONFIG SET maxclients '5\x000'
expect "CONFIG SET maxclients<NUL>x" "$nul" CONFIG SET 'maxclients\x00x' 5
expect "CONFIG SET maxclients 2abc" \
    "-ERR CONFIG SET failed: maxclients: '2abc' is not a number" CONFIG SET maxclients 2abc
it_expect_eq "maxclients unchanged" "$(it_cli n1 CONFIG GET maxclients | tail -n 1)" "100"
it_pass
