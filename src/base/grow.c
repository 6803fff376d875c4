/*
 * grow.c - array growth (grow.h).
 *
 * The array's pointer is read and written through memcpy, so one function
 * serves every element type without casting a struct pointer's address to
 * void ** (which C does not promise to work).
 */
#include "grow.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

size_t grow_capacity(size_t cap, size_t n, size_t limit, size_t size)
{
    size_t most, want;

    assert(size > 0 && "grow: element size is 0");
    most = SIZE_MAX / size;
    if (n > most) {
        return 0;
    }
    if (n <= cap) {
        return cap;
    }
    limit = limit < most ? limit : most;
    want = cap != 0 ? cap : n;
    while (want < n) {
        want = want > most / 2 ? most : want * 2;
    }
    if (want > limit) {
        want = limit > n ? limit : n;
    }
    return want;
}

int grow_array_max(void *pp, size_t *cap, size_t n, size_t limit, size_t size)
{
    size_t want;
    void *p, *grown;

    if (n <= *cap) {
        return 0;
    }
    want = grow_capacity(*cap, n, limit, size);
    if (want == 0) {
        return RK_ENOMEM;
    }
    memcpy(&p, pp, sizeof(p));
    grown = realloc(p, want * size);
    if (grown == NULL) {
        return RK_ENOMEM;
    }
    memcpy(pp, &grown, sizeof(grown));
    *cap = want;
    return 0;
}

int grow_array(void *pp, size_t *cap, size_t n, size_t size)
{
    return grow_array_max(pp, cap, n, SIZE_MAX, size);
}
