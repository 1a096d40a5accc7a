/*
 * Per-call cost of tracing (bench/overhead.sh): times N calls of
 * MPI_Comm_rank and N zero-byte MPI_Sendrecv exchanges between two ranks.
 * The tracer writes one record per call, so the difference between a traced
 * and an untraced run divided by N is the tracing cost of one call.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    int rank, size, r;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_us();
    for (int i = 0; i < n; i++)
        MPI_Comm_rank(MPI_COMM_WORLD, &r);
    double t1 = now_us();
    MPI_Barrier(MPI_COMM_WORLD);
    double t2 = now_us();
    for (int i = 0; i < n && peer < size; i++)
        MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 0, NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    double t3 = now_us();
    if (rank == 0)
        printf("comm_rank_ns %.1f sendrecv_ns %.1f\n", (t1 - t0) * 1e3 / n, (t3 - t2) * 1e3 / n);
    MPI_Finalize();
    return 0;
}
