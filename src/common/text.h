/* text.h: a growable string buffer used by printers, code emitters and reports. */
#ifndef FV_COMMON_TEXT_H
#define FV_COMMON_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

typedef struct fv_text {
    char *data;      /* NUL-terminated; NULL until the first append */
    size_t length;   /* bytes before the NUL */
    size_t capacity;
    bool failed;     /* an allocation failed; later appends are ignored */
} fv_text;

/* Appends formatted text.  On allocation failure sets `failed` and keeps what
 * was there; check it once with fv_text_status at the end. */
void fv_text_printf(fv_text *text, const char *format, ...) __attribute__((format(printf, 2, 3)));
void fv_text_vprintf(fv_text *text, const char *format, va_list args);

/* Appends `size` raw bytes. Same failure rule as fv_text_printf. */
void fv_text_append(fv_text *text, const char *bytes, size_t size);

/* The text so far; "" for an empty buffer (never NULL). */
const char *fv_text_str(const fv_text *text);

/* FV_OK, or FV_ERR_NOMEM if any append failed. */
fv_status fv_text_status(const fv_text *text);

/* Forgets the content but keeps the allocation. */
void fv_text_reset(fv_text *text);

/* Releases the buffer. */
void fv_text_free(fv_text *text);

/* Returns the buffer to the caller (who frees it) and leaves `text` empty.
 * Returns NULL if an append failed. */
char *fv_text_take(fv_text *text);

#endif
