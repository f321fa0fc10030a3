/* The CUDA eigensolver's tuning table (the tuning layer), as data: per GPU architecture
 * (rows from a minimum compute capability on), per kind of solve (values only or with
 * vectors) and per range of orders, the layout and pipeline choices the automatic path
 * makes.  The rows reproduce the choices measured on an H100 and an H200
 * (Documentation/benchmarks.md, "Batched eigenvalues: tuning"); the options' cuda_* fields
 * override them one by one (0 = the table's).  Plain C: the table is data, read on the host. */
#ifndef TK_EIG_TUNING_H
#define TK_EIG_TUNING_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_eig_tuning {
    int lanes;         /* threads per matrix (tk_eig_options.cuda_lanes) */
    int reduce_lanes;  /* values only, lockstep kernels: the reduction kernel's lanes; 0: the QR's */
    int qr_persistent; /* lockstep kernels: the persistent QR kernel (a grid the device holds at once) */
    int slots;         /* buffers of the copy/compute pipeline */
    int chunk_cap_mb;  /* the automatic chunk's size cap, in MiB of host data */
    int gentle;        /* chunks grow by 30% instead of doubling: the kernels trail the copies */
} tk_eig_tuning;

typedef struct tk_eig_tuning_row {
    int min_cc;       /* from this compute capability (10 * major + minor) on */
    int want_vectors; /* 0: values only, 1: with vectors */
    int max_n;        /* orders up to this (and above the previous row's of the same kind) */
    tk_eig_tuning choice;
} tk_eig_tuning_row;

/* The choice for order n (1..TK_EIG_MAX_N) on a device of compute capability cc. */
tk_eig_tuning tk_eig_tuning_pick(int cc, int n, int want_vectors);

#ifdef __cplusplus
}
#endif
#endif
