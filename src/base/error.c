/*
 * error.c - phrases for the codes of error.h.
 */
#include "error.h"

#include <stddef.h>

static const char *const rk_error_text[] = {
    [0] = "success",
    [-RK_ENOMEM] = "out of memory",
    [-RK_EINVAL] = "invalid value",
    [-RK_ERANGE] = "value out of range",
    [-RK_EEMPTY] = "the ring is empty",
    [-RK_EDUP] = "duplicate name",
    [-RK_ESYNTAX] = "malformed input",
    [-RK_EIO] = "input/output error",
    [-RK_ENOTFOUND] = "not found",
    [-RK_EMISMATCH] = "inputs do not match",
    [-RK_ETOOBIG] = "limit exceeded",
    [-RK_ENOSPC] = "no space left: the store or its disk is full",
    [-RK_ECLOSED] = "closed (the connection was lost, or the node is shutting down)",
    [-RK_EAUTH] = "authentication failed",
    [-RK_ETIMEOUT] = "timed out",
    [-RK_EDISK] = "the disk failed to flush; writes are refused until a restart",
    [-RK_ECONTEXT] = "the context names versions this node never issued",
    [-RK_ENOREPLICAS] = "not enough replicas reachable",
    [-RK_ETRYAGAIN] = "too few replicas answered in time",
    [-RK_ECLOCKFULL] = "a version vector is full",
};

const char *rk_strerror(int err)
{
    if (err > 0 || err < RK_ERROR_MIN || rk_error_text[-err] == NULL) {
        return "unknown error";
    }
    return rk_error_text[-err];
}
