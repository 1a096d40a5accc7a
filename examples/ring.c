/* ring.c: one message around a ring, then a reduction.
 *
 * Every rank posts an MPI_Irecv from its left neighbour, sends 1 MiB
 * (262144 MPI_INTs, tag 7) to its right neighbour with MPI_Send, waits for
 * the receive with MPI_Wait, and all ranks then sum one integer with
 * MPI_Allreduce. Each rank makes exactly one call of each of the four.
 * Prints "ring: P ranks, sum S, 0 done" on rank 0 (S = 0 + 1 + ... + P-1).
 *
 *   mpicc -O2 -o ring examples/ring.c
 *   mpirun -np 4 ./ring
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 262144

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int *out = calloc(COUNT, sizeof(int)), *in = calloc(COUNT, sizeof(int));
    if (!out || !in) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Request req;
    MPI_Irecv(in, COUNT, MPI_INT, left, 7, MPI_COMM_WORLD, &req);
    MPI_Send(out, COUNT, MPI_INT, right, 7, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("ring: %d ranks, sum %d, 0 done\n", size, sum);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
