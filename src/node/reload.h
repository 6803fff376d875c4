/*
 * reload.h - changing a running node's settings: CONFIG SET and SIGHUP go
 * through one function, reload_apply(), so both refuse and apply alike.
 *
 * Only the settings the table marks runtime (settings.h, .runtime) may
 * change while the node runs: log-level, maxclients, timeout and
 * requirepass.  Every other setting is start-only: the listeners, the store,
 * the ring and the peers were built from it once.  A SIGHUP re-reads the
 * config file with the command line's flags over it, exactly as at start
 * (the file is the truth: a value changed by CONFIG SET goes back to the
 * file's); each changed runtime setting is applied and logged
 * (event=config_set setting=NAME source=...), each changed start-only one
 * is refused and logged (event=config_refused setting=NAME), and a file
 * that does not load or check changes nothing (event=config_reload_failed).
 * So that a file being rewritten in place is never applied in part, a
 * reload refuses a config file that is empty or not a regular file, and
 * settings_load_file() one that changed while it was read: replace the
 * file by writing a new one beside it and renaming it over the old one.
 */
#ifndef RINGKV_RELOAD_H
#define RINGKV_RELOAD_H

#include <stddef.h>

#include "settings.h"

struct server;

/*
 * Make the node's settings next's, for the runtime settings that differ;
 * source names who asked, for the log ("client=7", "signal=SIGHUP").  A
 * start-only setting that differs is left as it is, with a log line; if
 * refused_out is not NULL it gets how many were.  Returns 0, or RK_EINVAL
 * with one line in err when the settings that would result do not check
 * (settings_check()) or need more file descriptors than the process can
 * have: then nothing changes.
 */
int reload_apply(struct server *n, const struct settings *next, const char *source,
                 size_t *refused_out, char *err, size_t err_len);

/*
 * Raise this process's soft descriptor limit to what cfg needs
 * (settings_fd_need()), never past the hard limit, which only root may
 * raise; RK_EINVAL with one line naming the setting to lower when it
 * cannot.  At start and before a reload raises a connection limit.
 */
int reload_fd_limit(const struct settings *cfg, char *err, size_t err_len);

/*
 * SIGHUP: settings_from_args() over the arguments the node started with
 * (the config file again, then the flags), then reload_apply().  The
 * outcome is logged; nothing is returned.
 */
void reload_from_args(struct server *n, int argc, char **argv);

#endif
