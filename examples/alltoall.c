/* alltoall.c: MPI_Alltoall of 256 KiB per pair, 20 iterations (an example
 * of docs/prediction.md). Between the exchanges every rank touches its
 * receive buffer once (the "computation"). With 8 ranks each rank sends
 * 7 x 256 KiB per iteration to the others (and 256 KiB to itself).
 *
 *   mpicc -O2 -o alltoall examples/alltoall.c
 *   mpirun -np 8 --oversubscribe ./alltoall
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define PAIR_BYTES (256 * 1024)
#define ITERS 20

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t per = PAIR_BYTES / sizeof(double);
    double *sbuf = malloc(per * size * sizeof(double));
    double *rbuf = malloc(per * size * sizeof(double));
    if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < per * size; i++) sbuf[i] = rank + 1e-9 * (double)i;
    double acc = 0.0;
    for (int it = 0; it < ITERS; it++) {
        MPI_Alltoall(sbuf, (int)per, MPI_DOUBLE, rbuf, (int)per, MPI_DOUBLE, MPI_COMM_WORLD);
        /* computation: one pass over the received data */
        for (size_t i = 0; i < per * size; i++) {
            acc += rbuf[i];
            sbuf[i] = 0.5 * (sbuf[i] + rbuf[i]);
        }
    }
    double sum = 0.0;
    MPI_Reduce(&acc, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("alltoall: %d ranks, %d iterations of %d B per pair, checksum %.6e\n",
                          size, ITERS, PAIR_BYTES, sum);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
