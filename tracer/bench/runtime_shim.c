/*
 * Baseline for the tracing-overhead measurement (bench/overhead.sh): a PMPI
 * shim that only measures what the tracer reports as a rank's run time,
 * MPI_Finalize call - MPI_Init return, in microseconds of CLOCK_REALTIME.
 * Like the tracer, it ends MPI_Init with a barrier before taking the time,
 * so both runs start their clock at the same point.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static int64_t init_return_us;

static int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int MPI_Init(int *argc, char ***argv) {
    int ret = PMPI_Init(argc, argv);
    PMPI_Barrier(MPI_COMM_WORLD);
    init_return_us = now_us();
    return ret;
}

int MPI_Finalize(void) {
    int64_t t = now_us();
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "runtime_us rank %d: %lld\n", rank, (long long)(t - init_return_us));
    return PMPI_Finalize();
}
