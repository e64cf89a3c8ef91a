/* wire.c: frames of the service's messages: building, parsing, writing. */
#include "service/wire.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

void fv_wire_put(fv_text *buffer, const char *tag, const void *payload, size_t length)
{
    if (length > FV_WIRE_MAX_PAYLOAD || strlen(tag) != 4) {
        buffer->failed = true;
        return;
    }
    uint8_t header[FV_WIRE_HEADER_BYTES];
    uint32_t length32 = (uint32_t)length;
    memcpy(header, tag, 4);
    memcpy(header + 4, &length32, 4);
    fv_text_append(buffer, (const char *)header, sizeof header);
    if (length > 0)
        fv_text_append(buffer, payload, length);
}

void fv_wire_put_text(fv_text *buffer, const char *tag, const char *text)
{
    fv_wire_put(buffer, tag, text, strlen(text));
}

void fv_wire_put_int(fv_text *buffer, const char *tag, int32_t value)
{
    fv_wire_put(buffer, tag, &value, sizeof value);
}

void fv_wire_put_failure(fv_text *buffer, fv_status status, const char *message)
{
    size_t length = strlen(message);
    if (length > FV_WIRE_MAX_PAYLOAD - 4)
        length = FV_WIRE_MAX_PAYLOAD - 4;
    int32_t code = (int32_t)status;
    uint8_t header[FV_WIRE_HEADER_BYTES];
    uint32_t length32 = (uint32_t)(length + sizeof code);
    memcpy(header, FV_WIRE_FAIL, 4);
    memcpy(header + 4, &length32, 4);
    fv_text_append(buffer, (const char *)header, sizeof header);
    fv_text_append(buffer, (const char *)&code, sizeof code);
    fv_text_append(buffer, message, length);
}

fv_status fv_wire_raise_failure(const fv_wire_frame *frame, const char *who)
{
    int32_t code = 0;
    if (!fv_wire_is(frame, FV_WIRE_FAIL) || frame->length < sizeof code)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: a %s frame of %u bytes", frame->tag,
                frame->length);
    memcpy(&code, frame->payload, sizeof code);
    fv_status status = code > FV_OK && code < FV_STATUS_COUNT ? (fv_status)code
                                                               : FV_ERR_INTERNAL;
    int length = (int)(frame->length - sizeof code);
    return fv_error_raise(status, __FILE__, __LINE__, "%s: %.*s", who, length,
                          (const char *)frame->payload + sizeof code);
}

bool fv_wire_is(const fv_wire_frame *frame, const char *tag)
{
    return memcmp(frame->tag, tag, 4) == 0;
}

static bool printable_tag(const uint8_t *tag)
{
    for (int i = 0; i < 4; i++)
        if (tag[i] < 0x20 || tag[i] > 0x7e)
            return false;
    return true;
}

fv_status fv_wire_next(const uint8_t *data, size_t size, size_t *offset, fv_wire_frame *frame,
                       bool *complete)
{
    *complete = false;
    if (*offset > size || size - *offset < FV_WIRE_HEADER_BYTES)
        return FV_OK;
    const uint8_t *header = data + *offset;
    uint32_t length;
    memcpy(&length, header + 4, 4);
    if (!printable_tag(header) || length > FV_WIRE_MAX_PAYLOAD)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: a frame header with tag %02x%02x%02x%02x "
                "and length %u", header[0], header[1], header[2], header[3], length);
    if (size - *offset - FV_WIRE_HEADER_BYTES < length)
        return FV_OK;
    memcpy(frame->tag, header, 4);
    frame->tag[4] = '\0';
    frame->payload = header + FV_WIRE_HEADER_BYTES;
    frame->length = length;
    *offset += FV_WIRE_HEADER_BYTES + (size_t)length;
    *complete = true;
    return FV_OK;
}

void fv_wire_text(const fv_wire_frame *frame, char *text, size_t size)
{
    if (size == 0)
        return;
    size_t length = frame->length < size - 1 ? frame->length : size - 1;
    memcpy(text, frame->payload, length);
    text[length] = '\0';
}

fv_status fv_wire_int(const fv_wire_frame *frame, int32_t *value)
{
    if (frame->length != sizeof *value)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: %s frame of %u bytes, expected 4",
                frame->tag, frame->length);
    memcpy(value, frame->payload, sizeof *value);
    return FV_OK;
}

fv_status fv_wire_write_all(int fd, const void *data, size_t size)
{
    const uint8_t *bytes = data;
    while (size > 0) {
        ssize_t written = write(fd, bytes, size);
        if (written < 0 && errno == EINTR)
            continue;
        if (written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd wait = {.fd = fd, .events = POLLOUT};
            if (poll(&wait, 1, 1000) < 0 && errno != EINTR)
                FV_FAIL(FV_ERR_IO, "waiting to write a message: %s", strerror(errno));
            continue;
        }
        if (written < 0)
            FV_FAIL(FV_ERR_IO, "writing a message: %s", strerror(errno));
        bytes += written;
        size -= (size_t)written;
    }
    return FV_OK;
}
