/*
 * mpi-tracer: a PMPI interposition library that writes MPI traces in the
 * liballprof text format read by `loggopsim trace2goal` (see
 * docs/tracing.md).
 *
 * Load it with LD_PRELOAD (mpirun -x LD_PRELOAD=.../libmpitracer.so) or link
 * it before -lmpi. Every wrapped MPI_X takes the call time, calls PMPI_X,
 * takes the return time and appends one text line to an in-memory chunk; a
 * background writer thread writes full chunks to
 * $PMPI_TRACE_DIR/pmpi-trace-rank-N.txt (default: the current directory), so
 * the application never waits for the file system inside an MPI call.
 *
 * Times are integer microseconds since the Unix epoch (CLOCK_REALTIME), as in
 * the thesis traces. Fields are separated by ':', datatypes are written as
 * `handle,size,extent` and communicators as `handle,rank,size`; handles are
 * the Fortran integer handles (MPI_X_c2f), which are small and equal on all
 * ranks for communicators created in the same order.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Clock                                                               */
/* ------------------------------------------------------------------ */

/* Microseconds since the epoch, truncated (gettimeofday resolution). */
static inline int64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* CPU time this thread has used, nanoseconds (CLOCK_THREAD_CPUTIME_ID). The
 * difference between a call's value and the previous call's return value is
 * the CPU time of the computation burst between them: unlike the wall-clock
 * gap it does not grow while the rank waits for a core on a busy or
 * oversubscribed machine (and it is ~0 for a rank that sleeps). */
static int cpu_off; /* PMPI_TRACE_CPU=0: no CPU times (set in MPI_Init) */
static inline int64_t cpu_ns(void) {
    struct timespec ts;
    if (cpu_off || clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Same clock with sub-microsecond resolution, for the clock synchronisation. */
static inline double now_us_f(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* ------------------------------------------------------------------ */
/* Chunked buffer handed to a writer thread                            */
/* ------------------------------------------------------------------ */

#define CHUNK_SIZE (256 * 1024)
#define LINE_MAX_LEN 1024 /* longest record is ~25 fields of <= 21 chars */

struct chunk {
    struct chunk *next;
    size_t len;
    char data[CHUNK_SIZE];
};

static struct {
    int active;             /* tracing enabled (between Init and Finalize) */
    FILE *file;
    char path[4096];
    pthread_t writer;
    pthread_mutex_t lock;   /* protects everything below */
    pthread_cond_t cond;
    struct chunk *cur;      /* chunk being filled by the application */
    struct chunk *head;     /* full chunks waiting for the writer */
    struct chunk *tail;
    int stop;               /* writer: exit once the queue is empty */
    int write_error;        /* errno of the first failed write, 0 if none */
    unsigned long dropped;  /* records lost because malloc failed */
    MPI_Comm sync_comm;     /* private duplicate of MPI_COMM_WORLD */
    int synced;             /* sync_comm exists (set by tracer_start) */
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static void *writer_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&T.lock);
    for (;;) {
        while (T.head == NULL && !T.stop)
            pthread_cond_wait(&T.cond, &T.lock);
        struct chunk *c = T.head;
        if (c == NULL)
            break; /* stop requested and nothing left */
        T.head = c->next;
        if (T.head == NULL)
            T.tail = NULL;
        pthread_mutex_unlock(&T.lock);
        size_t n = fwrite(c->data, 1, c->len, T.file);
        int err = n == c->len ? 0 : (errno ? errno : EIO);
        free(c);
        pthread_mutex_lock(&T.lock);
        if (err && !T.write_error)
            T.write_error = err;
    }
    pthread_mutex_unlock(&T.lock);
    return NULL;
}

/* Queue the current chunk for the writer. Caller holds T.lock. */
static void hand_over_locked(void) {
    struct chunk *c = T.cur;
    T.cur = NULL;
    if (c == NULL || c->len == 0) {
        free(c);
        return;
    }
    c->next = NULL;
    if (T.tail)
        T.tail->next = c;
    else
        T.head = c;
    T.tail = c;
    pthread_cond_signal(&T.cond);
}

static void append(const char *s, size_t len) {
    pthread_mutex_lock(&T.lock);
    if (T.cur != NULL && T.cur->len + len > CHUNK_SIZE)
        hand_over_locked();
    if (T.cur == NULL) {
        T.cur = malloc(sizeof(struct chunk));
        if (T.cur == NULL) {
            T.dropped++;
            pthread_mutex_unlock(&T.lock);
            return;
        }
        T.cur->len = 0;
    }
    memcpy(T.cur->data + T.cur->len, s, len);
    T.cur->len += len;
    pthread_mutex_unlock(&T.lock);
}

/* ------------------------------------------------------------------ */
/* Line builder: fast integer formatting, no printf on the hot path    */
/* ------------------------------------------------------------------ */

struct line {
    char *p;
    char buf[LINE_MAX_LEN];
};

static inline void ln_str(struct line *l, const char *s) {
    while (*s)
        *l->p++ = *s++;
}

static inline void ln_u64_raw(struct line *l, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *l->p++ = tmp[--n];
}

static inline void ln_i64_raw(struct line *l, int64_t v) {
    if (v < 0) {
        *l->p++ = '-';
        ln_u64_raw(l, (uint64_t)0 - (uint64_t)v);
    } else {
        ln_u64_raw(l, (uint64_t)v);
    }
}

static inline void ln_start(struct line *l, const char *name) {
    l->p = l->buf;
    ln_str(l, name);
}

/* ":v" for an integer field */
static inline void ln_int(struct line *l, int64_t v) {
    *l->p++ = ':';
    ln_i64_raw(l, v);
}

/* ":address" in decimal, as liballprof prints buffers and request pointers */
static inline void ln_ptr(struct line *l, const void *p) {
    *l->p++ = ':';
    ln_u64_raw(l, (uint64_t)(uintptr_t)p);
}

/* ":handle,size,extent"; `significant` = 0 for a datatype argument that
 * MPI ignores on this rank (e.g. the receive type of MPI_Gather on a
 * non-root), which must not be queried because it may be garbage. */
static void ln_dt_if(struct line *l, MPI_Datatype dt, int significant) {
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    MPI_Fint h = 0;
    if (significant && dt != MPI_DATATYPE_NULL) {
        h = PMPI_Type_c2f(dt);
        PMPI_Type_size(dt, &size);
        PMPI_Type_get_extent(dt, &lb, &extent);
    }
    ln_int(l, h);
    *l->p++ = ',';
    ln_i64_raw(l, size);
    *l->p++ = ',';
    ln_i64_raw(l, (int64_t)extent);
}

static inline void ln_dt(struct line *l, MPI_Datatype dt) { ln_dt_if(l, dt, 1); }

/* ":handle,rank,size" */
static void ln_comm(struct line *l, MPI_Comm comm) {
    int rank = -1, size = -1;
    MPI_Fint h = -1;
    if (comm != MPI_COMM_NULL) {
        h = PMPI_Comm_c2f(comm);
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &size);
    }
    ln_int(l, h);
    *l->p++ = ',';
    ln_i64_raw(l, rank);
    *l->p++ = ',';
    ln_i64_raw(l, size);
}

static inline void ln_op(struct line *l, MPI_Op op) { ln_int(l, PMPI_Op_c2f(op)); }

/* ":cpu=C0:C1", the thread CPU time (ns) at the call and at its return,
 * after the last liballprof field. Readers that take fields by position
 * (liballprof's; docs/tracing.md) never reach it; a field that is not known
 * to be there is recognised by its `cpu=` prefix. C1 < 0 is written `-`;
 * without C0 the fields are left out. */
static inline void ln_cpu(struct line *l, int64_t c_call, int64_t c_return) {
    if (c_call < 0)
        return; /* not measured: no fields (PMPI_TRACE_CPU=0, or a call the translator ignores) */
    ln_str(l, ":cpu=");
    ln_i64_raw(l, c_call);
    if (c_return < 0) {
        ln_str(l, ":-");
    } else {
        ln_int(l, c_return);
    }
}

static inline void ln_emit(struct line *l) {
    *l->p++ = '\n';
    append(l->buf, (size_t)(l->p - l->buf));
}

static int comm_rank(MPI_Comm comm) {
    int r = -1;
    if (comm != MPI_COMM_NULL)
        PMPI_Comm_rank(comm, &r);
    return r;
}

/* ------------------------------------------------------------------ */
/* Clock offset to rank 0 (ping-pong over a private communicator)      */
/* ------------------------------------------------------------------ */

#define SYNC_ROUNDS 20
#define SYNC_TAG 4711

/* Returns (rank 0's clock - this rank's clock) in microseconds, estimated
 * from the ping-pong with the smallest round trip (Cristian's method): rank
 * 0's reply is assumed to be stamped half-way through the round trip. This
 * is the sign convention of the thesis traces, where adding the clockdiff to
 * a rank's timestamps gives rank 0 time. Rank 0 serves the other ranks one
 * after the other; a barrier at the end lets all ranks leave together. */
static double clock_offset(double *best_rtt_out) {
    int rank, size;
    PMPI_Comm_rank(T.sync_comm, &rank);
    PMPI_Comm_size(T.sync_comm, &size);
    double offset = 0.0, best_rtt = 0.0;
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            for (int k = 0; k < SYNC_ROUNDS; k++) {
                char ping;
                PMPI_Recv(&ping, 1, MPI_CHAR, r, SYNC_TAG, T.sync_comm, MPI_STATUS_IGNORE);
                double t = now_us_f();
                PMPI_Send(&t, 1, MPI_DOUBLE, r, SYNC_TAG, T.sync_comm);
            }
        }
    } else {
        best_rtt = -1.0;
        for (int k = 0; k < SYNC_ROUNDS; k++) {
            char ping = 0;
            double t_root;
            double t0 = now_us_f();
            PMPI_Send(&ping, 1, MPI_CHAR, 0, SYNC_TAG, T.sync_comm);
            PMPI_Recv(&t_root, 1, MPI_DOUBLE, 0, SYNC_TAG, T.sync_comm, MPI_STATUS_IGNORE);
            double t1 = now_us_f();
            double rtt = t1 - t0;
            if (best_rtt < 0.0 || rtt < best_rtt) {
                best_rtt = rtt;
                offset = t_root - (t0 + t1) / 2.0;
            }
        }
    }
    PMPI_Barrier(T.sync_comm);
    *best_rtt_out = best_rtt;
    return offset;
}

/* ------------------------------------------------------------------ */
/* Start and stop                                                      */
/* ------------------------------------------------------------------ */

static void header_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void header_line(const char *fmt, ...) {
    char buf[LINE_MAX_LEN];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    append(buf, (size_t)n);
}

/* Opens the trace file, starts the writer thread and queues the first
 * header lines. Returns 0 (and complains) if this rank cannot be traced. */
static int open_trace(int rank) {
    const char *dir = getenv("PMPI_TRACE_DIR");
    if (dir == NULL || *dir == '\0')
        dir = getenv("LIBALLPROF_DIR");
    if (dir == NULL || *dir == '\0')
        dir = ".";
    snprintf(T.path, sizeof T.path, "%s/pmpi-trace-rank-%d.txt", dir, rank);
    T.file = fopen(T.path, "w");
    if (T.file == NULL) {
        fprintf(stderr, "mpi-tracer: rank %d: cannot create trace file %s: %s; this rank is not traced\n",
                rank, T.path, strerror(errno));
        return 0;
    }
    if (pthread_create(&T.writer, NULL, writer_main, NULL) != 0) {
        fprintf(stderr, "mpi-tracer: rank %d: cannot start the writer thread; this rank is not traced\n", rank);
        fclose(T.file);
        T.file = NULL;
        return 0;
    }

    char host[256] = "unknown";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = '\0';
    struct utsname u;
    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    time_t now = time(NULL);
    char when[64] = "";
    struct tm tm;
    if (localtime_r(&now, &tm))
        strftime(when, sizeof when, "%a %b %e %H:%M:%S %Y", &tm);

    header_line("# mpi-tracer 0.1 (liballprof 0.9 format) Output File\n");
    header_line("# time: %s\n", when);
    header_line("# hostname: %s\n", host);
    header_line("# uname: %s %s %s %s %s\n", u.sysname, u.nodename, u.release, u.version, u.machine);
    return 1;
}

/* Called right after a successful PMPI_Init/PMPI_Init_thread. All slow set-up
 * (file, thread, header) comes first; the clock synchronisation ends with a
 * barrier, and the MPI_Init return time is taken right after it. So the
 * ranks' traces start within a barrier's exit skew of each other, and neither
 * the set-up nor the synchronisation counts as application time. (With more
 * ranks than cores that skew can reach a scheduler time slice; releasing all
 * ranks at a broadcast common instant instead was tried and did not help,
 * because the ranks then wait for a core at the release time.) */
static void tracer_start(int *argc, char ***argv) {
    const char *cpu_env = getenv("PMPI_TRACE_CPU");
    cpu_off = cpu_env != NULL && strcmp(cpu_env, "0") == 0;
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int ok = open_trace(rank);

    /* Every rank takes part in the synchronisation even if its own file
     * cannot be opened, so that no rank waits forever for a partner. */
    PMPI_Comm_dup(MPI_COMM_WORLD, &T.sync_comm);
    T.synced = 1;
    double rtt;
    double offset = clock_offset(&rtt);
    int64_t end = now_us(), cend = cpu_ns();
    if (!ok)
        return;

    /* Byte-compatible with liballprof, whose number is in microseconds
     * despite the "s" (see docs/tracing.md); the next line says so. */
    header_line("# clockdiff: %f s (relative to rank 0)\n", offset);
    header_line("# clock offset at Init: rank 0 clock - this clock = %.3f us "
                "(best of %d ping-pongs, round trip %.3f us)\n",
                offset, SYNC_ROUNDS, rtt);
    if (!cpu_off)
        header_line("# cputime: each record ends in :cpu=C0:C1, this thread's CPU time in ns "
                    "(CLOCK_THREAD_CPUTIME_ID) at the call and at its return\n");
    T.active = 1;

    struct line l;
    ln_start(&l, "MPI_Init");
    ln_str(&l, ":-");
    ln_ptr(&l, argc);
    ln_ptr(&l, argv);
    ln_int(&l, end);
    ln_cpu(&l, cend, cend);
    ln_emit(&l);
}

static void tracer_stop(int64_t finalize_time, int64_t finalize_cpu) {
    double rtt;
    double offset = clock_offset(&rtt);
    PMPI_Comm_free(&T.sync_comm);
    T.synced = 0;
    if (!T.active)
        return;
    header_line("# Finalize clockdiff: %f\n", offset);
    header_line("# clock offset at Finalize: rank 0 clock - this clock = %.3f us "
                "(best of %d ping-pongs, round trip %.3f us)\n",
                offset, SYNC_ROUNDS, rtt);
    struct line l;
    ln_start(&l, "MPI_Finalize");
    ln_int(&l, finalize_time);
    ln_str(&l, ":-");
    ln_cpu(&l, finalize_cpu, -1);
    ln_emit(&l);

    T.active = 0;
    pthread_mutex_lock(&T.lock);
    hand_over_locked();
    T.stop = 1;
    pthread_cond_signal(&T.cond);
    pthread_mutex_unlock(&T.lock);
    pthread_join(T.writer, NULL);
    if (fclose(T.file) != 0 && !T.write_error)
        T.write_error = errno ? errno : EIO;
    T.file = NULL;
    if (T.write_error)
        fprintf(stderr, "mpi-tracer: writing %s failed: %s; the trace is incomplete\n", T.path,
                strerror(T.write_error));
    if (T.dropped)
        fprintf(stderr, "mpi-tracer: %lu records were dropped from %s (out of memory)\n", T.dropped,
                T.path);
}

/* ------------------------------------------------------------------ */
/* Init / Finalize                                                     */
/* ------------------------------------------------------------------ */

int MPI_Init(int *argc, char ***argv) {
    int ret = PMPI_Init(argc, argv);
    if (ret == MPI_SUCCESS) {
        tracer_start(argc, argv);
    }
    return ret;
}

/* Written as an MPI_Init record: the translator knows no MPI_Init_thread
 * and needs the Init record to start the first computation gap. */
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int ret = PMPI_Init_thread(argc, argv, required, provided);
    if (ret == MPI_SUCCESS) {
        tracer_start(argc, argv);
    }
    return ret;
}

int MPI_Finalize(void) {
    int64_t t = now_us(), c = cpu_ns();
    int initialized = 0, finalized = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized && T.synced)
        tracer_stop(t, c);
    return PMPI_Finalize();
}

/* ------------------------------------------------------------------ */
/* Wrappers                                                            */
/* ------------------------------------------------------------------ */

/* Open a record: function name and call time. */
static inline void rec_open(struct line *l, const char *name, int64_t t_call) {
    ln_start(l, name);
    ln_int(l, t_call);
}

/* Close a record with the return time and the CPU times, and queue it for
 * the writer. */
static inline void rec_close(struct line *l, int64_t t_return, int64_t c_call, int64_t c_return) {
    ln_int(l, t_return);
    ln_cpu(l, c_call, c_return);
    ln_emit(l);
}

/* --- communicator queries --- */

int MPI_Comm_rank(MPI_Comm comm, int *rank) {
    int64_t t0 = now_us(), c0 = -1; /* no CPU times: the translator ignores this call */
    int ret = PMPI_Comm_rank(comm, rank);
    int64_t t1 = now_us(), c1 = -1;
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Comm_rank", t0);
        ln_comm(&l, comm);
        ln_ptr(&l, rank);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Comm_size(MPI_Comm comm, int *size) {
    int64_t t0 = now_us(), c0 = -1; /* no CPU times: the translator ignores this call */
    int ret = PMPI_Comm_size(comm, size);
    int64_t t1 = now_us(), c1 = -1;
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Comm_size", t0);
        ln_comm(&l, comm);
        ln_ptr(&l, size);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

/* --- blocking point-to-point --- */

#define SEND_LIKE(NAME, PNAME)                                                                     \
    int NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {      \
        int64_t t0 = now_us(), c0 = cpu_ns();                                                      \
        int ret = PNAME(buf, count, dt, dest, tag, comm);                                          \
        int64_t t1 = now_us(), c1 = cpu_ns();                                                      \
        if (T.active) {                                                                            \
            struct line l;                                                                         \
            rec_open(&l, #NAME, t0);                                                               \
            ln_ptr(&l, buf);                                                                       \
            ln_int(&l, count);                                                                     \
            ln_dt(&l, dt);                                                                         \
            ln_int(&l, dest);                                                                      \
            ln_int(&l, tag);                                                                       \
            ln_comm(&l, comm);                                                                     \
            rec_close(&l, t1, c0, c1);                                                             \
        }                                                                                          \
        return ret;                                                                                \
    }

SEND_LIKE(MPI_Send, PMPI_Send)
SEND_LIKE(MPI_Ssend, PMPI_Ssend)
SEND_LIKE(MPI_Rsend, PMPI_Rsend)
SEND_LIKE(MPI_Bsend, PMPI_Bsend)

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
             MPI_Status *status) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Recv(buf, count, dt, source, tag, comm, status);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Recv", t0);
        ln_ptr(&l, buf);
        ln_int(&l, count);
        ln_dt(&l, dt);
        ln_int(&l, source);
        ln_int(&l, tag);
        ln_comm(&l, comm);
        ln_ptr(&l, status);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rdt, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, status);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Sendrecv", t0);
        ln_ptr(&l, sbuf);
        ln_int(&l, scount);
        ln_dt(&l, sdt);
        ln_int(&l, dest);
        ln_int(&l, stag);
        ln_ptr(&l, rbuf);
        ln_int(&l, rcount);
        ln_dt(&l, rdt);
        ln_int(&l, source);
        ln_int(&l, rtag);
        ln_comm(&l, comm);
        ln_ptr(&l, status);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

/* --- non-blocking point-to-point: the request field is the address of the
* caller's MPI_Request variable, which MPI_Wait/Waitall later name --- */

#define ISEND_LIKE(NAME, PNAME)                                                                    \
    int NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,        \
                 MPI_Request *request) {                                                           \
        int64_t t0 = now_us(), c0 = cpu_ns();                                                      \
        int ret = PNAME(buf, count, dt, dest, tag, comm, request);                                 \
        int64_t t1 = now_us(), c1 = cpu_ns();                                                      \
        if (T.active) {                                                                            \
            struct line l;                                                                         \
            rec_open(&l, #NAME, t0);                                                               \
            ln_ptr(&l, buf);                                                                       \
            ln_int(&l, count);                                                                     \
            ln_dt(&l, dt);                                                                         \
            ln_int(&l, dest);                                                                      \
            ln_int(&l, tag);                                                                       \
            ln_comm(&l, comm);                                                                     \
            ln_ptr(&l, request);                                                                   \
            rec_close(&l, t1, c0, c1);                                                             \
        }                                                                                          \
        return ret;                                                                                \
    }

ISEND_LIKE(MPI_Isend, PMPI_Isend)
ISEND_LIKE(MPI_Issend, PMPI_Issend)
ISEND_LIKE(MPI_Irsend, PMPI_Irsend)

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Request *request) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Irecv(buf, count, dt, source, tag, comm, request);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Irecv", t0);
        ln_ptr(&l, buf);
        ln_int(&l, count);
        ln_dt(&l, dt);
        ln_int(&l, source);
        ln_int(&l, tag);
        ln_comm(&l, comm);
        ln_ptr(&l, request);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

/* --- completion --- */

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Wait(request, status);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Wait", t0);
        ln_ptr(&l, request);
        ln_ptr(&l, status);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Waitall(count, requests, statuses);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Waitall", t0);
        ln_int(&l, count);
        ln_ptr(&l, requests);
        ln_ptr(&l, statuses);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Waitany(count, requests, index, status);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Waitany", t0);
        ln_int(&l, count);
        ln_ptr(&l, requests);
        ln_int(&l, *index);
        ln_ptr(&l, status);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

/* The flag is written by value (1 = completed). */
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    int64_t t0 = now_us(), c0 = -1; /* no CPU times: the translator ignores this call */
    int ret = PMPI_Test(request, flag, status);
    int64_t t1 = now_us(), c1 = -1;
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Test", t0);
        ln_ptr(&l, request);
        ln_int(&l, *flag);
        ln_ptr(&l, status);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]) {
    int64_t t0 = now_us(), c0 = -1; /* no CPU times: the translator ignores this call */
    int ret = PMPI_Testall(count, requests, flag, statuses);
    int64_t t1 = now_us(), c1 = -1;
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Testall", t0);
        ln_int(&l, count);
        ln_ptr(&l, requests);
        ln_int(&l, *flag);
        ln_ptr(&l, statuses);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

/* --- collectives --- */

int MPI_Barrier(MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Barrier(comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Barrier", t0);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Bcast(buf, count, dt, root, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Bcast", t0);
        ln_ptr(&l, buf);
        ln_int(&l, count);
        ln_dt(&l, dt);
        ln_int(&l, root);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Allreduce(sbuf, rbuf, count, dt, op, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Allreduce", t0);
        ln_ptr(&l, sbuf);
        ln_ptr(&l, rbuf);
        ln_int(&l, count);
        ln_dt(&l, dt);
        ln_op(&l, op);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Iallreduce(sbuf, rbuf, count, dt, op, comm, request);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Iallreduce", t0);
        ln_ptr(&l, sbuf);
        ln_ptr(&l, rbuf);
        ln_int(&l, count);
        ln_dt(&l, dt);
        ln_op(&l, op);
        ln_comm(&l, comm);
        ln_ptr(&l, request);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Reduce(sbuf, rbuf, count, dt, op, root, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Reduce", t0);
        ln_ptr(&l, sbuf);
        ln_ptr(&l, rbuf);
        ln_int(&l, count);
        ln_dt(&l, dt);
        ln_op(&l, op);
        ln_int(&l, root);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

/* Allgather and Alltoall share the field layout. */
#define GATHER_ALL_LIKE(NAME, PNAME)                                                               \
    int NAME(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,               \
                 MPI_Datatype rdt, MPI_Comm comm) {                                                \
        int64_t t0 = now_us(), c0 = cpu_ns();                                                      \
        int ret = PNAME(sbuf, scount, sdt, rbuf, rcount, rdt, comm);                               \
        int64_t t1 = now_us(), c1 = cpu_ns();                                                      \
        if (T.active) {                                                                            \
            struct line l;                                                                         \
            rec_open(&l, #NAME, t0);                                                               \
            ln_ptr(&l, sbuf);                                                                      \
            ln_int(&l, scount);                                                                    \
            ln_dt_if(&l, sdt, sbuf != MPI_IN_PLACE);                                               \
            ln_ptr(&l, rbuf);                                                                      \
            ln_int(&l, rcount);                                                                    \
            ln_dt(&l, rdt);                                                                        \
            ln_comm(&l, comm);                                                                     \
            rec_close(&l, t1, c0, c1);                                                             \
        }                                                                                          \
        return ret;                                                                                \
    }

GATHER_ALL_LIKE(MPI_Allgather, PMPI_Allgather)
GATHER_ALL_LIKE(MPI_Alltoall, PMPI_Alltoall)

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
               MPI_Datatype rdt, int root, MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Gather(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        int at_root = comm_rank(comm) == root;
        rec_open(&l, "MPI_Gather", t0);
        ln_ptr(&l, sbuf);
        ln_int(&l, scount);
        ln_dt_if(&l, sdt, sbuf != MPI_IN_PLACE);
        ln_ptr(&l, rbuf);
        ln_int(&l, rcount);
        ln_dt_if(&l, rdt, at_root);
        ln_int(&l, root);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, int rcount,
                MPI_Datatype rdt, int root, MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        int at_root = comm_rank(comm) == root;
        rec_open(&l, "MPI_Scatter", t0);
        ln_ptr(&l, sbuf);
        ln_int(&l, scount);
        ln_dt_if(&l, sdt, at_root);
        ln_ptr(&l, rbuf);
        ln_int(&l, rcount);
        ln_dt_if(&l, rdt, rbuf != MPI_IN_PLACE);
        ln_int(&l, root);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

/* Vector variants: count and displacement arrays are written as addresses
* (the translator does not translate these calls). */
int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, const int rcounts[],
                   const int displs[], MPI_Datatype rdt, MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Allgatherv", t0);
        ln_ptr(&l, sbuf);
        ln_int(&l, scount);
        ln_dt_if(&l, sdt, sbuf != MPI_IN_PLACE);
        ln_ptr(&l, rbuf);
        ln_ptr(&l, rcounts);
        ln_ptr(&l, displs);
        ln_dt(&l, rdt);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype sdt, void *rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rdt, int root, MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, root, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        int at_root = comm_rank(comm) == root;
        rec_open(&l, "MPI_Gatherv", t0);
        ln_ptr(&l, sbuf);
        ln_int(&l, scount);
        ln_dt_if(&l, sdt, sbuf != MPI_IN_PLACE);
        ln_ptr(&l, rbuf);
        ln_ptr(&l, rcounts);
        ln_ptr(&l, displs);
        ln_dt_if(&l, rdt, at_root);
        ln_int(&l, root);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype sdt,
                 void *rbuf, int rcount, MPI_Datatype rdt, int root, MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt, root, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        int at_root = comm_rank(comm) == root;
        rec_open(&l, "MPI_Scatterv", t0);
        ln_ptr(&l, sbuf);
        ln_ptr(&l, scounts);
        ln_ptr(&l, displs);
        ln_dt_if(&l, sdt, at_root);
        ln_ptr(&l, rbuf);
        ln_int(&l, rcount);
        ln_dt_if(&l, rdt, rbuf != MPI_IN_PLACE);
        ln_int(&l, root);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype sdt,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rdt,
                  MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Alltoallv", t0);
        ln_ptr(&l, sbuf);
        ln_ptr(&l, scounts);
        ln_ptr(&l, sdispls);
        ln_dt_if(&l, sdt, sbuf != MPI_IN_PLACE);
        ln_ptr(&l, rbuf);
        ln_ptr(&l, rcounts);
        ln_ptr(&l, rdispls);
        ln_dt(&l, rdt);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype dt,
                       MPI_Op op, MPI_Comm comm) {
    int64_t t0 = now_us(), c0 = cpu_ns();
    int ret = PMPI_Reduce_scatter(sbuf, rbuf, rcounts, dt, op, comm);
    int64_t t1 = now_us(), c1 = cpu_ns();
    if (T.active) {
        struct line l;
        rec_open(&l, "MPI_Reduce_scatter", t0);
        ln_ptr(&l, sbuf);
        ln_ptr(&l, rbuf);
        ln_ptr(&l, rcounts);
        ln_dt(&l, dt);
        ln_op(&l, op);
        ln_comm(&l, comm);
        rec_close(&l, t1, c0, c1);
    }
    return ret;
}

