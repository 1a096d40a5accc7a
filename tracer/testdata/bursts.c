/* bursts.c: 10 bursts between MPI_Barriers, each of 2 ms of either CPU
 * work (`spin`: the loop runs until this thread's CPU clock advanced 2 ms,
 * however long that takes in wall-clock time) or sleep (`sleep`: nanosleep
 * 2 ms, using no CPU). The tests of the cpu computation measure run it
 * with more ranks than cores: a spinning rank's bursts then last longer
 * than 2 ms in wall-clock time (it waits for a core) but use 2 ms of CPU;
 * a sleeping rank's use ~0 CPU.
 *
 *   mpicc -O2 -o bursts tracer/testdata/bursts.c
 *   mpirun -np 4 --oversubscribe ./bursts spin
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define BURSTS 10
#define BURST_NS 2000000LL

static int64_t clock_ns(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int spin = !(argc > 1 && strcmp(argv[1], "sleep") == 0);
    volatile double x = 1.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int b = 0; b < BURSTS; b++) {
        if (spin) {
            int64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + BURST_NS;
            while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
                for (int k = 0; k < 1000; k++)
                    x = x * 1.0000001 + 1e-9;
        } else {
            struct timespec ts = {0, BURST_NS};
            nanosleep(&ts, NULL);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
