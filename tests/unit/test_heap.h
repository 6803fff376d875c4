/*
 * test_heap.h - the heap in use, for tests that bound what a structure
 * keeps: glibc's count of the bytes it has handed out and not taken back
 * (mallinfo2(): chunks of the heap and mmapped ones, headers included).
 *
 * Under a sanitizer the sanitizer's allocator serves malloc and glibc
 * counts nothing: heap_measurable() says whether a 1 MiB allocation
 * shows, and a test that measures skips its bounds when it does not.
 */
#ifndef RINGKV_TEST_HEAP_H
#define RINGKV_TEST_HEAP_H

#include <malloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/* An allocation the compiler cannot leave out: heap_in_use() must see it. */
static void *volatile heap_probe;

static inline size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

static inline bool heap_measurable(void)
{
    size_t before = heap_in_use(), grew;

    heap_probe = malloc(1 << 20);
    grew = heap_in_use() - before;
    free(heap_probe);
    return heap_probe != NULL && grew >= (1 << 20);
}

#endif
