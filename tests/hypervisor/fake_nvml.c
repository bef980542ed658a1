/* SPDX-License-Identifier: Apache-2.0
 *
 * Test double for libnvidia-ml.so.1, only for the hypervisor's discovery/placement/API tests
 * that must run before (and independently of) the simulated GPU: the device list is read from
 * the file named by $TF_FAKE_NVML_FILE on every nvmlDeviceGetCount, one device per line
 *   NVML name|uuid|memory bytes|utilisation percent|memory used bytes[|PCI bus number]
 * so a test can change the devices while the hypervisor runs. A device with a bus number
 * answers nvmlDeviceGetPciInfo_v3 as 0000:BUS:00.0 (hex). Everything GPU-facing beyond
 * discovery is tested on the simulated GPU (src/sim).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXDEV 16

struct dev {
    char name[96], uuid[80];
    unsigned long long mem, used;
    unsigned int util;
    int bus; /* -1: no PCI info */
};

static struct dev devs[MAXDEV];
static int ndev;

int nvmlInit_v2(void);
int nvmlShutdown(void);
const char *nvmlErrorString(int r);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d);
int nvmlDeviceGetName(void *d, char *buf, unsigned int len);
int nvmlDeviceGetUUID(void *d, char *buf, unsigned int len);
int nvmlDeviceGetMemoryInfo(void *d, unsigned long long *m);
int nvmlDeviceGetUtilizationRates(void *d, unsigned int *u);
int nvmlDeviceGetPciInfo_v3(void *d, unsigned int *pci);

static void load(void)
{
    const char *path = getenv("TF_FAKE_NVML_FILE");
    FILE *f = path ? fopen(path, "r") : NULL;
    ndev = 0;
    if (!f)
        return;
    char line[512];
    while (ndev < MAXDEV && fgets(line, sizeof(line), f)) {
        struct dev *d = &devs[ndev];
        char *save = NULL, *tok[6] = {0};
        int n = 0;
        line[strcspn(line, "\n")] = '\0';
        for (char *t = strtok_r(line, "|", &save); t && n < 6; t = strtok_r(NULL, "|", &save))
            tok[n++] = t;
        if (n < 3)
            continue;
        snprintf(d->name, sizeof(d->name), "%s", tok[0]);
        snprintf(d->uuid, sizeof(d->uuid), "%s", tok[1]);
        d->mem = strtoull(tok[2], NULL, 10);
        d->util = n > 3 ? (unsigned)atoi(tok[3]) : 0;
        d->used = n > 4 ? strtoull(tok[4], NULL, 10) : 0;
        d->bus = n > 5 ? (int)strtol(tok[5], NULL, 16) : -1;
        ndev++;
    }
    fclose(f);
}

int nvmlInit_v2(void)
{
    load();
    return 0;
}

int nvmlShutdown(void)
{
    return 0;
}

const char *nvmlErrorString(int r)
{
    return r == 2 ? "Invalid Argument" : "Unknown Error";
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
    load();
    *n = (unsigned)ndev;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **d)
{
    if (i >= (unsigned)ndev)
        return 2;
    *d = &devs[i];
    return 0;
}

int nvmlDeviceGetName(void *d, char *buf, unsigned int len)
{
    snprintf(buf, len, "%s", ((struct dev *)d)->name);
    return 0;
}

int nvmlDeviceGetUUID(void *d, char *buf, unsigned int len)
{
    snprintf(buf, len, "%s", ((struct dev *)d)->uuid);
    return 0;
}

int nvmlDeviceGetMemoryInfo(void *d, unsigned long long *m)
{
    struct dev *x = d;
    m[0] = x->mem;
    m[1] = x->mem - x->used;
    m[2] = x->used;
    return 0;
}

int nvmlDeviceGetUtilizationRates(void *d, unsigned int *u)
{
    u[0] = ((struct dev *)d)->util;
    u[1] = 0;
    return 0;
}

/* nvmlPciInfo_t: busIdLegacy[16], domain, bus, device, pciDeviceId, pciSubSystemId, busId[32]
 * (68 bytes; src/sim/nvml_abi.h). */
int nvmlDeviceGetPciInfo_v3(void *d, unsigned int *pci)
{
    struct dev *x = d;
    if (x->bus < 0)
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    memset(pci, 0, 68);
    pci[4] = 0;
    pci[5] = (unsigned)x->bus;
    pci[6] = 0;
    snprintf((char *)&pci[9], 32, "00000000:%02X:00.0", (unsigned)x->bus);
    return 0;
}
