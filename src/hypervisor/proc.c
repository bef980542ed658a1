/* SPDX-License-Identifier: Apache-2.0
 *
 * Process liveness from /proc (see proc.h).
 */
#include "hypervisor/proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads /proc/PID/stat; returns the text after the comm field's closing parenthesis. */
static char *stat_fields(int pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
    return p ? p + 1 : NULL;
}

int64_t tf_hv_proc_start_ticks(int pid)
{
    char buf[1024], *save = NULL;
    char *p = pid > 0 ? stat_fields(pid, buf, sizeof(buf)) : NULL;
    if (!p)
        return -1;
    int field = 2;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        if (++field == 22)
            return atoll(tok);
    return -1;
}

int tf_hv_proc_ppid(int pid)
{
    char buf[1024], *save = NULL;
    char *p = pid > 0 ? stat_fields(pid, buf, sizeof(buf)) : NULL;
    if (!p)
        return 0;
    int field = 2;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
        if (++field == 4)
            return atoi(tok);
    return 0;
}

bool tf_hv_proc_alive(int pid, int64_t start_ticks)
{
    char buf[1024], *save = NULL;
    char *p = pid > 0 ? stat_fields(pid, buf, sizeof(buf)) : NULL;
    if (!p)
        return false;
    int field = 2;
    for (char *tok = strtok_r(p, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 3 && (tok[0] == 'Z' || tok[0] == 'X'))
            return false;
        if (field == 22)
            return start_ticks < 0 || atoll(tok) == start_ticks;
    }
    return false;
}

int tf_hv_proc_uid(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = pid > 0 ? fopen(path, "r") : NULL;
    int uid = -1;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "Uid:", 4)) {
            uid = atoi(line + 4);
            break;
        }
    if (f)
        fclose(f);
    return uid;
}
