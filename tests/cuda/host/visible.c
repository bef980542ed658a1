/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA_VISIBLE_DEVICES as the driver applies it, checked from the outside: this program runs
 * itself ("visible list") under a series of values and compares the devices CUDA then shows
 * (by UUID, in ordinal order) with the rules of src/sim/visible.h, taking the machine's list
 * from a run with the variable unset (CUDA_DEVICE_ORDER=PCI_BUS_ID, so indices are those of
 * nvidia-smi). The same rules hold for the simulated and for the real driver; on a real GPU
 * this confirms the simulator's model (scripts/gpu-check.sh).
 * Usage: visible         run every case; needs no PTX
 *        visible list    print "count N" and one "uuid GPU-..." line per device, or
 *                        "init CUDA_ERROR_..." when cuInit fails
 */
#include "hostcommon.h"

#include <sys/wait.h>
#include <unistd.h>

#define MAXDEV 64

static int list(void)
{
    CUresult r = cuInit(0);
    int n = 0;
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        cuGetErrorName(r, &name);
        printf("init %s\n", name ? name : "?");
        return 0;
    }
    printf("count %d\n", n);
    for (int i = 0; i < n; i++) {
        CUdevice d;
        CUuuid u;
        CK(cuDeviceGet(&d, i));
        CK(cuDeviceGetUuid(&u, d));
        printf("uuid GPU-");
        for (int k = 0; k < 16; k++)
            printf("%s%02x", k == 4 || k == 6 || k == 8 || k == 10 ? "-" : "",
                   (unsigned char)u.bytes[k]);
        printf("\n");
    }
    return 0;
}

/* Output of "visible list" with CUDA_VISIBLE_DEVICES=SPEC (NULL: unset), into BUF. */
static void run_list(const char *spec, char *buf, size_t cap)
{
    int fd[2];
    if (pipe(fd) != 0)
        host_mismatch("pipe failed");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        host_mismatch("fork failed");
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        if (spec)
            setenv("CUDA_VISIBLE_DEVICES", spec, 1);
        else
            unsetenv("CUDA_VISIBLE_DEVICES");
        execl("/proc/self/exe", "visible", "list", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd[0], buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        host_mismatch("CUDA_VISIBLE_DEVICES=\"%s\": \"visible list\" failed: %s",
                      spec ? spec : "(unset)", buf);
}

static char uuid[MAXDEV][48];
static int ndev, ncases;

/* Runs SPEC and expects the machine devices WANT[0..NWANT) (NWANT 0: cuInit fails with
 * CUDA_ERROR_NO_DEVICE, as the driver does when no device is visible). */
static void expect(const char *spec, int nwant, const int *want)
{
    char want_s[MAXDEV * 48 + 64], got[sizeof(want_s)];
    if (nwant == 0) {
        snprintf(want_s, sizeof(want_s), "init CUDA_ERROR_NO_DEVICE\n");
    } else {
        snprintf(want_s, sizeof(want_s), "count %d\n", nwant);
        for (int i = 0; i < nwant; i++)
            snprintf(want_s + strlen(want_s), sizeof(want_s) - strlen(want_s), "uuid %s\n",
                     uuid[want[i]]);
    }
    run_list(spec, got, sizeof(got));
    if (strcmp(got, want_s) != 0)
        host_mismatch("CUDA_VISIBLE_DEVICES=\"%s\": got\n%swant\n%s", spec, got, want_s);
    ncases++;
}

/* SPEC shows the machine devices listed after it / shows no device */
#define EXPECT(spec, ...)                                                                          \
    do {                                                                                           \
        const int w_[] = {__VA_ARGS__};                                                            \
        expect((spec), (int)(sizeof(w_) / sizeof(w_[0])), w_);                                     \
    } while (0)
#define NONE(spec) expect((spec), 0, NULL)

int main(int argc, char **argv)
{
    host_name = "visible";
    if (argc >= 2 && strcmp(argv[1], "list") == 0)
        return list();
    setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
    char out[MAXDEV * 48 + 64];
    run_list(NULL, out, sizeof(out));
    const char *p = strstr(out, "count ");
    if (!p || sscanf(p, "count %d", &ndev) != 1 || ndev < 1 || ndev > MAXDEV)
        host_mismatch("no device with CUDA_VISIBLE_DEVICES unset: %s", out);
    for (int i = 0; i < ndev; i++) {
        p = strstr(p + 1, "uuid ");
        if (!p || sscanf(p, "uuid %47s", uuid[i]) != 1)
            host_mismatch("device %d has no UUID line: %s", i, out);
    }
    char s[256];
    int last = ndev - 1;
    /* documented by NVIDIA */
    NONE("");
    EXPECT("0", 0);
    EXPECT(uuid[0], 0);
    snprintf(s, sizeof(s), "%d", ndev); /* past the last device */
    NONE(s);
    NONE("-1");
    snprintf(s, sizeof(s), "0,-1,%d", last);
    EXPECT(s, 0);
    NONE("GPU-zzzzzzzz");
    /* the simulator's model of details NVIDIA does not document: strtoul-style indices,
     * leading blanks skipped, a repeated device hides every device, prefixes */
    EXPECT(" 0", 0);
    EXPECT("0abc", 0);
    NONE("0,0");
    int same = 0;
    for (int i = 0; i < ndev; i++)
        same += strncmp(uuid[i], uuid[0], 12) == 0;
    snprintf(s, sizeof(s), "%.12s", uuid[0]);
    if (same == 1)
        EXPECT(s, 0);
    else
        NONE(s);
    if (ndev == 1)
        EXPECT("GPU-", 0);
    else
        NONE("GPU-");
    if (ndev >= 2) {
        EXPECT("1,0", 1, 0);
        snprintf(s, sizeof(s), "%s,%s", uuid[1], uuid[0]);
        EXPECT(s, 1, 0);
        snprintf(s, sizeof(s), "1,%d,0", ndev);
        EXPECT(s, 1);
        NONE("0,1,0");
        snprintf(s, sizeof(s), "%s,1", uuid[1]); /* a UUID list takes no indices */
        EXPECT(s, 1);
    }
    printf("visible: PASS %d CUDA_VISIBLE_DEVICES cases on %d devices\n", ncases, ndev);
    return 0;
}
