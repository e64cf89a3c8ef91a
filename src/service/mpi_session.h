/* mpi_session.h: the MPI side of a run: whether this process was started by
 * an MPI launcher, its rank among all ranks and on its node, and checked
 * point-to-point messages of wire frames (service/wire.h).  Without a
 * launcher nothing calls MPI: the run is one rank of one.
 *
 * Every MPI call is checked (the communicator returns errors instead of
 * aborting); a failure is FV_ERR_MPI with MPI's message and what was being
 * done, and the caller ends the run with exit status 2. */
#ifndef FV_SERVICE_MPI_SESSION_H
#define FV_SERVICE_MPI_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"
#include "common/text.h"

typedef struct fv_mpi_outbox fv_mpi_outbox;

typedef struct fv_mpi {
    bool initialized;   /* MPI_Init was called (and MPI_Finalize is due) */
    fv_mpi_outbox *outbox; /* messages sent and not yet delivered */
    int rank, size;     /* in MPI_COMM_WORLD; 0 and 1 without MPI */
    int local_rank;     /* rank among the ranks of this node (MPI_COMM_TYPE_SHARED) */
    int local_size;
} fv_mpi;

/* True when an MPI launcher started this process: Open MPI's mpirun
 * (OMPI_COMM_WORLD_SIZE), PMIx (PMIX_RANK, e.g. srun --mpi=pmix) or PMI
 * (PMI_SIZE).  FV_MPI=1 or FV_MPI=0 overrides the guess. */
bool fv_mpi_launched(void);

/* Initializes MPI if fv_mpi_launched(), makes MPI_COMM_WORLD return errors,
 * and fills *mpi (rank 0 of 1 without MPI).  FV_ERR_MPI on failure. */
fv_status fv_mpi_open(int *argc, char ***argv, fv_mpi *mpi);

/* Waits up to wait_s seconds for the messages still in the outbox, then
 * MPI_Finalize, if MPI was initialized.  FV_ERR_MPI on failure; FV_ERR_IO
 * if messages were never received (MPI is then left unfinalized: end the
 * job with fv_mpi_abort). */
fv_status fv_mpi_close(fv_mpi *mpi, double wait_s);

/* Ends every rank of the job with `exit_code` (MPI_Abort); without MPI it
 * returns (the caller returns the exit code itself). */
void fv_mpi_abort(const fv_mpi *mpi, int exit_code);

/* Sends `frames` (a whole message of frames) to rank `destination` without
 * waiting for it to be received (MPI_Isend): the message's bytes move into
 * the outbox and `frames` is left empty.  Sends never block, so two ranks
 * sending each other large messages cannot deadlock; call fv_mpi_progress
 * in the loops.  Messages between two ranks arrive in the order sent.
 * FV_ERR_MPI, FV_ERR_NOMEM, FV_ERR_INTERNAL for a message over 2 GiB. */
fv_status fv_mpi_send(fv_mpi *mpi, int destination, fv_text *frames);

/* Frees the outbox's delivered messages.  *pending: messages still on
 * their way (may be NULL).  FV_ERR_MPI. */
fv_status fv_mpi_progress(fv_mpi *mpi, int *pending);

/* Receives one waiting message from `source` (-1: any rank) into `frames`
 * (replacing its content), without blocking: *received says whether there
 * was one, *from which rank sent it.  FV_ERR_MPI, FV_ERR_NOMEM. */
fv_status fv_mpi_poll(const fv_mpi *mpi, int source, fv_text *frames, int *from,
                      bool *received);

/* Gathers `size` bytes from every rank into `all` on rank 0 (rank-ordered,
 * size bytes each; `all` is ignored on other ranks).  FV_ERR_MPI. */
fv_status fv_mpi_gather(const fv_mpi *mpi, const void *mine, size_t size, void *all);

/* Broadcasts *value from rank 0.  FV_ERR_MPI. */
fv_status fv_mpi_broadcast(const fv_mpi *mpi, int *value);

#endif
