#!/bin/sh
# tokens-status.sh - what a node reports as its token count after `ringkv tokens`.
#
# A node alone (rf 1, configured with 256 tokens) holding a key is told `ringkv tokens n1 64`:
#   - the members table, RINGKV STATUS's tokens (the header of `ringkv status`) and INFO's
#     ringkv_tokens all give 64 once the change is made, not the configured 256;
#   - restarted with its configured 256, it keeps 64 (the saved count overrides it) and still
#     reports 64 everywhere;
#   - the key reads back.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

status_tokens() { it_cli n1 RINGKV STATUS | sed -n '/^tokens$/{n;p;q;}'; }
reports() {
    it_ask tokens "$1" n1 "$(it_var n1 CLIENT)" &&
        [ "$(status_tokens)" = "$1" ] && [ "$(it_info_field n1 ringkv_tokens)" = "$1" ] &&
        "$RINGKV" -H "$(it_client_addr n1)" status | grep -q "^node n1 (rack r1, $1 tokens"
}

it_node n1 --rack r1 --tokens 256
it_wait_ping n1
it_expect_eq "SET" "$(it_cli n1 SET k v)" OK
reports 256 || it_fail "n1 does not report its configured 256 tokens: STATUS $(status_tokens)"

out=$("$RINGKV" -H "$(it_client_addr n1)" tokens n1 64) || it_fail "ringkv tokens n1 64: $out"
IT_WAIT=10 it_wait reports 64 ||
    it_fail "n1 reports STATUS $(status_tokens), INFO $(it_info_field n1 ringkv_tokens) tokens, not 64"

it_stop n1
it_node n1 --rack r1 --tokens 256
it_wait_ping n1
grep -q 'event=tokens_override tokens=64 config_tokens=256' "$IT_DIR/n1.log" ||
    it_fail "n1 did not say that its saved count overrides the configured one"
IT_WAIT=10 it_wait reports 64 ||
    it_fail "restarted, n1 reports STATUS $(status_tokens), INFO $(it_info_field n1 ringkv_tokens) tokens, not 64"
it_expect_eq "GET after the restart" "$(it_cli n1 GET k)" v
it_pass "n1 reports the count in force, 64, in its members table, STATUS and INFO, before and after a restart"
