/*
 * two_nodes.c - two real nodes on one event loop (two_nodes.h).
 */
#include "two_nodes.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "channel.h"
#include "log.h"
#include "settings.h"

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

static int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void set(struct settings *c, const char *name, const char *value)
{
    char err[256];

    ck_assert_msg(settings_set(c, name, value, err, sizeof(err)) == 0, "%s: %s", name, err);
}

static struct server *node(const char *dir, const char *id, int peer_port, const char *const *extra)
{
    struct settings c;
    struct server *n;
    char text[128], err[512];

    settings_init(&c);
    set(&c, "id", id);
    snprintf(text, sizeof(text), "%s/%s", dir, id);
    set(&c, "data", text);
    snprintf(text, sizeof(text), "%s/key", dir);
    set(&c, "cluster-key", text);
    snprintf(text, sizeof(text), "127.0.0.1:%d", peer_port);
    set(&c, "listen", text);
    snprintf(text, sizeof(text), "127.0.0.1:%d", free_port());
    set(&c, "client", text);
    set(&c, "sync", "none");
    set(&c, "value-max", "64KB");
    set(&c, "frame-max", "1MB");
    set(&c, "peer-queue-max", "1MB");
    for (size_t i = 0; extra != NULL && extra[i] != NULL; i += 2) {
        set(&c, extra[i], extra[i + 1]);
    }
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), 0);
    ck_assert_msg(server_create(&n, &c, err, sizeof(err)) == 0, "%s", err);
    ev_io_start(n->loop, &n->listeners[SERVER_PORT_PEER].w);
    return n;
}

bool two_nodes_spin(struct two_nodes *t, bool (*cond)(void *), void *arg)
{
    for (int i = 0; i < TWO_NODES_TURNS; i++) {
        if (cond(arg)) {
            return true;
        }
        ev_run(t->b->loop, EVRUN_ONCE); /* the one loop of both; a may be destroyed already */
    }
    return cond(arg);
}

struct peer *two_nodes_b_side(const struct two_nodes *t)
{
    for (struct peer *p = t->b->peers; p != NULL; p = p->next) {
        if (!p->dead && p->identified) {
            return p;
        }
    }
    return NULL;
}

/* Both ends identified, and a holds b's first grant. */
static bool connected(void *arg)
{
    struct two_nodes *t = arg;

    return t->pa->identified && t->pa->lanes.peer_window > 0 && two_nodes_b_side(t) != NULL;
}

void two_nodes_start(struct two_nodes *t, const char *test, const char *const *extra)
{
    struct channel_key *k;
    char path[128], err[256];
    int pb = free_port();

    log_init("test", stderr);
    log_set_level(LOG_WARN);
    snprintf(t->dir, sizeof(t->dir), "/tmp/%s.XXXXXX", test);
    ck_assert_ptr_nonnull(mkdtemp(t->dir));
    snprintf(path, sizeof(path), "%s/key", t->dir);
    ck_assert_int_eq(channel_key_generate(&k), 0);
    ck_assert_int_eq(channel_key_write(k, path, err, sizeof(err)), 0);
    channel_key_free(k);
    t->a = node(t->dir, "a", free_port(), extra);
    t->b = node(t->dir, "b", pb, extra);
    snprintf(path, sizeof(path), "127.0.0.1:%d", pb);
    t->pa = peer_connect(t->a, path, err, sizeof(err));
    ck_assert_msg(t->pa != NULL, "%s", err);
    ev_timer_init(&t->tick, on_tick, TWO_NODES_TICK, TWO_NODES_TICK);
    ev_timer_start(t->a->loop, &t->tick);
    ck_assert(two_nodes_spin(t, connected, t));
}

void two_nodes_stop(struct two_nodes *t)
{
    char cmd[128];

    ev_timer_stop(t->b->loop, &t->tick);
    server_destroy(t->a);
    server_destroy(t->b);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
    ck_assert_int_eq(system(cmd), 0);
}
