/* SPDX-License-Identifier: Apache-2.0
 *
 * Configuration of the simulated GPUs: which devices exist (model, memory, SM count), their
 * UUIDs, and where the cross-process device state lives. Read by both simulated libraries
 * (libcuda.so.1 and libnvidia-ml.so.1) so that they agree on the devices.
 *
 * Sources, later ones overriding earlier ones:
 *   1. built-in default: one A100-80GB;
 *   2. TF_SIM_CONFIG=<file> (format below);
 *   3. TF_SIM_DEVICES="<spec>[,<spec>...]", <spec> := model[:memory[:sms]]
 *      e.g. "H100:80Gi:132,L4:24Gi:58", "A100" (defaults from the model table),
 *      "L4::40" (default memory, 40 SMs); TF_SIM_DEVICES="" or "none" means no device;
 *   4. TF_SIM_SEED (UUID seed, default "tf-sim"), TF_SIM_SHM_PREFIX (default
 *      "/dev/shm/tf-sim-"; the state file of a device is <prefix><uuid>).
 *
 * Config file: UTF-8 text, one setting per line, '#' starts a comment, blank lines ignored:
 *   seed = node-a
 *   shm_prefix = /tmp/tf-sim-test-
 *   device = H100:80Gi:132
 *   device = L4 uuid=GPU-8a1b2c3d-0000-4000-8000-000000000001
 * Keys: seed, shm_prefix, device (repeatable, in device-index order; optional uuid=).
 *
 * UUIDs: unless given, device i's UUID is derived from (seed, i, model) by a fixed hash, so
 * it is stable across runs and machines with the same configuration, and formatted like
 * NVIDIA's: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lower-case hex).
 *
 * The parsers are pure (no I/O except tf_sim_config_load reading the environment and the
 * file) and thread-safe; on error they return a negative TF_E* code and write a message
 * naming the source, the key and the offending value into ERR.
 */
#ifndef TF_SIM_SIMCFG_H
#define TF_SIM_SIMCFG_H

#include <stddef.h>
#include <stdint.h>

#include "core/gpu_models.h"
#include "sim/hwspec.h"

#define TF_SIM_MAX_DEVICES 16
#define TF_SIM_UUID_LEN 40 /* "GPU-" + 36 */
#define TF_SIM_DEFAULT_MODEL "A100-80GB"
#define TF_SIM_DEFAULT_SEED "tf-sim"
#define TF_SIM_DEFAULT_SHM_PREFIX "/dev/shm/tf-sim-"
#define TF_SIM_MAX_SMS 1024
#define TF_SIM_MAX_MEMORY (INT64_C(1) << 44) /* 16 TiB */

struct tf_sim_devcfg {
    const struct tf_gpu_model *model; /* table entry (never NULL in a parsed config) */
    const struct tf_sim_hwspec *hw;   /* hardware facts (never NULL in a parsed config) */
    int64_t memory;                   /* bytes */
    int sm_count;
    int uuid_given; /* uuid came from the config, not derived */
    uint8_t uuid[16];
    char uuid_str[TF_SIM_UUID_LEN + 1]; /* "GPU-..." */
};

struct tf_sim_config {
    int ndev;
    struct tf_sim_devcfg dev[TF_SIM_MAX_DEVICES];
    char seed[128];
    char shm_prefix[256];
};

/* Resets CFG to the built-in default (one A100-80GB, default seed and prefix). */
void tf_sim_config_default(struct tf_sim_config *cfg);

/* Replaces CFG's device list by the TF_SIM_DEVICES-style list SPEC ("" or "none": no device).
 * SOURCE names the origin in messages ("TF_SIM_DEVICES"). UUIDs are (re)derived. */
int tf_sim_config_parse_devices(struct tf_sim_config *cfg, const char *spec, const char *source,
                                char *err, size_t errlen);

/* Applies config-file text TEXT[0..LEN) (need not be NUL-terminated) to CFG: settings it names
 * replace CFG's; any device line replaces CFG's whole device list. SOURCE (the file name)
 * prefixes messages: "<source>:<line>: ...". */
int tf_sim_config_parse_file(struct tf_sim_config *cfg, const char *text, size_t len,
                             const char *source, char *err, size_t errlen);

/* Builds the configuration from the defaults and the environment (TF_SIM_CONFIG,
 * TF_SIM_DEVICES, TF_SIM_SEED, TF_SIM_SHM_PREFIX), as described above. */
int tf_sim_config_load(struct tf_sim_config *cfg, char *err, size_t errlen);

/* Recomputes the UUID of every device not given one explicitly, from CFG->seed. */
void tf_sim_config_derive_uuids(struct tf_sim_config *cfg);

/* Parses "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (hex of any case) into 16 bytes. */
int tf_sim_uuid_parse(const char *s, uint8_t out[16]);
/* Formats 16 bytes as "GPU-..." into BUF (at least TF_SIM_UUID_LEN + 1 bytes). */
void tf_sim_uuid_format(const uint8_t uuid[16], char *buf);

#endif
