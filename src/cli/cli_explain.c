/*
 * cli_explain.c - `ringkv placement explain`: where a key lives and why.
 *
 * For a key and a member list it prints the key's position, the token the
 * key lands on (saying when the position is past the last token and the
 * lookup wrapped around to the first), and every step of PLACEMENT.md
 * section 5's walk with its reason: chosen (rack not yet used), set aside
 * (rack already used, naming the node that used it), skipped (node already
 * chosen or set aside), appended (set-aside node taken after the walk ran
 * out of racks).  Runs of skipped tokens are folded into one line in the
 * table; --json lists every step.
 *
 * The walk is ring_preflist_walk(), the literal section-5 walk, so what is
 * explained is the contract itself; the result is checked against the fast
 * preference table before it is printed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_placement.h"
#include "error.h"
#include "grow.h"
#include "hex.h"
#include "ring.h"

#define EXPLAIN_USAGE                                                                              \
    "ringkv placement explain [--rf N] [--seed HEX32] [--hex] [--json]\n"                          \
    "           (--node ID,RACK,TOKENS ... | --members FILE) KEY"

struct explain_step {
    enum ring_step what;
    size_t token;
    uint32_t member;
    uint32_t by; /* set aside: the chosen member that used the rack */
};

struct explain_walk {
    const struct ring *ring;
    struct explain_step *steps;
    size_t n, cap;
    uint32_t chosen[RING_RF_MAX];
    size_t n_chosen;
    bool oom;
};

static void explain_record(void *ctx, enum ring_step what, size_t token, uint32_t member)
{
    struct explain_walk *w = ctx;
    struct explain_step st = {what, token, member, member};

    if (grow_array(&w->steps, &w->cap, w->n + 1, sizeof(*w->steps)) != 0) {
        w->oom = true;
        return;
    }
    if (what == RING_STEP_CHOSEN && w->n_chosen < RING_RF_MAX) {
        w->chosen[w->n_chosen++] = member;
    }
    if (what == RING_STEP_SET_ASIDE) {
        const char *rack = ring_member_rack(w->ring, member);
        for (size_t i = 0; i < w->n_chosen; i++) {
            if (strcmp(ring_member_rack(w->ring, w->chosen[i]), rack) == 0) {
                st.by = w->chosen[i];
            }
        }
    }
    w->steps[w->n++] = st;
}

static const char *const explain_action[] = {
    [RING_STEP_CHOSEN] = "chosen",
    [RING_STEP_SEEN] = "skipped",
    [RING_STEP_SET_ASIDE] = "set aside",
    [RING_STEP_APPENDED] = "appended",
};

/* Whether member was chosen (rather than set aside) when the walk first met it. */
static bool explain_was_chosen(const struct explain_walk *w, uint32_t member)
{
    for (size_t i = 0; i < w->n_chosen; i++) {
        if (w->chosen[i] == member) {
            return true;
        }
    }
    return false;
}

/* The reason for a step, written to buf. */
static const char *explain_reason(const struct explain_walk *w, const struct explain_step *st,
                                  char *buf, size_t cap)
{
    const struct ring *r = w->ring;
    const char *rack = ring_member_rack(r, st->member);

    switch (st->what) {
    case RING_STEP_CHOSEN:
        snprintf(buf, cap, "rack %s not used yet", rack);
        break;
    case RING_STEP_SET_ASIDE:
        snprintf(buf, cap, "rack %s already used by %s", rack, ring_member_id(r, st->by));
        break;
    case RING_STEP_SEEN:
        snprintf(buf, cap, "%s already %s", ring_member_id(r, st->member),
                 explain_was_chosen(w, st->member) ? "chosen" : "set aside");
        break;
    default:
        snprintf(buf, cap, "fewer racks than rf: set-aside nodes fill the list in order met");
        break;
    }
    return buf;
}

static void explain_token_name(const struct ring *r, size_t t, char *buf, size_t cap)
{
    struct ring_token tok = ring_token_at(r, t);
    snprintf(buf, cap, "%s#%" PRIu32, ring_member_id(r, tok.member), tok.index);
}

static void print_step_row(const struct explain_walk *w, size_t no, const struct explain_step *st)
{
    char name[RING_NAME_MAX + 16], why[200];

    explain_token_name(w->ring, st->token, name, sizeof(name));
    printf("  %4zu  %-24s %016" PRIx64 "  %-10s %s\n", no, name,
           ring_token_at(w->ring, st->token).pos, explain_action[st->what],
           explain_reason(w, st, why, sizeof(why)));
}

static void print_steps(const struct explain_walk *w)
{
    printf("  %4s  %-24s %-16s  %-10s %s\n", "step", "token", "position", "action", "reason");
    for (size_t i = 0; i < w->n; i++) {
        size_t j = i;
        while (j < w->n && w->steps[j].what == RING_STEP_SEEN) {
            j++;
        }
        if (j - i >= 2) {
            printf("  %4zu  ... %zu tokens skipped: their nodes were already chosen or set aside\n",
                   i + 1, j - i);
            i = j - 1;
            continue;
        }
        print_step_row(w, i + 1, &w->steps[i]);
    }
}

static void print_explain(const struct ring *r, const char *key_shown, uint64_t pos, unsigned rf,
                          const struct explain_walk *w, const uint32_t *list, size_t n,
                          size_t owner, bool wrapped)
{
    char name[RING_NAME_MAX + 16];

    explain_token_name(r, owner, name, sizeof(name));
    printf("key        %s\n", key_shown);
    printf("position   %016" PRIx64 "  (SipHash-2-4 of the key bytes under the ring seed)\n", pos);
    printf("ring       %zu members, %zu racks, %zu tokens, rf %u\n", ring_member_count(r),
           ring_rack_count(r), ring_token_count(r), rf);
    if (wrapped) {
        printf("lands on   %s at %016" PRIx64 ": no token is >= the position, so the lookup "
               "wraps around to the first token of the ring\n",
               name, ring_token_at(r, owner).pos);
    } else {
        printf("lands on   %s at %016" PRIx64 ": the first token >= the position (token %zu of "
               "%zu in ring order)\n",
               name, ring_token_at(r, owner).pos, owner + 1, ring_token_count(r));
    }
    printf("walk       clockwise from that token, choosing one node per rack:\n");
    print_steps(w);
    printf("preflist   ");
    for (size_t i = 0; i < n; i++) {
        printf("%s%s", i ? ", " : "", ring_member_id(r, list[i]));
    }
    printf("  (primary first)\n");
}

static json_t *explain_json(const struct ring *r, const char *key_hex, uint64_t pos, unsigned rf,
                            const struct explain_walk *w, const uint32_t *list, size_t n,
                            size_t owner, bool wrapped)
{
    char buf[200], why[200];
    json_t *steps = json_array(), *pl = json_array();
    struct ring_token ot = ring_token_at(r, owner);

    for (size_t i = 0; i < w->n; i++) {
        const struct explain_step *st = &w->steps[i];
        struct ring_token t = ring_token_at(r, st->token);
        snprintf(buf, sizeof(buf), "%016" PRIx64, t.pos);
        json_array_append_new(
            steps,
            json_pack("{s:I, s:s, s:I, s:s, s:s, s:s, s:s}", "step", (json_int_t)(i + 1), "node",
                      ring_member_id(r, st->member), "token_index", (json_int_t)t.index, "position",
                      buf, "rack", ring_member_rack(r, st->member), "action",
                      explain_action[st->what], "reason", explain_reason(w, st, why, sizeof(why))));
    }
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(pl, json_string(ring_member_id(r, list[i])));
    }
    snprintf(buf, sizeof(buf), "%016" PRIx64, pos);
    json_t *j = json_pack("{s:s, s:s, s:I, s:b}", "key_hex", key_hex, "position", buf, "rf",
                          (json_int_t)rf, "wrapped", wrapped);
    snprintf(buf, sizeof(buf), "%016" PRIx64, ot.pos);
    json_object_set_new(j, "owner_token",
                        json_pack("{s:I, s:s, s:I, s:s}", "ring_index", (json_int_t)owner, "node",
                                  ring_member_id(r, ot.member), "token_index", (json_int_t)ot.index,
                                  "position", buf));
    json_object_set_new(j, "steps", steps);
    json_object_set_new(j, "preflist", pl);
    return j;
}

struct explain_opts {
    struct cli_members members;
    uint8_t seed[RING_SEED_LEN];
    long rf;
    bool hex, json;
};

static int explain_parse(int argc, char **argv, struct explain_opts *o)
{
    static const struct option opts[] = {{"rf", required_argument, NULL, 'r'},
                                         {"seed", required_argument, NULL, 's'},
                                         {"node", required_argument, NULL, 'n'},
                                         {"members", required_argument, NULL, 'm'},
                                         {"hex", no_argument, NULL, 'x'},
                                         {"json", no_argument, NULL, 'j'},
                                         {0, 0, 0, 0}};
    int c;

    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        bool ok = true;
        switch (c) {
        case 'r':
            ok = cli_parse_long("--rf", optarg, 1, RING_RF_MAX, &o->rf);
            break;
        case 's':
            ok = cli_parse_seed(optarg, o->seed);
            break;
        case 'n':
            ok = cli_members_add_spec(&o->members, optarg) == 0;
            break;
        case 'm':
            ok = cli_members_add_file(&o->members, optarg) == 0;
            break;
        case 'x':
            o->hex = true;
            break;
        case 'j':
            o->json = true;
            break;
        default:
            return cli_usage(EXPLAIN_USAGE, "unknown option");
        }
        if (!ok) {
            return CLI_USAGE;
        }
    }
    if (optind != argc - 1) {
        return cli_usage(EXPLAIN_USAGE, "expected one KEY");
    }
    return 0;
}

/* The key's bytes: the argument itself, or its hex decoding with --hex. */
static int explain_key(const struct explain_opts *o, const char *arg, uint8_t **key, size_t *len)
{
    size_t n = strlen(arg);

    *key = malloc(n + 1);
    if (*key == NULL) {
        return cli_error("out of memory");
    }
    if (!o->hex) {
        memcpy(*key, arg, n);
        *len = n;
        return 0;
    }
    if (strcmp(arg, "-") == 0) {
        *len = 0;
        return 0;
    }
    if (!hex_decode(*key, arg, n)) {
        free(*key);
        *key = NULL;
        return cli_usage(EXPLAIN_USAGE, "--hex KEY must be an even number of hex digits or '-'");
    }
    *len = n / 2;
    return 0;
}

static int explain_run(const struct explain_opts *o, struct ring *r, const uint8_t *key, size_t len,
                       const char *arg)
{
    struct explain_walk w = {.ring = r};
    uint32_t list[RING_RF_MAX], fast[RING_RF_MAX];
    size_t n, n_fast, owner;
    bool wrapped;
    char *key_hex = malloc(2 * len + 1);
    uint64_t pos = ring_key_position(r, key, len);
    int rc = CLI_OK;

    if (key_hex == NULL) {
        return cli_error("out of memory");
    }
    hex_encode(key_hex, key, len);
    (void)ring_owner_token(r, pos, &owner, &wrapped);
    if (ring_preflist_walk(r, pos, (unsigned)o->rf, list, &n, explain_record, &w) != 0 || w.oom ||
        ring_preflist(r, pos, (unsigned)o->rf, fast, &n_fast) != 0) {
        rc = cli_error("out of memory");
    } else if (n != n_fast || memcmp(list, fast, n * sizeof(*list)) != 0) {
        rc = cli_error("internal error: the preference table disagrees with the walk");
    } else if (o->json) {
        rc = cli_json_print(
            explain_json(r, key_hex, pos, (unsigned)o->rf, &w, list, n, owner, wrapped));
    } else {
        char shown[200];
        snprintf(shown, sizeof(shown), o->hex ? "%s (hex, %zu bytes)" : "\"%s\" (%zu bytes)",
                 o->hex ? key_hex : arg, len);
        print_explain(r, shown, pos, (unsigned)o->rf, &w, list, n, owner, wrapped);
    }
    free(w.steps);
    free(key_hex);
    return rc;
}

int cli_placement_explain(int argc, char **argv)
{
    struct explain_opts o = {.rf = 3};
    struct ring *r = NULL;
    uint8_t *key = NULL;
    size_t len = 0;
    int rc;

    memcpy(o.seed, ring_default_seed, RING_SEED_LEN);
    rc = explain_parse(argc, argv, &o);
    if (rc == 0) {
        rc = explain_key(&o, argv[optind], &key, &len);
    }
    if (rc == 0) {
        rc = cli_members_ring(&o.members, o.seed, &r);
    }
    if (rc == 0) {
        rc = explain_run(&o, r, key, len, argv[argc - 1]);
    }
    ring_unref(r);
    free(key);
    cli_members_free(&o.members);
    return rc;
}
