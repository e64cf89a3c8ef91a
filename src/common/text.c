/* text.c: growable string buffer. */
#include "common/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(fv_text *text, size_t extra)
{
    if (text->failed)
        return false;
    size_t needed = text->length + extra + 1;
    if (needed <= text->capacity)
        return true;
    size_t capacity = text->capacity ? text->capacity : 256;
    while (capacity < needed)
        capacity *= 2;
    char *grown = realloc(text->data, capacity);
    if (grown == NULL) {
        text->failed = true;
        return false;
    }
    text->data = grown;
    text->capacity = capacity;
    return true;
}

void fv_text_vprintf(fv_text *text, const char *format, va_list args)
{
    va_list copy;
    va_copy(copy, args);
    int needed = vsnprintf(NULL, 0, format, copy);
    va_end(copy);
    if (needed < 0 || !reserve(text, (size_t)needed))
        return;
    vsnprintf(text->data + text->length, (size_t)needed + 1, format, args);
    text->length += (size_t)needed;
}

void fv_text_printf(fv_text *text, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fv_text_vprintf(text, format, args);
    va_end(args);
}

void fv_text_append(fv_text *text, const char *bytes, size_t size)
{
    if (!reserve(text, size))
        return;
    memcpy(text->data + text->length, bytes, size);
    text->length += size;
    text->data[text->length] = '\0';
}

const char *fv_text_str(const fv_text *text) { return text->data ? text->data : ""; }

fv_status fv_text_status(const fv_text *text)
{
    if (text->failed)
        FV_FAIL(FV_ERR_NOMEM, "out of memory while building text");
    return FV_OK;
}

void fv_text_reset(fv_text *text)
{
    text->length = 0;
    if (text->data)
        text->data[0] = '\0';
}

void fv_text_free(fv_text *text)
{
    free(text->data);
    *text = (fv_text){0};
}

char *fv_text_take(fv_text *text)
{
    if (text->failed) {
        fv_text_free(text);
        return NULL;
    }
    char *data = text->data ? text->data : calloc(1, 1);
    *text = (fv_text){0};
    return data;
}
