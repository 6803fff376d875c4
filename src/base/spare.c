/*
 * spare.c - a cache of freed objects of one size (spare.h).
 */
#include "spare.h"

#include <stdlib.h>
#include <string.h>

void spare_init(struct spare *s, size_t size, size_t max)
{
    s->head = NULL;
    s->n = 0;
    s->max = max;
    s->size = size < sizeof(void *) ? sizeof(void *) : size;
}

void *spare_get(struct spare *s)
{
    void *p = s->head;

    if (p == NULL) {
        return calloc(1, s->size);
    }
    memcpy(&s->head, p, sizeof(void *));
    s->n--;
    memset(p, 0, s->size);
    return p;
}

void spare_put(struct spare *s, void *p)
{
    if (p == NULL) {
        return;
    }
    if (s->n >= s->max) {
        free(p);
        return;
    }
    memcpy(p, &s->head, sizeof(void *));
    s->head = p;
    s->n++;
}

void spare_free(struct spare *s)
{
    while (s->head != NULL) {
        void *p = s->head;
        memcpy(&s->head, p, sizeof(void *));
        free(p);
    }
    s->n = 0;
}
