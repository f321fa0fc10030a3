/* The NCCL group in a build without NCCL (or without CUDA): several GPUs are refused
 * with the reason; nothing else can be reached without a group. */
#include "nccl_group.h"

tk_status tk_nccl_open(int first, int count, tk_nccl_group **out)
{
    (void)first;
    *out = 0;
    return tk_set_error(TK_ERR_UNSUPPORTED,
                        "%d GPUs need NCCL, and this build has none (install libnccl-dev or the CUDA toolkit's "
                        "NCCL and rebuild; one GPU works without it)",
                        count);
}
void tk_nccl_close(tk_nccl_group *g) { (void)g; }
int tk_nccl_count(const tk_nccl_group *g)
{
    (void)g;
    return 0;
}
tk_status tk_nccl_broadcast_ranges(tk_nccl_group *g, float *const *buf, const size_t *offset)
{
    (void)g, (void)buf, (void)offset;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no NCCL");
}
tk_status tk_nccl_reduce_to_first(tk_nccl_group *g, float *const *buf, size_t count)
{
    (void)g, (void)buf, (void)count;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no NCCL");
}
tk_status tk_nccl_broadcast_first(tk_nccl_group *g, float *const *buf, size_t count)
{
    (void)g, (void)buf, (void)count;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no NCCL");
}
tk_status tk_nccl_allreduce(tk_nccl_group *g, float *const *buf, size_t count)
{
    (void)g, (void)buf, (void)count;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no NCCL");
}
tk_status tk_nccl_synchronize(tk_nccl_group *g)
{
    (void)g;
    return tk_set_error(TK_ERR_UNSUPPORTED, "this build has no NCCL");
}

#include "tk_bench_hooks.h"

tk_status tk_nccl_allreduce_measure(int count, size_t bytes, int repeat, double *ms, double *bus_gbps)
{
    (void)bytes, (void)repeat;
    *ms = *bus_gbps = 0;
    tk_nccl_group *g = 0;
    return tk_nccl_open(0, count, &g);
}
