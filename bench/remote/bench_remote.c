/* SPDX-License-Identifier: Apache-2.0
 *
 * Remote-GPU benchmark on loopback, side by side in one run:
 *   - raw TCP ping-pong RTT (24-byte frames, TCP_NODELAY) vs a synchronous driver call's RTT
 *     through libtf_client -> tf-worker (cuStreamQuery on the NULL stream), with client and
 *     servers pinned to one CPU, then to two: where the scheduler happens to place them
 *     changes a loopback RTT several times over, so both sides are measured placed alike.
 *     Both ends of the raw ping-pong wait for data the way the client and the worker do
 *     (tf_net_recv_spin with the default budget), so the ratio is the protocol's cost; the
 *     plain blocking ping-pong is printed too (on an idle or virtual CPU a cross-CPU wake-up
 *     alone can cost tens of microseconds);
 *   - raw socket bandwidth (1 MiB writes) vs cuMemcpyHtoD / cuMemcpyDtoH of 64 MiB, the raw
 *     socket moving the same 64 MiB host buffer as the copies (sending it, receiving into it;
 *     the raw server's end is one cache-hot 1 MiB buffer), with
 *     the CPU time each costs (all threads of the client, this process's raw server and the
 *     worker with its simulated GPU, from /proc/PID/task/N/schedstat), and what that allows:
 *     on a CPU-bound machine the remote copy can reach at most raw CPU / remote CPU of the
 *     raw bandwidth (the simulated GPU's "DMA" is a memcpy on the CPU);
 *   - asynchronous launches per second (an empty-work kernel, batched): the client's issue
 *     rate and the end-to-end rate including cuCtxSynchronize, local (simulated GPU
 *     directly) and remote;
 *   - a small real workload (200 sgemm launches with their copies), local vs remote;
 *   - a CUDA runtime workload (tests/cudart/train.cu, plain nvcc: steps of tiled matmul with
 *     the batch and weights copied in and the result copied out each step, as a training
 *     step moves data), local on the simulated GPU vs through libtf_client, with the client's
 *     blocking round trips per step (TF_REMOTE_STATS).
 * Prints `name: value unit` lines. The worker, the client library and the simulated GPU
 * are found at the build paths compiled in (bench/remote/meson.build). With
 * --system-driver the worker and the local runs load the machine's own libcuda.so.1 (a real
 * GPU) instead of the simulated one: there the device copies are DMA, not CPU memcpy.
 *
 * The CUDA parts run in child processes that dlopen libcuda.so.1 from LD_LIBRARY_PATH: the
 * simulated driver for "local", libtf_client for "remote", so the same code measures both.
 */
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "remote/net.h"

#ifndef BENCH_WORKER
#error "BENCH_WORKER, BENCH_CLIENT_DIR, BENCH_SIM_DIR, BENCH_VECADD_PTX, BENCH_SGEMM_PTX"
#endif

#define MiB (1024u * 1024u)
#define PING_N 20000
#define COPY_BYTES (64u * MiB)
#define LAUNCH_N 200000
#define SGEMM_N 200
#define SGEMM_DIM 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- raw sockets ---------------------------------------------------------------------------- */

/* The client's and the worker's poll budget, taken before anything is pinned to one CPU
 * (tf_net_spin_ns is 0 there; the client and the worker took theirs at start too). */
static int64_t raw_spin_ns;

/* Sends (WR) or receives N bytes; a receive first polls for SPIN_NS (tf_net_recv_spin). */
static int full_io_spin(int fd, void *p, size_t n, int wr, int64_t spin_ns)
{
    uint8_t *q = p;
    while (n) {
        ssize_t k = wr ? send(fd, q, n, MSG_NOSIGNAL) : tf_net_recv_spin(fd, q, n, spin_ns);
        if (k < 0 && wr && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        q += k;
        n -= (size_t)k;
    }
    return 0;
}

static int full_io(int fd, void *p, size_t n, int wr)
{
    return full_io_spin(fd, p, n, wr, 0);
}

static void tune(int fd)
{
    int one = 1, buf = 4 << 20;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

/* The raw server: a mode byte and a u32 N: 'p' = ping-pong N frames waiting as the worker
 * does, 'P' = the same with blocking receives, 'u' = receive N MiB then ack, 'd' = send N MiB,
 * 'q' = quit. */
static void *raw_server(void *arg)
{
    int lfd = *(int *)arg;
    static uint8_t chunk[MiB];
    for (;;) {
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        tune(fd);
        char mode;
        uint32_t cnt;
        if (full_io(fd, &mode, 1, 0) != 0 || full_io(fd, &cnt, 4, 0) != 0) {
            close(fd);
            continue;
        }
        if (mode == 'q') {
            close(fd);
            return NULL;
        }
        if (mode == 'p' || mode == 'P') {
            int64_t spin = mode == 'p' ? raw_spin_ns : 0;
            uint8_t f[24];
            for (uint32_t i = 0; i < cnt && full_io_spin(fd, f, 24, 0, spin) == 0; i++)
                full_io(fd, f, 24, 1);
        } else if (mode == 'u') {
            for (uint32_t got = 0; got < cnt; got++)
                if (full_io(fd, chunk, MiB, 0) != 0)
                    break;
            full_io(fd, &mode, 1, 1);
        } else if (mode == 'd') {
            for (uint32_t sent = 0; sent < cnt; sent++)
                if (full_io(fd, chunk, MiB, 1) != 0)
                    break;
        }
        close(fd);
    }
}

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return -1;
    tune(fd);
    return fd;
}

static int raw_open(int port, char mode, uint32_t n)
{
    int fd = raw_connect(port);
    if (fd < 0 || full_io(fd, &mode, 1, 1) != 0 || full_io(fd, &n, 4, 1) != 0)
        return -1;
    return fd;
}

/* Mean RTT in us of N raw 24-byte ping-pongs; SPIN: both ends wait as client and worker do. */
static double raw_ping(int port, int n, int spin)
{
    int fd = raw_open(port, spin ? 'p' : 'P', (uint32_t)n);
    int64_t spin_ns = spin ? raw_spin_ns : 0;
    uint8_t f[24] = {0};
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        full_io(fd, f, 24, 1);
        full_io_spin(fd, f, 24, 0, spin_ns);
    }
    double us = (now_s() - t0) / n * 1e6;
    close(fd);
    return us;
}

/* MiB/s of moving BUF (MIB MiB) through the raw socket: sent (UP) or received into it, in
 * 1 MiB writes or reads. The copies it is compared with move the same buffer. */
static double raw_bw(int port, int up, uint8_t *buf, uint32_t mib)
{
    int fd = raw_open(port, up ? 'u' : 'd', mib);
    double t0 = now_s();
    for (uint32_t i = 0; i < mib; i++)
        full_io(fd, buf + (size_t)i * MiB, MiB, up);
    if (up) {
        char ack;
        full_io(fd, &ack, 1, 0);
    }
    double r = mib / (now_s() - t0);
    close(fd);
    return r;
}

static int raw_listen(int *port, pthread_t *th, int *lfd)
{
    *lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(a);
    if (bind(*lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(*lfd, 4) != 0 ||
        getsockname(*lfd, (struct sockaddr *)&a, &sl) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return pthread_create(th, NULL, raw_server, lfd);
}

/* CPU time (ns) all threads of PID have run, from the scheduler's statistics. */
static double cpu_ns(int pid)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    double sum = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[128];
        snprintf(path, sizeof(path), "%s/%s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        unsigned long long run = 0;
        if (f) {
            if (fscanf(f, "%llu", &run) == 1)
                sum += (double)run;
            fclose(f);
        }
    }
    closedir(d);
    return sum;
}

/* CPU of everyone taking part in a transfer: this process (client), the bench process (raw
 * server) and the worker (connection thread + simulated GPU). */
static double cpu_all(void)
{
    static int worker = -1;
    if (worker < 0)
        worker = atoi(getenv("BENCH_WORKER_PID"));
    return cpu_ns(getpid()) + cpu_ns(getppid()) + cpu_ns(worker);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the CUDA side (child process) ---------------------------------------------------------- */

static struct {
    PFN_cuInit_v2000 init;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxSetCurrent_v4000 setcur;
    PFN_cuCtxSynchronize_v2000 sync;
    PFN_cuStreamQuery_v2000 squery;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuModuleLoadData_v2000 load;
    PFN_cuModuleGetFunction_v2000 getfn;
    PFN_cuLaunchKernel_v4000 launch;
} cu;

static void *sym(void *dl, const char *name)
{
    void *p = dlsym(dl, name);
    if (!p) {
        fprintf(stderr, "bench_remote: libcuda.so.1 lacks %s\n", name);
        exit(3);
    }
    return p;
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "bench_remote: %s failed: %d\n", #x, (int)r_);                         \
            exit(4);                                                                               \
        }                                                                                          \
    } while (0)

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *t = malloc((size_t)n + 1);
    if (fread(t, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(t);
        return NULL;
    }
    t[n] = 0;
    fclose(f);
    return t;
}

/* Measures and writes "key value" lines to FD. REMOTE adds the transport-only figures. */
/* Pins every thread of PID to CPU, or to the set ALL when CPU < 0. */
static void pin_pid(int pid, int cpu, const cpu_set_t *all)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    if (cpu >= 0)
        CPU_SET(cpu, &one);
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            (void)sched_setaffinity(atoi(e->d_name), sizeof(one), cpu >= 0 ? &one : all);
    closedir(d);
}

/* The RTT figures with this process (the client) on CCPU and both servers (the raw server
 * thread in the parent, every thread of the worker) on SCPU. Raw and remote measurements
 * alternate in blocks so that both see the same load on the machine; each figure is the
 * median of its blocks. Afterwards everyone may run anywhere in ALL again. */
static int rtt_placement(FILE *o, int port, const char *name, int ccpu, int scpu,
                         const cpu_set_t *all)
{
    enum { BLOCKS = 11, PER = PING_N / 10 };
    int worker = atoi(getenv("BENCH_WORKER_PID"));
    pin_pid(getpid(), ccpu, all);
    pin_pid(getppid(), scpu, all);
    pin_pid(worker, scpu, all);
    double raw[BLOCKS], rem[BLOCKS], blk[BLOCKS];
    int rc = 0;
    for (int b = 0; b < BLOCKS && !rc; b++) {
        raw[b] = raw_ping(port, PER, 1);
        blk[b] = raw_ping(port, PER, 0);
        double t0 = now_s();
        for (int i = 0; i < PER && !rc; i++)
            rc = cu.squery(NULL) != CUDA_SUCCESS;
        rem[b] = (now_s() - t0) / PER * 1e6;
    }
    pin_pid(getpid(), -1, all);
    pin_pid(getppid(), -1, all);
    pin_pid(worker, -1, all);
    if (rc)
        return -1;
    fprintf(o, "raw_rtt_%s %.3f\n", name, median(raw, BLOCKS));
    fprintf(o, "raw_block_rtt_%s %.3f\n", name, median(blk, BLOCKS));
    fprintf(o, "sync_rtt_%s %.3f\n", name, median(rem, BLOCKS));
    return 0;
}

static int cuda_child(int out, int remote)
{
    raw_spin_ns = tf_net_spin_ns(TF_NET_SPIN_US);
    void *dl = dlopen("libcuda.so.1", RTLD_NOW);
    if (!dl) {
        fprintf(stderr, "bench_remote: %s\n", dlerror());
        return 3;
    }
    cu.init = sym(dl, "cuInit");
    cu.retain = sym(dl, "cuDevicePrimaryCtxRetain");
    cu.setcur = sym(dl, "cuCtxSetCurrent");
    cu.sync = sym(dl, "cuCtxSynchronize");
    cu.squery = sym(dl, "cuStreamQuery");
    cu.alloc = sym(dl, "cuMemAlloc_v2");
    cu.htod = sym(dl, "cuMemcpyHtoD_v2");
    cu.dtoh = sym(dl, "cuMemcpyDtoH_v2");
    cu.load = sym(dl, "cuModuleLoadData");
    cu.getfn = sym(dl, "cuModuleGetFunction");
    cu.launch = sym(dl, "cuLaunchKernel");
    FILE *o = fdopen(out, "w");
    CUcontext ctx;
    CK(cu.init(0));
    CK(cu.retain(&ctx, 0));
    CK(cu.setcur(ctx));
    char *vptx = read_text(BENCH_VECADD_PTX), *sptx = read_text(BENCH_SGEMM_PTX);
    if (!vptx || !sptx)
        return 5;
    CUmodule vm, sm;
    CUfunction vecadd, sgemm;
    CK(cu.load(&vm, vptx));
    CK(cu.load(&sm, sptx));
    CK(cu.getfn(&vecadd, vm, "vecadd"));
    CK(cu.getfn(&sgemm, sm, "sgemm_tiled"));
    if (remote) {
        int port = atoi(getenv("BENCH_RAW_PORT"));
        for (int i = 0; i < 1000; i++)
            CK(cu.squery(NULL));
        cpu_set_t all;
        int cpus[2] = {-1, -1}, nc = 0;
        if (sched_getaffinity(0, sizeof(all), &all) == 0)
            for (int c = 0; c < CPU_SETSIZE && nc < 2; c++)
                if (CPU_ISSET(c, &all))
                    cpus[nc++] = c;
        if (nc >= 1 && rtt_placement(o, port, "same_cpu", cpus[0], cpus[0], &all) != 0)
            return 6;
        if (nc == 2 && rtt_placement(o, port, "cross_cpu", cpus[0], cpus[1], &all) != 0)
            return 6;
        CUdeviceptr d;
        uint8_t *h = malloc(COPY_BYTES);
        memset(h, 1, COPY_BYTES);
        CK(cu.alloc(&d, COPY_BYTES));
        CK(cu.htod(d, h, COPY_BYTES)); /* warm-up */
        CK(cu.dtoh(h, d, COPY_BYTES));
        enum { BWB = 9 };
        double ru[BWB], hd[BWB], rd[BWB], dh[BWB];     /* MiB/s */
        double cru[BWB], chd[BWB], crd[BWB], cdh[BWB]; /* CPU ns per byte */
        const double nb = COPY_BYTES;
        for (int b = 0; b < BWB; b++) {
            double c0 = cpu_all();
            ru[b] = raw_bw(port, 1, h, COPY_BYTES / MiB);
            double c1 = cpu_all(), t0 = now_s();
            CK(cu.htod(d, h, COPY_BYTES));
            hd[b] = COPY_BYTES / MiB / (now_s() - t0);
            double c2 = cpu_all();
            rd[b] = raw_bw(port, 0, h, COPY_BYTES / MiB);
            double c3 = cpu_all();
            t0 = now_s();
            CK(cu.dtoh(h, d, COPY_BYTES));
            dh[b] = COPY_BYTES / MiB / (now_s() - t0);
            double c4 = cpu_all();
            cru[b] = (c1 - c0) / nb;
            chd[b] = (c2 - c1) / nb;
            crd[b] = (c3 - c2) / nb;
            cdh[b] = (c4 - c3) / nb;
        }
        fprintf(o, "raw_up_mbs %.1f\n", median(ru, BWB));
        fprintf(o, "htod_mbs %.1f\n", median(hd, BWB));
        fprintf(o, "raw_down_mbs %.1f\n", median(rd, BWB));
        fprintf(o, "dtoh_mbs %.1f\n", median(dh, BWB));
        fprintf(o, "raw_up_cpu %.3f\n", median(cru, BWB));
        fprintf(o, "htod_cpu %.3f\n", median(chd, BWB));
        fprintf(o, "raw_down_cpu %.3f\n", median(crd, BWB));
        fprintf(o, "dtoh_cpu %.3f\n", median(cdh, BWB));
        free(h);
    }
    /* Launch rate: vecadd with n = 0 (every thread returns at once). */
    CUdeviceptr z;
    CK(cu.alloc(&z, 256));
    int zero = 0;
    void *vp[] = {&z, &z, &z, &zero};
    for (int i = 0; i < 1000; i++)
        CK(cu.launch(vecadd, 1, 1, 1, 32, 1, 1, 0, NULL, vp, NULL));
    CK(cu.sync());
    double t0 = now_s();
    for (int i = 0; i < LAUNCH_N; i++)
        CK(cu.launch(vecadd, 1, 1, 1, 32, 1, 1, 0, NULL, vp, NULL));
    double t1 = now_s();
    CK(cu.sync());
    double t2 = now_s();
    fprintf(o, "launch_issue_per_s %.0f\n", LAUNCH_N / (t1 - t0));
    fprintf(o, "launch_e2e_per_s %.0f\n", LAUNCH_N / (t2 - t0));
    /* Workload: SGEMM_N sgemm launches on fresh inputs, results copied back each time. */
    int n = SGEMM_DIM;
    size_t bytes = sizeof(float) * (size_t)n * n;
    float *A = malloc(bytes), *B = malloc(bytes), *C = malloc(bytes);
    for (int i = 0; i < n * n; i++) {
        A[i] = (float)(i % 7) * 0.25f;
        B[i] = (float)(i % 5) * 0.5f;
    }
    CUdeviceptr dA, dB, dC;
    CK(cu.alloc(&dA, bytes));
    CK(cu.alloc(&dB, bytes));
    CK(cu.alloc(&dC, bytes));
    float alpha = 1.0f, beta = 0.0f;
    void *sp[] = {&n, &n, &n, &alpha, &dA, &dB, &beta, &dC};
    t0 = now_s();
    double sum = 0;
    for (int i = 0; i < SGEMM_N; i++) {
        A[0] = (float)i;
        CK(cu.htod(dA, A, bytes));
        CK(cu.htod(dB, B, bytes));
        CK(cu.launch(sgemm, (unsigned)n / 16, (unsigned)n / 16, 1, 16, 16, 1, 0, NULL, sp, NULL));
        CK(cu.dtoh(C, dC, bytes));
        sum += C[0];
    }
    fprintf(o, "sgemm_workload_s %.4f\n", now_s() - t0);
    fprintf(o, "sgemm_checksum %.1f\n", sum);
    fclose(o);
    return 0;
}

/* Forks a child whose stdout-to-be is P[1]; the parent keeps P[0] to read it. The pid (0 in
 * the child), or -1. */
static pid_t fork_piped(int p[2])
{
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid <= 0)
        close(p[0]);
    if (pid != 0)
        close(p[1]);
    return pid;
}

/* The driver the worker and the local runs load: the simulated GPU's build directory, or
 * NULL for the machine's own libcuda.so.1 (--system-driver). */
static const char *driver_dir = BENCH_SIM_DIR;

/* ---- the CUDA runtime workload ------------------------------------------------------------ */

#ifdef BENCH_TRAIN
#define TRAIN_STEPS 300
#define TRAIN_DIM 64

/* Runs the train program with LIBDIR first on the library path (the simulated driver or the
 * client); its loop time in seconds and checksum, or -1. STATS: TF_REMOTE_STATS. */
static double run_train(const char *libdir, const char *stats, double *checksum)
{
    int p[2];
    pid_t pid = fork_piped(p);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(p[1], 1);
        char lp[4096];
        snprintf(lp, sizeof(lp), "%s%s%s", libdir ? libdir : "", libdir ? ":" : "",
                 BENCH_CUDA_LIBDIR);
        setenv("LD_LIBRARY_PATH", lp, 1);
        if (BENCH_PRELOAD[0]) { /* (sanitizer builds: ASan's runtime first) */
            setenv("LD_PRELOAD", BENCH_PRELOAD, 1);
            setenv("ASAN_OPTIONS", "detect_leaks=0:verify_asan_link_order=0", 1);
        }
        if (stats)
            setenv("TF_REMOTE_STATS", stats, 1);
        setenv("TF_LOG_LEVEL", "error", 1);
        char steps[16], dim[16];
        snprintf(steps, sizeof(steps), "%d", TRAIN_STEPS);
        snprintf(dim, sizeof(dim), "%d", TRAIN_DIM);
        execl(BENCH_TRAIN, BENCH_TRAIN, steps, dim, (char *)NULL);
        _exit(127);
    }
    FILE *f = fdopen(p[0], "r");
    char line[256];
    double t = -1;
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "train_s %lf", &t) != 1)
            (void)sscanf(line, "train_checksum %lf", checksum);
    }
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? t : -1;
}

/* Local and remote runs alternate, REPS of each; the ratio is of the medians. */
static int train_bench(const char *dir)
{
    enum { REPS = 5 };
    double lt[REPS], rt[REPS], lsum = 0, rsum = 0;
    char stats[200];
    snprintf(stats, sizeof(stats), "%s/client-stats", dir);
    for (int i = 0; i < REPS; i++) {
        lt[i] = run_train(driver_dir, NULL, &lsum);
        rt[i] = run_train(BENCH_CLIENT_DIR, stats, &rsum);
        if (lt[i] < 0 || rt[i] < 0) {
            fprintf(stderr, "bench_remote: the train program failed\n");
            return 1;
        }
        if (lsum != rsum) {
            fprintf(stderr, "bench_remote: local and remote train results differ\n");
            return 1;
        }
    }
    double rts = -1;
    FILE *f = fopen(stats, "r");
    if (!f || fscanf(f, "round_trips %lf", &rts) != 1)
        rts = -1;
    if (f)
        fclose(f);
    double l = median(lt, REPS), r = median(rt, REPS);
    printf("local_cudart_workload: %.4f s\n", l);
    printf("remote_cudart_workload: %.4f s\n", r);
    printf("remote_cudart_workload_ratio: %.3f ratio\n", r / l);
    /* (the whole process's: start-up and teardown add a few to the loop's) */
    printf("remote_cudart_round_trips_per_step: %.2f round trips\n", rts / TRAIN_STEPS);
    return 0;
}
#endif

/* ---- orchestration -------------------------------------------------------------------------- */

struct kv {
    char key[64];
    double val;
};

static int run_child(const char *self, const char *libdir, const char *remote, struct kv *kv,
                     int cap)
{
    int p[2];
    pid_t pid = fork_piped(p);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (libdir)
            setenv("LD_LIBRARY_PATH", libdir, 1);
        else
            unsetenv("LD_LIBRARY_PATH");
        setenv("TF_LOG_LEVEL", "error", 1);
        char fd[16];
        snprintf(fd, sizeof(fd), "%d", p[1]);
        execl(self, self, "--cuda", fd, remote ? "remote" : "local", (char *)NULL);
        _exit(127);
    }
    FILE *f = fdopen(p[0], "r");
    int n = 0;
    while (n < cap && fscanf(f, "%63s %lf", kv[n].key, &kv[n].val) == 2)
        n++;
    fclose(f);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? n : -1;
}

static double get(const struct kv *kv, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].val;
    return -1;
}

static pid_t start_worker(char *addr, size_t len, char *dir)
{
    char tok[160], ready[160], shm[160];
    snprintf(tok, sizeof(tok), "%s/token", dir);
    snprintf(ready, sizeof(ready), "%s/ready", dir);
    snprintf(shm, sizeof(shm), "%s/sim-", dir);
    FILE *f = fopen(tok, "w");
    fprintf(f, "bench-token-0123456789\n");
    fclose(f);
    pid_t pid = fork();
    if (pid == 0) {
        if (driver_dir)
            setenv("LD_LIBRARY_PATH", driver_dir, 1);
        else
            unsetenv("LD_LIBRARY_PATH");
        setenv("TF_SIM_SHM_PREFIX", shm, 1);
        setenv("TF_LOG_LEVEL", "error", 1);
        /* (one tenant: the page-locked staging path, as the hypervisor's workers run) */
        execl(BENCH_WORKER, BENCH_WORKER, "--listen", "tcp://127.0.0.1:0", "--token-file", tok,
              "--ready-file", ready, "--pinned-staging", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 1000; i++) {
        f = fopen(ready, "r");
        if (f) {
            if (!fgets(addr, (int)len, f))
                addr[0] = 0;
            addr[strcspn(addr, "\n")] = 0;
            fclose(f);
            return pid;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1; /* it said why on stderr */
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    kill(pid, SIGKILL);
    return -1;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--cuda") == 0)
        return cuda_child(atoi(argv[2]), strcmp(argv[3], "remote") == 0);
    if (argc == 2 && strcmp(argv[1], "--system-driver") == 0) {
        driver_dir = NULL;
    } else if (argc != 1) {
        fprintf(stderr, "usage: bench_remote [--system-driver]\n");
        return 2;
    }
    fprintf(stderr, "bench_remote: worker and local runs on %s\n",
            driver_dir ? "the simulated GPU" : "this machine's libcuda.so.1");
    signal(SIGPIPE, SIG_IGN);
    int port, lfd;
    pthread_t th;
    raw_spin_ns = tf_net_spin_ns(TF_NET_SPIN_US);
    if (raw_listen(&port, &th, &lfd) != 0) {
        fprintf(stderr, "bench_remote: cannot start the raw socket server\n");
        return 1;
    }
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    setenv("BENCH_RAW_PORT", ps, 1);
    char dir[] = "/tmp/tf-bench-remote-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char addr[160];
    pid_t w = start_worker(addr, sizeof(addr), dir);
    if (w < 0) {
        fprintf(stderr, "bench_remote: tf-worker did not start\n");
        return 1;
    }
    setenv("TF_REMOTE", addr, 1);
    setenv("TF_TOKEN", "bench-token-0123456789", 1);
    char wp[16];
    snprintf(wp, sizeof(wp), "%d", (int)w);
    setenv("BENCH_WORKER_PID", wp, 1);
    struct kv rk[32], lk[32];
    int rn = run_child(argv[0], BENCH_CLIENT_DIR, "remote", rk, 32);
    int ln = run_child(argv[0], driver_dir, NULL, lk, 32);
    int train_rc = 0;
#ifdef BENCH_TRAIN
    train_rc = train_bench(dir);
#endif
    int qfd = raw_open(port, 'q', 0);
    if (qfd >= 0)
        close(qfd);
    pthread_join(th, NULL);
    close(lfd);
    kill(w, SIGTERM);
    waitpid(w, NULL, 0);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_remote: cannot remove %s\n", dir);
    if (rn < 0 || ln < 0 || train_rc) {
        fprintf(stderr, "bench_remote: a CUDA run failed\n");
        return 1;
    }
    static const char *const placements[] = {"same_cpu", "cross_cpu"};
    for (int i = 0; i < 2; i++) {
        char k[64];
        snprintf(k, sizeof(k), "raw_rtt_%s", placements[i]);
        double raw_rtt = get(rk, rn, k);
        if (raw_rtt <= 0)
            continue; /* one CPU: no cross-CPU figures */
        snprintf(k, sizeof(k), "sync_rtt_%s", placements[i]);
        double sync_rtt = get(rk, rn, k);
        snprintf(k, sizeof(k), "raw_block_rtt_%s", placements[i]);
        printf("remote_raw_tcp_rtt_blocking_%s: %.2f us\n", placements[i], get(rk, rn, k));
        printf("remote_raw_tcp_rtt_%s: %.2f us\n", placements[i], raw_rtt);
        printf("remote_sync_call_rtt_%s: %.2f us\n", placements[i], sync_rtt);
        printf("remote_sync_call_rtt_ratio_%s: %.3f x\n", placements[i], sync_rtt / raw_rtt);
    }
    double htod = get(rk, rn, "htod_mbs"), dtoh = get(rk, rn, "dtoh_mbs");
    double up = get(rk, rn, "raw_up_mbs"), down = get(rk, rn, "raw_down_mbs");
    printf("remote_raw_tcp_bw_up: %.0f MiB/s\n", up);
    printf("remote_htod_bw: %.0f MiB/s\n", htod);
    printf("remote_htod_bw_fraction: %.1f %%\n", 100.0 * htod / up);
    printf("remote_raw_tcp_bw_down: %.0f MiB/s\n", down);
    printf("remote_dtoh_bw: %.0f MiB/s\n", dtoh);
    printf("remote_dtoh_bw_fraction: %.1f %%\n", 100.0 * dtoh / down);
    double cu_up = get(rk, rn, "raw_up_cpu"), cu_hd = get(rk, rn, "htod_cpu");
    double cu_dn = get(rk, rn, "raw_down_cpu"), cu_dh = get(rk, rn, "dtoh_cpu");
    printf("remote_raw_tcp_up_cpu: %.3f ns/B\n", cu_up);
    printf("remote_htod_cpu: %.3f ns/B\n", cu_hd);
    printf("remote_htod_cpu_bound_fraction: %.1f %%\n", 100.0 * cu_up / cu_hd);
    printf("remote_raw_tcp_down_cpu: %.3f ns/B\n", cu_dn);
    printf("remote_dtoh_cpu: %.3f ns/B\n", cu_dh);
    printf("remote_dtoh_cpu_bound_fraction: %.1f %%\n", 100.0 * cu_dn / cu_dh);
    printf("remote_launch_issue_rate: %.0f launches/s\n", get(rk, rn, "launch_issue_per_s"));
    printf("remote_launch_e2e_rate: %.0f launches/s\n", get(rk, rn, "launch_e2e_per_s"));
    printf("local_launch_issue_rate: %.0f launches/s\n", get(lk, ln, "launch_issue_per_s"));
    printf("local_launch_e2e_rate: %.0f launches/s\n", get(lk, ln, "launch_e2e_per_s"));
    double ls = get(lk, ln, "sgemm_workload_s"), rs = get(rk, rn, "sgemm_workload_s");
    printf("local_sgemm_workload: %.4f s\n", ls);
    printf("remote_sgemm_workload: %.4f s\n", rs);
    printf("remote_sgemm_workload_ratio: %.3f x\n", rs / ls);
    if (get(lk, ln, "sgemm_checksum") != get(rk, rn, "sgemm_checksum")) {
        fprintf(stderr, "bench_remote: local and remote sgemm results differ\n");
        return 1;
    }
    return 0;
}
