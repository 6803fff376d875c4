/*
 * grow.h - the one way an array grows: to hold at least n elements,
 * doubling its capacity, with the multiplication checked.
 *
 * Doubling makes n appends cost O(n) copied elements in all.  The
 * capacity times the element size is checked against SIZE_MAX before
 * anything is allocated, so a count from outside can never wrap the
 * size into a small allocation.  A caller that wants a first capacity
 * larger than one append asks for it: grow_array(..., need < 16 ? 16 :
 * need, ...) only matters while the array is empty.
 */
#ifndef RINGKV_GROW_H
#define RINGKV_GROW_H

#include <stddef.h>

/*
 * The capacity, in elements of size bytes, that an array of cap elements
 * grows to so that it holds n: cap when it already does; else cap doubled
 * (n when cap is 0) until it holds n, but not past limit unless n needs
 * it, and never past SIZE_MAX / size.  0 when n elements of size bytes do
 * not fit in size_t (and when n and cap are both 0).  size is above 0.
 */
size_t grow_capacity(size_t cap, size_t n, size_t limit, size_t size);

/*
 * Make the array whose pointer is at pp (the address of the caller's
 * pointer, e.g. &v->items; the array from malloc or NULL) hold at least
 * n elements of size bytes; *cap is its capacity in elements.  The new
 * capacity is grow_capacity(*cap, n, limit, size).  Elements already
 * there keep their values, new ones are uninitialised.  Returns 0 with
 * the pointer and *cap updated, or RK_ENOMEM (the allocation failed, or
 * the size overflows) with both unchanged.
 */
int grow_array_max(void *pp, size_t *cap, size_t n, size_t limit, size_t size);

/* grow_array_max() without a limit. */
int grow_array(void *pp, size_t *cap, size_t n, size_t size);

#endif
