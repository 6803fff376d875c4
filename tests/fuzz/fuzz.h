/*
 * fuzz.h - the one entry point every fuzz target defines, in libFuzzer's
 * form, so the same target runs under libFuzzer (`make fuzz` with
 * --enable-fuzzing) and under tests/fuzz/driver.c (`make check`).
 */
#ifndef RINGKV_FUZZ_H
#define RINGKV_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
