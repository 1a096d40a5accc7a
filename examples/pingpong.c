/* pingpong.c: the MPI program behind examples/pingpong.goal.
 *
 * Rank 0 sends 100000 MPI_INTs (400000 bytes) to rank 1, which computes for
 * about 10 us and sends them back; ten round trips, tag 0. Each rank makes
 * 10 MPI_Send and 10 MPI_Recv calls between MPI_Init and MPI_Finalize.
 * Ranks other than 0 and 1 take no part. Prints "pingpong: N round trips
 * done" on rank 0.
 *
 *   mpicc -O2 -o pingpong examples/pingpong.c
 *   mpirun -np 2 ./pingpong
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 100000
#define ROUNDS 10
#define COMPUTE_SECONDS 10e-6

/* Busy computation for about `seconds` of wall time: a loop, not a sleep,
 * so that it shows as computation in the trace. */
static double compute(double seconds) {
    double start = MPI_Wtime(), x = 1.0;
    while (MPI_Wtime() - start < seconds)
        x = x * 1.0000001 + 1e-9;
    return x;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "pingpong: needs at least 2 ranks, got %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *buf = calloc(COUNT, sizeof(int));
    if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
    double sink = 0.0;
    for (int round = 0; round < ROUNDS; round++) {
        if (rank == 0) {
            MPI_Send(buf, COUNT, MPI_INT, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, COUNT, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, COUNT, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sink += compute(COMPUTE_SECONDS);
            MPI_Send(buf, COUNT, MPI_INT, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("pingpong: %d round trips done\n", ROUNDS);
    free(buf);
    MPI_Finalize();
    return sink < 0.0; /* keeps the computation from being optimised away */
}
