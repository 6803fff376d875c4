#!/bin/sh
# One command over many keys on a healthy cluster.  kv_write_atomic()
# starts one coordinated write per key at once, and each asks the other
# replicas (write_send()); past RPC_OUTSTANDING_MAX (1024) requests
# outstanding to one peer, rpc_ask() refuses the rest as overloaded, and
# the coordinator counts that replica as failed: the write misses w
# (TRYAGAIN) and keeps a hint for a replica that is up.
#
# Reads the same: each asks one more replica (read_ask_spare()), and MGET
# of 3000 keys on a healthy cluster answers about 950 of them TRYAGAIN.
#
# Pass: 3 nodes all up, MGET of 3000 keys through n1 has no error among
# its elements, DEL of the 3000 keys answers an integer (no TRYAGAIN),
# and the key that existed is gone.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3
it_wait_converged
it_cli n1 SET del7 v > /dev/null || it_fail "SET del7"
# shellcheck disable=SC2046 # one key a word
errors=$(it_cli n1 MGET $(seq -f del%g 1 3000) 2>&1 | grep -c -E "TRYAGAIN|NOREPLICAS")
[ "$errors" = 0 ] || it_fail "MGET of 3000 keys on a healthy cluster: $errors errors among its elements"
# shellcheck disable=SC2046 # one key a word
got=$(it_cli n1 DEL $(seq -f del%g 1 3000) 2>&1)
[ "$got" = 1 ] || it_fail "DEL of 3000 keys on a healthy cluster: $(echo "$got" | head -c 200)"
got=$(it_cli n2 GET del7)
[ -z "$got" ] || it_fail "GET del7 after the DEL: '$got'"
it_pass "DEL of 3000 keys on a healthy cluster"
