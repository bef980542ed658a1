/* SPDX-License-Identifier: Apache-2.0
 *
 * tfctl: the TensorFusion command line. Subcommands are dispatched through one static
 * {name, function, help} table; each lives in its own cmd_*.c file.
 */
#include "cli/cmds.h"

#include <stdio.h>
#include <string.h>

static const struct tf_cmd cmds[] = {
    {"run", tf_cmd_run, "run a command on a vGPU of this machine (local mode)"},
    {"get", tf_cmd_get, "list this machine's GPUs or workloads (get gpus|workloads)"},
    {"top", tf_cmd_top, "live per-GPU and per-workload utilisation and VRAM"},
    {"query", tf_cmd_query, "run SQL on the local metrics database"},
    {"console", tf_cmd_console, "print the link to this machine's web console"},
    {"limits", tf_cmd_limits, "run the soft-isolation limit engine; show/set limit regions"},
    {"models", tf_cmd_models, "list the GPU model table (TFLOPS, VRAM)"},
    {"spec", tf_cmd_spec, "print the normalised workload spec of manifests (-f FILE)"},
    {"simulate", tf_cmd_simulate,
     "place a stream of pods on a described cluster (scheduler dry run)"},
    {"plan", tf_cmd_plan, "plan node compaction, defrag or autoscaling (seed 002)"},
    {"cron", tf_cmd_cron, "next fire times of a cron schedule in a time zone (cron next)"},
    {"version", tf_cmd_version, "print the version"},
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: tfctl <command> [args...]\n\ncommands:\n");
    for (size_t i = 0; i < NCMDS; i++)
        fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\nRun 'tfctl <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < NCMDS; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "tfctl: unknown command \"%s\"\n\n", argv[1]);
    usage(stderr);
    return 2;
}
