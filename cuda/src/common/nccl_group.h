/* Internal: the GPUs of one host driven by one thread through NCCL (nccl_group.cu; a
 * stand-in without NCCL, nccl_group_none.c).  One communicator per device, made with
 * ncclCommInitAll; every collective below is issued for all devices inside one NCCL group
 * on each device's default stream, so it is ordered after the kernels launched there and
 * returns without waiting for the GPUs.  Buffers: one pointer per device, in the order of
 * the devices given to tk_nccl_open.  Used by FastTucker on several GPUs and the
 * all-reduce measurement of tk-bench. */
#ifndef TK_NCCL_GROUP_H
#define TK_NCCL_GROUP_H

#include <stddef.h>

#include "tk_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_nccl_group tk_nccl_group;

/* Communicators over devices first .. first + count - 1.  Without NCCL in the build:
 * TK_ERR_UNSUPPORTED naming what is missing.  *out is NULL on error. */
tk_status tk_nccl_open(int first, int count, tk_nccl_group **out);
void tk_nccl_close(tk_nccl_group *g);
int tk_nccl_count(const tk_nccl_group *g);

/* Device p broadcasts floats [offset[p], offset[p + 1]) of its buf[p] to the same place in
 * every other device's buffer (offset has count + 1 values, ascending): the all-gather of
 * rows each device owns, when the ranges differ in size. */
tk_status tk_nccl_broadcast_ranges(tk_nccl_group *g, float *const *buf, const size_t *offset);
/* buf[0] = the sum of every device's buf[p] (count floats); the others are left as they were. */
tk_status tk_nccl_reduce_to_first(tk_nccl_group *g, float *const *buf, size_t count);
/* Every device's buf[p] = buf[0] (count floats). */
tk_status tk_nccl_broadcast_first(tk_nccl_group *g, float *const *buf, size_t count);
/* Every device's buf[p] = the sum of all (count floats, in place). */
tk_status tk_nccl_allreduce(tk_nccl_group *g, float *const *buf, size_t count);
/* Wait for every device's work, NCCL's included. */
tk_status tk_nccl_synchronize(tk_nccl_group *g);

#ifdef __cplusplus
}
#endif
#endif
