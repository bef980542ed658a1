/* SPDX-License-Identifier: Apache-2.0
 *
 * Test double for tf-worker, installed as "tf-worker" for the hypervisor's hard-isolation
 * lifecycle tests (spawn arguments, ready file, survival of a hypervisor crash, stop on
 * release). It prints its arguments, writes a fake address to --ready-file and waits for
 * SIGTERM. The real worker (src/remote) is tested with real CUDA calls on the simulated GPU.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *ready = NULL;
    for (int i = 1; i < argc; i++) {
        printf("%s%s", i > 1 ? " " : "", argv[i]);
        if (!strcmp(argv[i], "--ready-file") && i + 1 < argc)
            ready = argv[i + 1];
    }
    printf("\n");
    fflush(stdout);
    if (!ready)
        return 2;
    FILE *f = fopen(ready, "w");
    if (!f)
        return 1;
    fprintf(f, "tcp://127.0.0.1:%d\n", 40000 + (int)(getpid() % 20000));
    fclose(f);
    for (;;)
        pause();
}
