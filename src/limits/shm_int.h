/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to src/limits/shm*.c: what the region's live operations (shm.c) and its files
 * (shm_file.c) share.
 */
#ifndef TF_LIMITS_SHM_INT_H
#define TF_LIMITS_SHM_INT_H

#include "limits/shm.h"

/* Stores CFG's fields into R's limits part (no seqlock: the caller holds it, or R is not
 * shared yet). */
void tf__shm_store_config(struct tf_shm_region *r, const struct tf_shm_config *cfg);
/* Sleeps MS milliseconds (through signals). */
void tf__shm_sleep_ms(unsigned ms);

#endif
