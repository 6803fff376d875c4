/*
 * fuzz_vectors.c - fuzz target for the placement vector file checker, which
 * reads files a user hands to `ringkv placement check`.
 */
#include <stdio.h>

#include "fuzz.h"
#include "vector_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vector_check_result res;

    (void)vector_check_file((const char *)data, size, "fuzz", NULL, &res);
    return 0;
}
