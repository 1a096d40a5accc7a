/* halo.c: 1-D halo exchange (an example of docs/prediction.md).
 *
 * Every rank owns a slab of a 1-D domain and, in each of ITERS iterations,
 * exchanges a 64 KiB halo with both neighbours (periodic: rank 0's left
 * neighbour is rank P-1) with MPI_Isend/MPI_Irecv + MPI_Waitall, then
 * updates its slab (a short stencil sweep, the "computation"). With 8 ranks
 * that is 2 x 64 KiB sent per rank and iteration, 50 iterations.
 *
 *   mpicc -O2 -o halo examples/halo.c
 *   mpirun -np 8 --oversubscribe ./halo
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HALO_BYTES (64 * 1024)
#define ITERS 50
#define SLAB (64 * 1024) /* doubles per rank */

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    size_t n = HALO_BYTES / sizeof(double);
    double *slab = malloc((SLAB + 2 * n) * sizeof(double));
    double *next = malloc((SLAB + 2 * n) * sizeof(double));
    if (!slab || !next) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < SLAB + 2 * n; i++) slab[i] = rank + 1e-6 * (double)i;
    for (int it = 0; it < ITERS; it++) {
        MPI_Request req[4];
        /* ghost cells: [0, n) from the left, [n + SLAB, 2n + SLAB) from the right */
        MPI_Irecv(slab, (int)n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(slab + n + SLAB, (int)n, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(slab + n, (int)n, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(slab + SLAB, (int)n, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        /* computation: a 3-point stencil over the slab */
        for (size_t i = n; i < n + SLAB; i++)
            next[i] = 0.25 * slab[i - 1] + 0.5 * slab[i] + 0.25 * slab[i + 1];
        memcpy(slab + n, next + n, SLAB * sizeof(double));
    }
    double local = slab[n + SLAB / 2], sum = 0.0;
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("halo: %d ranks, %d iterations of 2 x %d B, checksum %.6f\n",
                          size, ITERS, HALO_BYTES, sum);
    free(slab);
    free(next);
    MPI_Finalize();
    return 0;
}
