/* mpi_session.c: MPI start-up, node-local ranks and checked messages. */
#include "service/mpi_session.h"

#include <limits.h>
#include <poll.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

enum { FRAMES_TAG = 17, CLOSE_POLL_MS = 2 };

/* Messages sent with MPI_Isend, kept until MPI has delivered them. */
struct fv_mpi_outbox {
    MPI_Request *requests;
    char **buffers;
    int count, capacity;
};

static fv_status mpi_failure(int code, const char *what)
{
    char message[MPI_MAX_ERROR_STRING] = "";
    int length = 0;
    if (MPI_Error_string(code, message, &length) != MPI_SUCCESS)
        snprintf(message, sizeof message, "error %d", code);
    return fv_error_raise(FV_ERR_MPI, __FILE__, __LINE__, "MPI failed %s: %s", what, message);
}

#define MPI_CHECK(call, ...)                                                   \
    do {                                                                       \
        int mpi_code_ = (call);                                                \
        if (mpi_code_ != MPI_SUCCESS) {                                        \
            char mpi_what_[256];                                               \
            snprintf(mpi_what_, sizeof mpi_what_, __VA_ARGS__);                \
            return mpi_failure(mpi_code_, mpi_what_);                          \
        }                                                                      \
    } while (0)

static bool has_variable(const char *name)
{
    const char *value = getenv(name);
    return value != NULL && value[0] != '\0';
}

bool fv_mpi_launched(void)
{
    const char *forced = getenv("FV_MPI");
    if (forced != NULL && (strcmp(forced, "0") == 0 || strcmp(forced, "1") == 0))
        return forced[0] == '1';
    return has_variable("OMPI_COMM_WORLD_SIZE") || has_variable("PMIX_RANK") ||
           has_variable("PMI_SIZE");
}

static fv_status find_local_rank(fv_mpi *mpi)
{
    MPI_Comm local;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, mpi->rank,
                                  MPI_INFO_NULL, &local),
              "splitting the ranks by node");
    int rank_status = MPI_Comm_rank(local, &mpi->local_rank);
    int size_status = MPI_Comm_size(local, &mpi->local_size);
    int free_status = MPI_Comm_free(&local);
    MPI_CHECK(rank_status, "reading the node-local rank");
    MPI_CHECK(size_status, "reading the node-local size");
    MPI_CHECK(free_status, "freeing the node communicator");
    return FV_OK;
}

fv_status fv_mpi_open(int *argc, char ***argv, fv_mpi *mpi)
{
    memset(mpi, 0, sizeof *mpi);
    mpi->size = 1;
    mpi->local_size = 1;
    if (!fv_mpi_launched())
        return FV_OK;
    int initialized = 0;
    MPI_CHECK(MPI_Initialized(&initialized), "asking whether MPI is initialized");
    if (!initialized) {
        int code = MPI_Init(argc, argv);
        if (code != MPI_SUCCESS)
            FV_FAIL(FV_ERR_MPI, "MPI_Init failed (error %d)", code);
        mpi->initialized = true;
    }
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
              "setting the error handler");
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &mpi->rank), "reading the rank");
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &mpi->size), "reading the number of ranks");
    FV_TRY(find_local_rank(mpi));
    return FV_OK;
}

static void free_outbox(fv_mpi *mpi)
{
    fv_mpi_outbox *outbox = mpi->outbox;
    if (outbox == NULL)
        return;
    for (int i = 0; i < outbox->count; i++)
        free(outbox->buffers[i]);
    free(outbox->requests);
    free(outbox->buffers);
    free(outbox);
    mpi->outbox = NULL;
}

fv_status fv_mpi_close(fv_mpi *mpi, double wait_s)
{
    if (!mpi->initialized) {
        free_outbox(mpi);
        return FV_OK;
    }
    int pending = 0;
    double deadline = fv_monotonic_seconds() + wait_s;
    for (;;) {
        FV_TRY(fv_mpi_progress(mpi, &pending));
        if (pending == 0 || fv_monotonic_seconds() >= deadline)
            break;
        poll(NULL, 0, CLOSE_POLL_MS);
    }
    if (pending > 0)
        FV_FAIL(FV_ERR_IO, "%d messages from rank %d were never received", pending, mpi->rank);
    free_outbox(mpi);
    mpi->initialized = false;
    MPI_CHECK(MPI_Finalize(), "finalizing");
    return FV_OK;
}

void fv_mpi_abort(const fv_mpi *mpi, int exit_code)
{
    if (mpi->initialized)
        MPI_Abort(MPI_COMM_WORLD, exit_code);
}

static fv_status grow_outbox(fv_mpi *mpi)
{
    if (mpi->outbox == NULL) {
        mpi->outbox = calloc(1, sizeof *mpi->outbox);
        FV_CHECK_ALLOC(mpi->outbox);
    }
    fv_mpi_outbox *outbox = mpi->outbox;
    if (outbox->count < outbox->capacity)
        return FV_OK;
    int capacity = outbox->capacity ? 2 * outbox->capacity : 16;
    MPI_Request *requests = realloc(outbox->requests, sizeof *requests * (size_t)capacity);
    FV_CHECK_ALLOC(requests);
    outbox->requests = requests;
    char **buffers = realloc(outbox->buffers, sizeof *buffers * (size_t)capacity);
    FV_CHECK_ALLOC(buffers);
    outbox->buffers = buffers;
    outbox->capacity = capacity;
    return FV_OK;
}

fv_status fv_mpi_send(fv_mpi *mpi, int destination, fv_text *frames)
{
    if (frames->length > INT_MAX)
        FV_FAIL(FV_ERR_INTERNAL, "a message of %zu bytes to rank %d is too large",
                frames->length, destination);
    FV_TRY(fv_text_status(frames));
    FV_TRY(grow_outbox(mpi));
    int length = (int)frames->length;
    char *bytes = fv_text_take(frames);
    FV_CHECK_ALLOC(bytes);
    fv_mpi_outbox *outbox = mpi->outbox;
    int code = MPI_Isend(bytes, length, MPI_BYTE, destination, FRAMES_TAG, MPI_COMM_WORLD,
                         &outbox->requests[outbox->count]);
    if (code != MPI_SUCCESS) {
        free(bytes);
        char what[96];
        snprintf(what, sizeof what, "sending %d bytes from rank %d to rank %d", length,
                 mpi->rank, destination);
        return mpi_failure(code, what);
    }
    outbox->buffers[outbox->count++] = bytes;
    return FV_OK;
}

fv_status fv_mpi_progress(fv_mpi *mpi, int *pending)
{
    fv_mpi_outbox *outbox = mpi->outbox;
    int kept = 0;
    for (int i = 0; outbox != NULL && i < outbox->count; i++) {
        int done = 0;
        MPI_CHECK(MPI_Test(&outbox->requests[i], &done, MPI_STATUS_IGNORE),
                  "completing a message from rank %d", mpi->rank);
        if (done) {
            free(outbox->buffers[i]);
            continue;
        }
        outbox->requests[kept] = outbox->requests[i];
        outbox->buffers[kept++] = outbox->buffers[i];
    }
    if (outbox != NULL)
        outbox->count = kept;
    if (pending != NULL)
        *pending = kept;
    return FV_OK;
}

fv_status fv_mpi_poll(const fv_mpi *mpi, int source, fv_text *frames, int *from,
                      bool *received)
{
    *received = false;
    if (mpi->size < 2)
        return FV_OK;
    int flag = 0;
    MPI_Status probe;
    int wanted = source < 0 ? MPI_ANY_SOURCE : source;
    MPI_CHECK(MPI_Iprobe(wanted, FRAMES_TAG, MPI_COMM_WORLD, &flag, &probe),
              "probing for messages on rank %d", mpi->rank);
    if (!flag)
        return FV_OK;
    int count = 0;
    MPI_CHECK(MPI_Get_count(&probe, MPI_BYTE, &count), "sizing a message");
    fv_text_reset(frames);
    if (count > 0) {
        char *zeros = calloc((size_t)count, 1);
        FV_CHECK_ALLOC(zeros);
        fv_text_append(frames, zeros, (size_t)count);
        free(zeros);
        FV_TRY(fv_text_status(frames));
    }
    MPI_CHECK(MPI_Recv(count > 0 ? frames->data : NULL, count, MPI_BYTE, probe.MPI_SOURCE,
                       FRAMES_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "receiving %d bytes from rank %d on rank %d", count, probe.MPI_SOURCE, mpi->rank);
    *from = probe.MPI_SOURCE;
    *received = true;
    return FV_OK;
}

fv_status fv_mpi_gather(const fv_mpi *mpi, const void *mine, size_t size, void *all)
{
    if (mpi->size < 2) {
        memcpy(all, mine, size);
        return FV_OK;
    }
    if (size > INT_MAX)
        FV_FAIL(FV_ERR_INTERNAL, "a gather of %zu bytes per rank is too large", size);
    MPI_CHECK(MPI_Gather(mine, (int)size, MPI_BYTE, all, (int)size, MPI_BYTE, 0,
                         MPI_COMM_WORLD),
              "gathering %zu bytes per rank", size);
    return FV_OK;
}

fv_status fv_mpi_broadcast(const fv_mpi *mpi, int *value)
{
    if (mpi->size < 2)
        return FV_OK;
    MPI_CHECK(MPI_Bcast(value, 1, MPI_INT, 0, MPI_COMM_WORLD), "broadcasting from rank 0");
    return FV_OK;
}
