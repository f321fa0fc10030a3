/* Internal: what a fixels plan holds, the tables' view the segmentation reads (host or device
 * copies), and its scratch. */
#ifndef TK_FIXELS_INTERNAL_H
#define TK_FIXELS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/multi_device.h"
#include "tk_fixels.h"
#include "tracking/tracking_internal.h" /* TK_TRACK_ROWS_MAX: the climb's monomial form */

#ifdef __cplusplus
extern "C" {
#endif

/* The largest direction set (the arrays a voxel's scratch sizes by the set's n). */
#define TK_FIXELS_N_MAX TK_FIXELS_DIRECTIONS_DENSE

/* The tables and settings of one segmentation, host or device pointers. */
typedef struct tk_fixels_view {
    int n;                     /* the set's directions: TK_FIXELS_DIRECTIONS or TK_FIXELS_DIRECTIONS_DENSE */
    const double (*dirs)[3];   /* n unit directions */
    const double *weights;     /* their integration weights */
    const short (*adj)[6];     /* their neighbours */
    const double *basis;       /* k x n: the SH functions at the directions, coefficient-major */
    const double *map;         /* k x k, column-major: tensor = map * sh (the climb's tensor) */
    const int (*rows_src)[6];  /* the tensor's monomial form (tracking_tensor.h), lmax <= 8 */
    const double (*rows_weight)[6];
    int k, lmax, slots, max_lobes, max_fixels;
    double integral_threshold, peak_value_threshold, lobe_merge_ratio;
} tk_fixels_view;

struct tk_fixels_plan {
    tk_fixels_options opts; /* checked */
    int k, slots;
    double *basis, *map;
    int rows_src[TK_TRACK_ROWS_MAX][6];
    double rows_weight[TK_TRACK_ROWS_MAX][6];
    tk_fixels_view view;    /* the host tables */
    int num_devices;        /* cuda: devices opts.cuda_device .. + num_devices - 1; 0 on the CPU */
    struct tk_fixels_cuda_state *cuda[TK_MAX_CUDA_DEVICES]; /* one state a device */
};

/* One positive lobe while the segmentation grows it (MRtrix3's FOD_lobe): its peaks are a list
 * through tk_fixels_peak.next, as a merge joins two lists. */
typedef struct {
    int alive, parent;  /* parent: the lobe it was merged into (itself while alive) */
    double max_peak, integral, mean[3];
    int peak_head, peak_tail, num_peaks;
} tk_fixels_lobe;

typedef struct {
    double dir[3];
    int next, seed; /* seed: the direction index the peak started from */
} tk_fixels_peak;

/* One voxel's scratch: arrays in one block (tk_fixels_work_bind), so that a device thread's
 * lives in global memory and a host thread's is one allocation. */
typedef struct {
    const tk_fixels_view *t;
    double *values;          /* n (the view's) */
    uint64_t *key[2];        /* n each: the positive samples' sort */
    int *order[2];           /* n each */
    int16_t *label;          /* n: the lobe a direction was added to, -1 before (16 bits hold the
                              * lobes, and the CUDA walk's bridge and batch marks, of up to
                              * TK_FIXELS_N_MAX directions: half the shared memory of ints) */
    int (*retro)[2];         /* n: (direction, lobe) joined after the sweep */
    int *list;               /* max_lobes: one lobe's peaks */
    int *kept;               /* max_lobes: per lobe id its output index, or -1 */
    tk_fixels_lobe *lobes;   /* max_lobes */
    tk_fixels_peak *peaks;   /* max_lobes */
    double *tensor, *aniso;  /* (TK_SH_MAX_LMAX + 1)(TK_SH_MAX_LMAX + 2) / 2 each */
    double (*rows)[6];       /* TK_TRACK_ROWS_MAX */
    int tensor_ready;        /* tensor, aniso, rows, scale and iso are this voxel's */
    double scale, iso;
} tk_fixels_work;

#define TK_FIXELS_K_MAX ((TK_SH_MAX_LMAX + 1) * (TK_SH_MAX_LMAX + 2) / 2)

/* Bytes of one scratch block for a set of num_dirs directions and max_lobes lobes (8-byte
 * aligned pieces). */
static inline size_t tk_fixels_work_bytes(int num_dirs, int max_lobes)
{
    const size_t n = (size_t)num_dirs, l = (size_t)max_lobes;
    return 8 * 3 * n + sizeof(tk_fixels_lobe) * l + sizeof(tk_fixels_peak) * l + 8 * 2 * TK_FIXELS_K_MAX +
           8 * 6 * TK_TRACK_ROWS_MAX + 4 * 3 * n + 8 * n + 4 * 2 * l;
}

/* Points w's arrays into block (tk_fixels_work_bytes(t->n, max_lobes) bytes, 8-byte aligned). */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline void tk_fixels_work_bind(tk_fixels_work *w, const tk_fixels_view *t, void *block, int max_lobes)
{
    const size_t n = (size_t)t->n, l = (size_t)max_lobes;
    char *p = (char *)block;
    w->t = t;
    w->values = (double *)p, p += 8 * n;
    w->key[0] = (uint64_t *)p, p += 8 * n;
    w->key[1] = (uint64_t *)p, p += 8 * n;
    w->lobes = (tk_fixels_lobe *)p, p += sizeof(tk_fixels_lobe) * l;
    w->peaks = (tk_fixels_peak *)p, p += sizeof(tk_fixels_peak) * l;
    w->tensor = (double *)p, p += 8 * TK_FIXELS_K_MAX;
    w->aniso = (double *)p, p += 8 * TK_FIXELS_K_MAX;
    w->rows = (double(*)[6])p, p += 8 * 6 * TK_TRACK_ROWS_MAX;
    w->order[0] = (int *)p, p += 4 * n;
    w->order[1] = (int *)p, p += 4 * n;
    /* 2n bytes used; 4n keep the next pieces aligned (and take the host's memset of int-sized
     * labels, tk_fixels_segment_view's, which sets every int16 label to -1) */
    w->label = (int16_t *)p, p += 4 * n;
    w->retro = (int(*)[2])p, p += 8 * n;
    w->list = (int *)p, p += 4 * l;
    w->kept = (int *)p;
}

/* The fixels of one series sh (double, k coefficients, finite) with the host tables: up to
 * slots of them written to the arrays (each may be NULL; offsets already at this voxel);
 * returns how many lobes survived (may exceed slots), or -1 where the lobes overflow the
 * scratch (never on the host).  have_values: w->values already holds the samples
 * (tk_fixels_sample_values4). */
int tk_fixels_segment(const tk_fixels_view *view, const double *sh, tk_fixels_work *w, float *afd, float *peak_amp,
                      float *mean_dir, float *peak_dir, uint8_t *lobe_of_dir, int have_values);
/* The samples of four series at once (values[i]: view->n doubles for sh[i]). */
void tk_fixels_sample_values4(const tk_fixels_view *view, const double *const *sh, double *const *values);

/* The cpu/omp backend (fixels_cpu.c). */
tk_status tk_fixels_cpu_execute(const tk_fixels_plan *plan, size_t num_voxels, const float *sh, const uint8_t *mask,
                                tk_fixels_output *out);

/* The cuda backend (fixels_cuda.cu, or fixels_nocuda.c's clear errors). */
typedef struct tk_fixels_cuda_state tk_fixels_cuda_state;
tk_status tk_fixels_cuda_create(const tk_fixels_plan *plan, int device, tk_fixels_cuda_state **state);
tk_status tk_fixels_cuda_execute(tk_fixels_cuda_state *state, size_t num_voxels, const float *sh, const uint8_t *mask,
                                 tk_fixels_output *out, double *kernel_ms);
void tk_fixels_cuda_destroy(tk_fixels_cuda_state *state);
/* The tests' hooks (tk_bench_hooks.h): every voxel by the one-thread kernel, the fused warp
 * kernel instead of the samples and pull kernels, the slim kernel or the pull kernel, the slim kernel's split form, and the voxels the last execute's warp kernel
 * passed on to the one-thread kernel. */
void tk_fixels_cuda_set_one_thread(tk_fixels_cuda_state *state, int on);
void tk_fixels_cuda_set_fused(tk_fixels_cuda_state *state, int on);
void tk_fixels_cuda_set_slim(tk_fixels_cuda_state *state, int on);
void tk_fixels_cuda_set_split(tk_fixels_cuda_state *state, int on);
size_t tk_fixels_cuda_redone(const tk_fixels_cuda_state *state);

/* The host copies of the direction set of num_dirs directions (fixels_fmls.c); NULL for
 * another count. */
const short (*tk_fixels_adjacency(int num_dirs))[6];

#ifdef __cplusplus
}
#endif
#endif
