/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tfctl: the subcommand table entry type and every subcommand's entry point.
 * Each entry point gets argv starting at the subcommand name and returns the exit code
 * (0 ok, 1 runtime failure, 2 bad usage or invalid input).
 */
#ifndef TF_CLI_CMDS_H
#define TF_CLI_CMDS_H

struct tf_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
};

int tf_cmd_models(int argc, char **argv);
int tf_cmd_limits(int argc, char **argv);
int tf_cmd_run(int argc, char **argv);
int tf_cmd_get(int argc, char **argv);
int tf_cmd_top(int argc, char **argv);
int tf_cmd_query(int argc, char **argv);
int tf_cmd_console(int argc, char **argv);
int tf_cmd_spec(int argc, char **argv);
int tf_cmd_simulate(int argc, char **argv);
int tf_cmd_version(int argc, char **argv);
int tf_cmd_plan(int argc, char **argv);
int tf_cmd_cron(int argc, char **argv);

#endif
