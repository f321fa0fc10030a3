/** TensorKernels: Probabilistic Latent Tensor Factorization (PLTF) and generalized
 * tensor multiplication (GTM), one public header.
 *
 * Models.  A model is an index expression "OUT=F1,F2,...": every index is one
 * letter (a-z, A-Z); OUT names the axes of the observed tensor X in order, each
 * Fn the axes of one factor Z_n.  PARAFAC is "ijk=ia,ja,ka", Tucker-3
 * "ijk=ip,jq,kr,pqr".  Indices of OUT are the observed ones; the others are
 * latent and their sizes are given separately (tk_pltf_set_dims).
 *
 * GTM.  X^ = sum over the latent indices of the product of the factors.  It is
 * evaluated as a sequence of pairwise contractions in the order of least
 * multiply-adds (dynamic programming over operand subsets, as opt_einsum's
 * "optimal"), each a batched GEMM (CBLAS on the CPU, cuBLAS on the GPU); the full
 * joint tensor over all indices is never formed.  The seed's algorithm, which
 * visits every entry of that joint tensor, stays available (naive_gtm) for
 * comparison.
 *
 * Factorization.  Multiplicative updates for the beta-divergence with a mask M
 * (nonzero = observed):  Z_n <- Z_n * (D_n(M X X^^(b-2)) / D_n(M X^^(b-1)))^g,
 * D_n(Q) the GTM of Q with the other factors onto Z_n's indices; b = 1 is KL
 * (the seed's), b = 2 Euclidean, b = 0 Itakura-Saito.  g = 1 for KL and
 * Euclidean and 1/2 for IS (Fevotte and Idier 2011), the exponents under which
 * the divergence never increases.  Unobserved entries of X are never read.
 * \file
 * \ingroup tk_group_pltf */
#ifndef TK_PLTF_H
#define TK_PLTF_H

#include "tk_export.h"

#include <stddef.h>
#include <stdint.h>

#include "tk_status.h"
#include "tk_types.h"

TK_API_BEGIN

#define TK_PLTF_MAX_INDICES 52 /* a-z then A-Z */
#define TK_PLTF_MAX_FACTORS 12
#define TK_PLTF_MAX_TEXT 256

typedef struct tk_pltf_model {
    int out_ndim;
    int out[TK_PLTF_MAX_INDICES];  /**< index ids: 0-25 'a'-'z', 26-51 'A'-'Z' */
    int num_factors;
    int factor_ndim[TK_PLTF_MAX_FACTORS];
    int factor[TK_PLTF_MAX_FACTORS][TK_PLTF_MAX_INDICES];
    size_t dims[TK_PLTF_MAX_INDICES]; /**< size of every index; 0 = not set yet */
    char text[TK_PLTF_MAX_TEXT];      /**< the expression, presets expanded */
} tk_pltf_model;

/** Parse "OUT=F1,F2,..." (spaces allowed) or a preset name: "parafac" is
 * "ijk=ia,ja,ka", "tucker3" "ijk=ip,jq,kr,pqr".  Errors (TK_ERR_ARGUMENT) name the
 * offending character and its 1-based position.  Every index of OUT must appear
 * in some factor; no index may repeat within OUT or within one factor. */
tk_status tk_pltf_parse(const char *text, tk_pltf_model *model);

/** Index id of a letter (-1 if not a letter) and the letter of an id. */
int tk_pltf_index_id(char letter);
char tk_pltf_index_letter(int id);

/** Sizes: "a=20,b=5" (each letter must occur in the model), or one at a time. */
tk_status tk_pltf_set_dims(tk_pltf_model *model, const char *assignments);
tk_status tk_pltf_set_dim(tk_pltf_model *model, char letter, size_t size);
/** Set OUT's sizes from the observed tensor's shape (ndim must equal out_ndim). */
tk_status tk_pltf_set_out_shape(tk_pltf_model *model, int ndim, const size_t *shape);
/** TK_OK when every index has a size; else names the first missing one. */
tk_status tk_pltf_check_dims(const tk_pltf_model *model);

size_t tk_pltf_out_count(const tk_pltf_model *model);
size_t tk_pltf_factor_count(const tk_pltf_model *model, int factor);
/** The factor's indices as a string ("ia", "pqr"); buf holds TK_PLTF_MAX_INDICES + 1. */
void tk_pltf_factor_name(const tk_pltf_model *model, int factor, char *buf);

typedef enum { TK_PLTF_IS = 0, TK_PLTF_KL = 1, TK_PLTF_EUCLIDEAN = 2 } tk_pltf_divergence; /**< value = beta */

int tk_pltf_has_cblas(void);

/** GTM: out (OUT's shape, C order) = sum over the indices not in OUT of the
 * product of the operands (operand n holds factor n's shape, C order).  Every
 * size must be set.  naive: the seed's full-joint-tensor loop. */
tk_status tk_pltf_gtm(const tk_pltf_model *model, tk_backend backend, int naive, const double *const *operands,
                      double *out);

/** The contraction order chosen for a model's X^: pairs written like
 * "(ia,ja)->aij; (aij,ka)->ijk" into buf; returns the multiply-adds it costs. */
double tk_pltf_plan_describe(const tk_pltf_model *model, char *buf, size_t size);

typedef struct tk_pltf_options {
    tk_pltf_divergence divergence; /**< default KL */
    tk_backend backend;       /**< default cpu */
    int iterations;                /**< each updates every factor once; default 100 */
    uint64_t seed;                 /**< random start; default 0 */
    int init_given;                /**< nonzero: the result's factors hold the start */
    int naive_gtm;                 /**< the seed's full-joint GTM (comparison only) */
    int no_fused;                  /**< CUDA: cuBLAS GTM steps even where a fused kernel exists */
    int track_divergence;          /**< compute the divergence every iteration (default 1) */
    int num_threads;               /**< omp: 0 = the OpenMP default */
    int cuda_device;
    /** Called after every iteration with the divergence (when tracked);
     * a nonzero return stops early. */
    int (*on_iteration)(void *user, int iteration, double divergence);
    void *user;
} tk_pltf_options;

void tk_pltf_options_init(tk_pltf_options *opts);

typedef struct tk_pltf_result {
    double *factors[TK_PLTF_MAX_FACTORS]; /**< caller's buffers, tk_pltf_factor_count each (required) */
    double *xhat;                         /**< optional: the reconstruction (OUT's shape) */
    double *divergence;                   /**< optional: iterations + 1 values, [0] at the start */
    int iterations_done;
    double final_divergence;              /**< after the last iteration (always computed) */
    double iterate_ms;                    /**< the iterations alone (CUDA: events) */
    double total_ms;                      /**< with set-up and transfers */
} tk_pltf_result;

/** Fit the model to x (OUT's shape, C order) with optional mask (same shape,
 * nonzero = observed; NULL = all observed).  Observed x must be finite and
 * non-negative (KL), positive (IS: its divergence is infinite at zero) or finite
 * (Euclidean). */
tk_status tk_pltf_factorize(const tk_pltf_model *model, const tk_pltf_options *opts, const double *x,
                            const uint8_t *mask, tk_pltf_result *result);

/* ---- Coupled factorization (generalized coupled tensor factorization) ---------
 * Several observed tensors X_v, each with its own model; factors with the same
 * index string in different views ("ia" in "ij=ia,ja" and "ik=ia,ka") are one
 * factor, updated from every view that holds it:
 *   Z <- Z * (sum_v D_v(M_v X_v X^_v^(b-2)) / sum_v D_v(M_v X^_v^(b-1)))^g,
 * which never increases the summed divergence.  A letter must have the same size
 * in every view; a factor may occur once per view. */
#define TK_PLTF_MAX_VIEWS 8
typedef struct tk_pltf_view {
    const tk_pltf_model *model; /**< sizes set */
    const double *x;            /**< the view's observed tensor */
    const uint8_t *mask;        /**< optional */
    double *xhat;               /**< optional output: the view's reconstruction */
} tk_pltf_view;

/** The distinct factors of the views in order of first appearance (view 0's, then
 * the new ones of view 1, ...): their count, and their names into names (NULL: count
 * only); < 0 with tk_last_error() when inconsistent. */
int tk_pltf_coupled_factors(int num_views, const tk_pltf_view *views, char (*names)[TK_PLTF_MAX_INDICES + 1]);

/** result->factors[g] for the distinct factors in that order; divergence and
 * final_divergence are sums over the views.  Options as for tk_pltf_factorize
 * (naive_gtm and no_fused do not apply). */
tk_status tk_pltf_factorize_coupled(int num_views, const tk_pltf_view *views, const tk_pltf_options *opts,
                                    tk_pltf_result *result);

/** The divergence of x^ from x over the observed entries. */
double tk_pltf_divergence_value(tk_pltf_divergence d, const double *x, const uint8_t *mask, const double *xhat,
                                size_t count);

const char *tk_pltf_divergence_name(tk_pltf_divergence d);

TK_API_END
#endif
