/* wire.h: the framed messages of the service: between an MPI rank and its GPU
 * worker (over pipes) and between ranks (one MPI message holds any number of
 * frames).  docs/service.md describes every frame.
 *
 * A frame is an 8-byte header, a 4-character ASCII tag and the payload length
 * (uint32, host byte order: both ends are the same program on one machine, or
 * MPI ranks of one homogeneous job), followed by the payload.  Payloads are
 * text or fixed-size structs copied byte for byte; readers copy them out
 * (payloads are not aligned) and check their sizes and NUL terminators.
 */
#ifndef FV_SERVICE_WIRE_H
#define FV_SERVICE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "common/text.h"

#define FV_WIRE_HEADER_BYTES 8
#define FV_WIRE_MAX_PAYLOAD (64u << 20) /* a larger length is a corrupt stream */

/* Frame tags (4 characters each). */
#define FV_WIRE_HELLO "HELO"    /* worker -> rank: fv_worker_hello, once, when ready */
#define FV_WIRE_CASE "CASE"     /* rank -> worker, rank 0 -> rank: an fv_assignment */
#define FV_WIRE_QUIT "QUIT"     /* rank -> worker: exit now */
#define FV_WIRE_STAGE "STAG"    /* worker -> rank: text, the stage the current case reached */
#define FV_WIRE_KERNEL "KERN"   /* a kernel of the current case: fv_wire_kernel + source */
#define FV_WIRE_REPORT "RPRT"   /* text: comparison report of the current case's failures */
#define FV_WIRE_RESULT "RSLT"   /* fv_wire_result + samples: ends one case's outcome */
#define FV_WIRE_FAIL "FAIL"     /* int32 fv_status + text: a harness failure; the sender stops */
#define FV_WIRE_WANT "WANT"     /* rank -> rank 0: send me more cases */
#define FV_WIRE_NONE "NONE"     /* rank 0 -> rank: no more cases; finish and say BYE */
#define FV_WIRE_STOP "STOP"     /* rank 0 -> rank: int32 exit status; stop at once */
#define FV_WIRE_BYE "BYE "      /* rank -> rank 0: int32 exit status; this rank is done */

/* One frame found in a buffer; `payload` points into that buffer. */
typedef struct fv_wire_frame {
    char tag[5];              /* NUL-terminated */
    const uint8_t *payload;
    uint32_t length;
} fv_wire_frame;

/* Appends a frame to `buffer` (an fv_text used as a byte buffer).  Payloads
 * longer than FV_WIRE_MAX_PAYLOAD are a caller bug: they set buffer->failed,
 * which fv_text_status reports (as it does allocation failures). */
void fv_wire_put(fv_text *buffer, const char *tag, const void *payload, size_t length);

/* Appends a frame whose payload is the text `text` (without its NUL). */
void fv_wire_put_text(fv_text *buffer, const char *tag, const char *text);

/* Appends a frame whose payload is one int32. */
void fv_wire_put_int(fv_text *buffer, const char *tag, int32_t value);

/* True if the frame has tag `tag`. */
bool fv_wire_is(const fv_wire_frame *frame, const char *tag);

/* Reads the frame at data[*offset ..].  If a whole frame is there, fills
 * *frame, advances *offset past it and sets *complete; if only part of one
 * is there, leaves *offset and clears *complete.  FV_ERR_CORRUPT if the
 * header is not a frame header (a tag of other than printable ASCII, or a
 * length above FV_WIRE_MAX_PAYLOAD). */
fv_status fv_wire_next(const uint8_t *data, size_t size, size_t *offset, fv_wire_frame *frame,
                       bool *complete);

/* Copies a text payload into `text` (capacity `size`, NUL-terminated,
 * truncated). */
void fv_wire_text(const fv_wire_frame *frame, char *text, size_t size);

/* Appends a FAIL frame: `status` and `message`. */
void fv_wire_put_failure(fv_text *buffer, fv_status status, const char *message);

/* Re-raises the failure a FAIL frame carries (its status, "who: message"),
 * and returns that status (FV_ERR_CORRUPT for a malformed frame). */
fv_status fv_wire_raise_failure(const fv_wire_frame *frame, const char *who);

/* Reads an int32 payload.  FV_ERR_CORRUPT if the payload is not 4 bytes. */
fv_status fv_wire_int(const fv_wire_frame *frame, int32_t *value);

/* Writes all `size` bytes to `fd`, retrying after EINTR and short writes
 * (a non-blocking fd is waited for with poll).  FV_ERR_IO with the reason
 * (EPIPE when the reader has gone; SIGPIPE must be ignored or blocked). */
fv_status fv_wire_write_all(int fd, const void *data, size_t size);

#endif
