/*
 * fuzz_vclock.c - fuzz target for vclock_decode(), which reads the clock of
 * every record on disk and of every version a peer sends.
 *
 * Beyond "no crash", it checks that the encoding is canonical: whatever
 * decodes must encode back to exactly the bytes it was decoded from, so two
 * replicas that hold the same clock hold the same bytes.  A mismatch aborts,
 * which both libFuzzer and the replay driver report as a failure.  And
 * vclock_check() must give the decoder's verdict and length on every input.
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz.h"
#include "vclock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vclock vc;
    size_t used = 0, checked = 0;
    uint8_t *out;
    int rc, want;

    vclock_init(&vc);
    want = vclock_decode(data, size, &used, &vc);
    rc = vclock_check(data, size, &checked);
    if (want != RK_ENOMEM && (rc != want || (rc == 0 && checked != used))) {
        abort(); /* the check alone gives the decoder's verdict and length */
    }
    if (want != 0) {
        vclock_deinit(&vc);
        return 0;
    }
    if (used > size || vclock_encoded_size(&vc) != used) {
        abort();
    }
    out = malloc(used);
    if (out == NULL) {
        abort();
    }
    if (vclock_encode(&vc, out) != used || memcmp(out, data, used) != 0) {
        abort();
    }
    free(out);
    vclock_deinit(&vc);
    return 0;
}
