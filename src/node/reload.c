/*
 * reload.c - CONFIG SET's and SIGHUP's one path to a running node's
 * settings (reload.h).
 *
 * The candidate settings are the node's with every differing runtime
 * setting copied over; they are checked as a whole (settings_check(), the
 * descriptor limit) before the node's are replaced, so a failed change
 * leaves nothing half done.  The lines naming a changed setting are
 * written whatever log-level says, since log-level may itself be the
 * change and the operator asked for it.
 */
#include "reload.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "error.h"
#include "log.h"
#include "server.h"

int reload_fd_limit(const struct settings *cfg, char *err, size_t err_len)
{
    const char *largest;
    uint64_t need = settings_fd_need(cfg, &largest);
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(err, err_len, "cannot read the descriptor limit: %s", strerror(errno));
        return RK_EINVAL;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
        return 0;
    }
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
        snprintf(err, err_len,
                 "%s: the settings need %llu file descriptors (maxclients %llu + peer-maxconn "
                 "%llu + metrics-maxconn %llu + %d reserved), above this process's hard limit "
                 "%llu; lower %s or raise the limit (ulimit -n, LimitNOFILE=)",
                 largest, (unsigned long long)need, (unsigned long long)cfg->maxclients,
                 (unsigned long long)cfg->peer_maxconn,
                 (unsigned long long)(cfg->metrics.set ? cfg->metrics_maxconn : 0),
                 SETTINGS_FD_RESERVE, (unsigned long long)rl.rlim_max, largest);
        return RK_EINVAL;
    }
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        snprintf(err, err_len, "%s: cannot raise the descriptor limit to %llu: %s", largest,
                 (unsigned long long)need, strerror(errno));
        return RK_EINVAL;
    }
    return 0;
}

/*
 * cand = the node's settings with next's runtime values.  Start-only
 * differences are logged here and counted.
 */
static size_t reload_candidate(const struct server *n, const struct settings *next,
                               const char *source, struct settings *cand)
{
    size_t refused = 0;

    *cand = n->cfg;
    for (size_t i = 0; i < settings_defs_count; i++) {
        const struct settings_def *d = &settings_defs[i];
        if (settings_same(&n->cfg, next, d)) {
            continue;
        }
        if (!d->runtime) {
            log_emit(LOG_WARN, "config_refused", "setting=%s reason=start-only %s", d->name,
                     source);
            refused++;
            continue;
        }
        settings_copy(cand, next, d);
    }
    return refused;
}

int reload_apply(struct server *n, const struct settings *next, const char *source,
                 size_t *refused_out, char *err, size_t err_len)
{
    struct settings cand, old;
    size_t refused = reload_candidate(n, next, source, &cand);
    int rc;

    if (refused_out != NULL) {
        *refused_out = refused;
    }
    rc = settings_check(&cand, err, err_len);
    if (rc == 0) {
        rc = reload_fd_limit(&cand, err, err_len);
    }
    if (rc != 0) {
        return RK_EINVAL;
    }
    old = n->cfg;
    n->cfg = cand;
    log_set_level(cand.log_level);
    for (size_t i = 0; i < settings_defs_count; i++) {
        if (!settings_same(&old, &cand, &settings_defs[i])) {
            log_emit(LOG_INFO, "config_set", "setting=%s %s", settings_defs[i].name, source);
        }
    }
    return 0;
}

/*
 * A reload reads only a non-empty regular file: opening a FIFO would stall
 * the loop until a writer comes, and an empty file is most often one being
 * rewritten in place (truncated, not yet written), which would send every
 * setting it held back to its default.
 */
static int reload_file_ok(const char *path, char *err, size_t err_len)
{
    struct stat st;

    if (path == NULL) {
        return 0;
    }
    if (stat(path, &st) != 0) {
        snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
        return RK_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, err_len, "%s: not a regular file; a reload reads only a regular file", path);
        return RK_EINVAL;
    }
    if (st.st_size == 0) {
        snprintf(err, err_len,
                 "%s: empty; a file being rewritten in place is not applied (write the new "
                 "file beside it and rename it over the old one)",
                 path);
        return RK_EINVAL;
    }
    return 0;
}

void reload_from_args(struct server *n, int argc, char **argv)
{
    struct settings next;
    struct settings_cli cli;
    char err[512], quoted[600], file_buf[SETTINGS_PATH_MAX + 64];
    const char *file;
    size_t refused = 0;
    int rc = reload_file_ok(n->config_file, err, sizeof(err));

    memset(&cli, 0, sizeof(cli));
    cli.settings_file = n->config_file;
    if (rc == 0) {
        rc = settings_from_args(&next, argc, argv, &cli, err, sizeof(err));
    }
    if (rc == 0) {
        rc = settings_check(&next, err, sizeof(err)); /* the file as a whole, as at start */
    }
    if (rc == 0) {
        rc = reload_apply(n, &next, "source=SIGHUP", &refused, err, sizeof(err));
    }
    file = cli.settings_file != NULL ? cli.settings_file : "none";
    file = log_quote(file_buf, sizeof(file_buf), file, strlen(file));
    if (rc != 0) {
        log_emit(LOG_ERROR, "config_reload_failed", "file=%s error=%s", file,
                 log_quote(quoted, sizeof(quoted), err, strlen(err)));
        return;
    }
    log_emit(LOG_INFO, "config_reload", "file=%s refused=%zu", file, refused);
}
