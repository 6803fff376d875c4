/*
 * frame.c - length-prefixed frames (frame.h).
 *
 * A frame is found in place: nothing is copied or allocated here, so the
 * caller decides how much it buffers.  The declared length is compared
 * with the caller's maximum as soon as the four header bytes are present,
 * before the caller is asked for a single body byte: a peer that announces
 * a frame larger than the maximum is refused on the header alone.
 */
#include "frame.h"

#include "bytes.h"
#include "error.h"

int frame_parse(const uint8_t *in, size_t len, size_t max, const uint8_t **body, size_t *body_len,
                size_t *used)
{
    uint32_t declared;

    *body = NULL;
    *body_len = 0;
    *used = 0;
    if (len < FRAME_HEADER_BYTES) {
        return 0;
    }
    declared = bytes_get_be32(in);
    if (declared > max) {
        return RK_ETOOBIG;
    }
    if (len - FRAME_HEADER_BYTES < declared) {
        return 0;
    }
    *body = in + FRAME_HEADER_BYTES;
    *body_len = declared;
    *used = FRAME_HEADER_BYTES + (size_t)declared;
    return 1;
}

void frame_put_header(uint8_t out[FRAME_HEADER_BYTES], uint32_t len)
{
    bytes_put_be32(out, len);
}
