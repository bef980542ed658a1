/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA driver error names and messages from the one table cuerr.def, for every component
 * that answers cuGetErrorName / cuGetErrorString itself (the simulated GPU, libtf_client)
 * so they all say exactly what the others say. Codes are plain ints (no cuda.h needed here).
 * Read-only data: thread-safe.
 */
#ifndef TF_COMMON_CUERR_H
#define TF_COMMON_CUERR_H

/* "CUDA_ERROR_INVALID_VALUE" for CUresult CODE; NULL for a code cuda.h does not define. */
const char *tf_cuerr_name(int code);
/* "invalid argument" for CUresult CODE; NULL for a code cuda.h does not define. */
const char *tf_cuerr_string(int code);

#endif
