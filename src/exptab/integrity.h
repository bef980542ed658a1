/* SPDX-License-Identifier: Apache-2.0
 *
 * The answer of the CUDA runtime's driver integrity check (export table INTEGRITY_CHECK, see
 * docs/internals/exptab.md): an HMAC (RFC 2104) over MD2 (RFC 1319) with a fixed 16-byte key,
 * of a 48-byte record (driver and runtime versions, process and thread, the addresses of two
 * export tables and of the check function, the caller's time) followed by 28 bytes per device
 * (UUID, PCI domain, bus and device). Runtimes whose version ends in 0 or 1 expect a fixed
 * value instead. Pure functions, thread-safe.
 */
#ifndef TF_EXPTAB_INTEGRITY_H
#define TF_EXPTAB_INTEGRITY_H

#include <stddef.h>
#include <stdint.h>

/* MD2 of LEN bytes at MSG (RFC 1319). */
void tf_md2(const void *msg, size_t len, uint8_t out[16]);

/* HMAC-MD2 (block size 16) of MSG with the 16-byte KEY. */
void tf_hmac_md2(const uint8_t key[16], const void *msg, size_t len, uint8_t out[16]);

struct tf_integrity_in {
    uint32_t driver_version; /* cuDriverGetVersion */
    uint32_t version;        /* what the runtime passed */
    uint32_t pid;
    uint32_t thread;                            /* low 32 bits of pthread_self() */
    uint64_t cudart_table, integrity_table, fn; /* addresses */
    uint64_t unix_seconds;                      /* what the runtime passed */
};

struct tf_integrity_dev {
    uint8_t uuid[16];
    int32_t pci_domain, pci_bus, pci_device;
};

/* The check's 16-byte answer for IN and the NDEV devices DEVS (as two native u64 words). */
void tf_integrity_answer(const struct tf_integrity_in *in, const struct tf_integrity_dev *devs,
                         size_t ndev, uint64_t out[2]);

#endif
