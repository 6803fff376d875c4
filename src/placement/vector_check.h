/*
 * vectors.h - checks a placement vector file (PLACEMENT.md section 7)
 * against this build's placement.
 *
 * Every hash line and every key line is one check that passes or fails.  A
 * malformed line, an invalid member, an rf out of range or an empty ring is
 * reported with its line number and counted as a failure; the key lines of a
 * case that could not be built are counted as failures too, since nothing
 * about them was verified.  Checking never stops early: the report lists
 * every problem of the file.
 */
#ifndef RINGKV_VECTOR_CHECK_H
#define RINGKV_VECTOR_CHECK_H

#include <stddef.h>
#include <stdio.h>

struct vector_check_result {
    size_t passed;
    size_t failed;
    size_t cases; /* cases seen */
};

/*
 * Check the vector file held in buf[0..len) (borrowed; it need not be
 * NUL-terminated).  Each failure is written to report, when not NULL, as one
 * line "name:LINE: message".  Returns 0 once the whole file was checked, so
 * the verdict is in *res; RK_ENOMEM when memory ran out.
 */
int vector_check_file(const char *buf, size_t len, const char *name, FILE *report,
                      struct vector_check_result *res);

#endif
