/* The seeds of a run: a list of world points, or N random points in each voxel of a mask
 * (MRtrix3's tckgen -seed_random_per_voxel, seeding/basic.cpp: a point uniform over the
 * voxel's cube in voxel coordinates, taken to world by the affine).  MRtrix3 walks the mask
 * with k fastest; here i is fastest, as the volumes are stored; with reversed_axes (a C-order
 * array's grid, the Python package's) k is fastest, so that both number a mask x fastest. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tracking_field.h"
#include "tracking_internal.h"

tk_status tk_tracking_seed_set_init(tk_tracking_seed_set *set, const tk_tracking_plan *plan,
                                    const tk_tracking_seeds *seeds)
{
    *set = (tk_tracking_seed_set){.seeds = seeds};
    if (!seeds) return tk_set_error(TK_ERR_ARGUMENT, "no seeds given");
    if ((seeds->mask != NULL) == (seeds->points != NULL))
        return tk_set_error(TK_ERR_ARGUMENT, "the seeds must be either a mask or a point list, not %s",
                            seeds->mask ? "both" : "neither");
    if (seeds->points) {
        if (seeds->num_points == 0) return tk_set_error(TK_ERR_ARGUMENT, "the seed point list is empty");
        for (size_t i = 0; i < 3 * seeds->num_points; ++i)
            if (!isfinite(seeds->points[i]))
                return tk_set_error(TK_ERR_DATA, "seed point %zu is not finite", i / 3);
        set->total = seeds->num_points;
        return TK_OK;
    }
    if (seeds->per_voxel == 0) return tk_set_error(TK_ERR_ARGUMENT, "the number of seeds per voxel must be at least 1");
    const size_t n = plan->grid.dims[0] * plan->grid.dims[1] * plan->grid.dims[2];
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) count += seeds->mask[i] != 0;
    if (count == 0) return tk_set_error(TK_ERR_ARGUMENT, "the seed mask is empty");
    if (count > UINT64_MAX / seeds->per_voxel)
        return tk_set_error(TK_ERR_ARGUMENT, "%zu seeds per voxel of %zu voxels overflow", seeds->per_voxel, count);
    set->voxels = malloc(count * sizeof *set->voxels);
    if (!set->voxels) return tk_set_error(TK_ERR_MEMORY, "out of memory for the list of %zu seed voxels", count);
    const size_t *d = plan->grid.dims;
    if (plan->opts.reversed_axes) {
        size_t c = 0;
        for (size_t i = 0; i < d[0]; ++i)
            for (size_t j = 0; j < d[1]; ++j)
                for (size_t k = 0; k < d[2]; ++k) {
                    const size_t v = i + d[0] * (j + d[1] * k);
                    if (seeds->mask[v]) set->voxels[c++] = v;
                }
    } else {
        for (size_t i = 0, c = 0; i < n; ++i)
            if (seeds->mask[i]) set->voxels[c++] = i;
    }
    set->num_voxels = count;
    set->total = (uint64_t)count * seeds->per_voxel;
    return TK_OK;
}

void tk_tracking_seed_set_free(tk_tracking_seed_set *set)
{
    free(set->voxels);
    set->voxels = NULL;
}

/* A voxel's linear index (x fastest) as its (i, j, k). */
static void voxel_ijk(const tk_tracking_plan *plan, size_t voxel, size_t *ijk)
{
    const size_t *d = plan->grid.dims;
    ijk[0] = voxel % d[0], ijk[1] = (voxel / d[0]) % d[1], ijk[2] = voxel / (d[0] * d[1]);
}

void tk_tracking_seed_position(const tk_tracking_seed_set *set, const tk_tracking_plan *plan, uint64_t index,
                               tk_philox *rng, double *p)
{
    const tk_tracking_seeds *s = set->seeds;
    if (s->points) {
        for (int a = 0; a < 3; ++a) p[a] = s->points[3 * index + a];
        return;
    }
    size_t ijk[3];
    voxel_ijk(plan, set->voxels[index / s->per_voxel], ijk);
    tk_tracking_voxel_seed(plan, ijk, rng, p);
}

/* x's low 21 bits spread to every third bit (the Morton code's one axis). */
static uint64_t spread3(uint64_t x)
{
    x &= 0x1fffffu;
    x = (x | x << 32) & 0x1f00000000ffffu;
    x = (x | x << 16) & 0x1f0000ff0000ffu;
    x = (x | x << 8) & 0x100f00f00f00f00fu;
    x = (x | x << 4) & 0x10c30c30c30c30c3u;
    x = (x | x << 2) & 0x1249249249249249u;
    return x;
}

/* The voxel of seed `index` (a point's nearest; voxel 0 for a point outside the grid: the key
 * only orders the work), as a Morton code. */
static uint64_t seed_key(const tk_tracking_seed_set *set, const tk_tracking_plan *plan, uint64_t index)
{
    const tk_tracking_seeds *s = set->seeds;
    size_t voxel = 0;
    if (s->points) {
        double v[3];
        tk_tracking_to_voxel(plan, s->points + 3 * index, v);
        if (!tk_tracking_nearest_voxel(plan, v, &voxel)) voxel = 0;
    } else {
        voxel = set->voxels[index / s->per_voxel];
    }
    size_t ijk[3];
    voxel_ijk(plan, voxel, ijk);
    return spread3(ijk[0]) | spread3(ijk[1]) << 1 | spread3(ijk[2]) << 2;
}

static int by_key(const void *a, const void *b)
{
    const tk_tracking_seed_key *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

void tk_tracking_seed_order(const tk_tracking_seed_set *set, const tk_tracking_plan *plan, uint64_t first, size_t count,
                            tk_tracking_seed_key *keys, size_t *order)
{
    for (size_t i = 0; i < count; ++i) keys[i].key = seed_key(set, plan, first + i), keys[i].at = i;
    qsort(keys, count, sizeof *keys, by_key);
    for (size_t i = 0; i < count; ++i) order[i] = keys[i].at;
}
