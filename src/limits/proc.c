/* SPDX-License-Identifier: Apache-2.0
 *
 * /proc readers: start time, pid namespace, NSpid; the default liveness oracle.
 */
#include "limits/proc.h"

#include "common/err.h"
#include "limits/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? TF_ENOENT : TF_EIO;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = 0;
    return got ? 0 : TF_EIO;
}

int tf_proc_starttime(pid_t pid, uint64_t *ticks)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int rc = read_small(path, buf, sizeof(buf));
    if (rc)
        return rc;
    /* comm may hold spaces and parentheses: fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return TF_EIO;
    p++;
    /* After ')': field 3 (state) ... field 22 (starttime) is the 20th token. */
    for (int field = 3; field < 22; field++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
        if (!*p)
            return TF_EIO;
    }
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p)
        return TF_EIO;
    *ticks = v;
    return 0;
}

uint64_t tf_proc_pidns(pid_t pid)
{
    char path[64];
    if (pid == 0)
        snprintf(path, sizeof(path), "/proc/self/ns/pid");
    else
        snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int tf_proc_nspid(pid_t pid, uint32_t *inner)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    int rc = read_small(path, buf, sizeof(buf));
    if (rc)
        return rc;
    const char *line = strstr(buf, "\nNSpid:");
    if (!line) {
        *inner = (uint32_t)pid;
        return 0;
    }
    line += 7;
    unsigned long last = 0;
    int any = 0;
    for (;;) {
        while (*line == ' ' || *line == '\t')
            line++;
        if (*line < '0' || *line > '9')
            break;
        char *end;
        last = strtoul(line, &end, 10);
        line = end;
        any = 1;
    }
    if (!any)
        return TF_EIO;
    *inner = (uint32_t)last;
    return 0;
}

uint64_t tf_proc_self_owner(void)
{
    uint64_t st = 0;
    pid_t me = getpid();
    (void)tf_proc_starttime(me, &st);
    return tf_shm_owner_id((uint32_t)me, st);
}

static bool judge(pid_t pid, uint64_t owner)
{
    uint64_t st;
    int rc = tf_proc_starttime(pid, &st);
    if (rc == TF_ENOENT)
        return false;
    if (rc)
        return true; /* cannot tell */
    return tf_shm_owner_id(tf_shm_owner_pid(owner), st) == owner;
}

bool tf_proc_alive(const struct tf_shm_pid *slot, uint64_t owner, void *ctx)
{
    uint64_t mine = ctx ? *(const uint64_t *)ctx : 0;
    uint64_t ns = atomic_load_explicit(&((struct tf_shm_pid *)slot)->pidns, memory_order_relaxed);
    if (ns && mine && ns == mine)
        return judge((pid_t)tf_shm_owner_pid(owner), owner);
    return true;
}

bool tf_proc_alive_host(const struct tf_shm_pid *slot, uint64_t owner, void *ctx)
{
    struct tf_shm_pid *s = (struct tf_shm_pid *)slot;
    uint32_t host = atomic_load_explicit(&s->host_pid, memory_order_relaxed);
    if (!host)
        return tf_proc_alive(slot, owner, ctx);
    /* host_pid is in the engine's namespace; the start-time tag still identifies it. */
    uint64_t st;
    int rc = tf_proc_starttime((pid_t)host, &st);
    if (rc == TF_ENOENT)
        return false;
    if (rc)
        return true;
    return ((st & 0x7fffffffu) << 32) == (owner & ~(UINT64_C(0xffffffff) | TF_SHM_OWNER_RECLAIM));
}
