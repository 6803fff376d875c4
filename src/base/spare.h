/*
 * spare.h - a cache of freed objects of one size, handed out again before
 * the allocator is asked.
 *
 * Objects that a busy node makes and ends by the thousand a second (a
 * peer request in flight, an answer being worked on) come and go in
 * bursts larger than the allocator's per-thread caches, and each one then
 * costs a walk of its bins.  A spare list keeps up to max of them: get
 * returns a zeroed object (as calloc), put keeps it or frees it past max.
 * Not thread-safe: one list belongs to one thread.
 */
#ifndef RINGKV_SPARE_H
#define RINGKV_SPARE_H

#include <stddef.h>

struct spare {
    void *head; /* the kept objects, linked through their first bytes */
    size_t n;   /* how many are kept */
    size_t max;
    size_t size; /* every object's size, at least a pointer's */
};

/* An empty list of objects of size bytes (raised to a pointer's size), keeping at most max. */
void spare_init(struct spare *s, size_t size, size_t max);
/* A zeroed object of s->size bytes, kept or new; NULL when out of memory. */
void *spare_get(struct spare *s);
/* Keep p (from spare_get() of this list) for the next get, or free it when max are kept. */
void spare_put(struct spare *s, void *p);
/* Free every kept object; the list is empty and usable afterwards. */
void spare_free(struct spare *s);

#endif
