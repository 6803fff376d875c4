/*
 * error.h - the project's one error enum.
 *
 * Every fallible function in ringkv returns int: 0 on success or one of the
 * negative codes below.  rk_strerror() turns a code into a short phrase for
 * logs and CLI messages; callers add the context (the value, the line, the
 * peer) themselves, where the error is handled.
 */
#ifndef RINGKV_ERROR_H
#define RINGKV_ERROR_H

enum rk_error {
    RK_OK = 0,
    RK_ENOMEM = -1,       /* an allocation failed */
    RK_EINVAL = -2,       /* an argument or a value is not valid */
    RK_ERANGE = -3,       /* a number is outside its documented bounds */
    RK_EEMPTY = -4,       /* the ring has no members, so nothing has an owner */
    RK_EDUP = -5,         /* the same name was given twice */
    RK_ESYNTAX = -6,      /* input does not follow its grammar */
    RK_EIO = -7,          /* an operating-system read or write failed */
    RK_ENOTFOUND = -8,    /* the named thing does not exist */
    RK_EMISMATCH = -9,    /* two inputs that must agree do not */
    RK_ETOOBIG = -10,     /* input exceeds a configured limit */
    RK_ENOSPC = -11,      /* the store or its disk is full: writes fail, reads work */
    RK_ECLOSED = -12,     /* the store or connection closed (lost, or shutting down) */
    RK_EAUTH = -13,       /* a peer failed authentication, or a frame did not verify */
    RK_ETIMEOUT = -14,    /* no answer within the time allowed */
    RK_EDISK = -15,       /* the disk failed to flush: writes are refused until a restart */
    RK_ECONTEXT = -16,    /* a write's context names versions this node never issued */
    RK_ENOREPLICAS = -17, /* too few replicas of a key are reachable to try a request */
    RK_ETRYAGAIN = -18,   /* a request reached replicas, but too few answered in time */
    RK_ECLOCKFULL = -19, /* a version vector holds VCLOCK_ENTRIES_MAX entries: no new writer fits */
    RK_ERROR_MIN = -19
};

/* A static, human-readable phrase for err; never NULL, also for unknown codes. */
const char *rk_strerror(int err);

#endif
