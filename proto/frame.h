/*
 * frame.h - length-prefixed frames, the unit of everything sent between
 * nodes.
 *
 *   u32 length (big-endian)    bytes of the body that follows
 *   length bytes body
 *
 * The length is checked against the receiver's frame maximum before a
 * single body byte is read or buffered: a larger frame is an error and the
 * connection is dropped.  During the handshake a body is a msgpack
 * message in the clear; afterwards it is a sealed message (channel.h).
 */
#ifndef RINGKV_FRAME_H
#define RINGKV_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HEADER_BYTES 4
/* Default frame maximum: the largest value (16 MiB) plus room for its key and version. */
#define FRAME_MAX_DEFAULT (17u * 1024 * 1024)
/* The smallest frame maximum a node accepts (frame-max): every node reads frames this large. */
#define FRAME_MAX_MIN (64u * 1024)

/*
 * Find one frame at the start of in[0..len).  Returns 1 with *body,
 * *body_len and *used (header plus body) set; 0 when more bytes are needed;
 * RK_ETOOBIG when the declared length exceeds max.
 */
int frame_parse(const uint8_t *in, size_t len, size_t max, const uint8_t **body, size_t *body_len,
                size_t *used);

/* Write a frame header for a body of len bytes. */
void frame_put_header(uint8_t out[FRAME_HEADER_BYTES], uint32_t len);

#endif
