/* Fuzz target: PLTF model expressions ("OUT=F1,F2,..." and presets, tk_pltf_parse) and
 * index sizes ("a=20,b=5", tk_pltf_set_dims, tk_pltf_check_dims).
 *
 * Input: the expression up to the first newline, the sizes on the next line.
 *
 * Asserts: a rejection leaves a message; an accepted model has 1..12 factors of 1..52
 * indices each, an output of 1..52 indices, no index twice within the output or one
 * factor, every output index in some factor; its stored text is the input (presets
 * expanded); the canonical form written from the parsed model equals that text without
 * blanks and parses to the same model (a round trip).  Sizes that are accepted are
 * 1..2^31 and set exactly the letters named; when tk_pltf_check_dims accepts, every
 * index has a size, and the output, each factor and the joint index space have element
 * counts whose byte sizes (as doubles) fit in size_t, and tk_pltf_out_count and
 * tk_pltf_factor_count equal the products computed here; the contraction plan
 * (tk_pltf_plan_describe, for up to 8 factors) has a cost >= 0. */
#include <string.h>

#include "fuzz_common.h"
#include "tk_pltf.h"

static void canonical(const tk_pltf_model *m, char *buf)
{
    size_t n = 0;
    for (int d = 0; d < m->out_ndim; ++d) buf[n++] = tk_pltf_index_letter(m->out[d]);
    for (int f = 0; f < m->num_factors; ++f) {
        buf[n++] = f ? ',' : '=';
        for (int d = 0; d < m->factor_ndim[f]; ++d) buf[n++] = tk_pltf_index_letter(m->factor[f][d]);
    }
    buf[n] = '\0';
}

static void check_term(const int *idx, int ndim, const char *what)
{
    TK_FUZZ_CHECK(ndim >= 1 && ndim <= TK_PLTF_MAX_INDICES, "%s has %d indices", what, ndim);
    for (int d = 0; d < ndim; ++d) {
        TK_FUZZ_CHECK(idx[d] >= 0 && idx[d] < TK_PLTF_MAX_INDICES, "%s: index id %d", what, idx[d]);
        for (int e = 0; e < d; ++e) TK_FUZZ_CHECK(idx[d] != idx[e], "%s repeats an index", what);
    }
}

/* Whether the model uses index id, read from its canonical form (the text, an oracle
 * apart from the parser's own index lists). */
static int named_in(const char *form, int id) { return strchr(form, tk_pltf_index_letter(id)) != NULL; }

/* The product of the sizes of ids[0..n) in bytes of doubles; 0 when it overflows. */
static size_t bytes_of(const tk_pltf_model *m, const int *ids, int n, size_t *count)
{
    size_t c = 1, b;
    for (int d = 0; d < n; ++d)
        if (__builtin_mul_overflow(c, m->dims[ids[d]], &c)) return 0;
    *count = c;
    return __builtin_mul_overflow(c, sizeof(double), &b) ? 0 : b;
}

static void check_sizes(const tk_pltf_model *m, const char *form)
{
    int all[TK_PLTF_MAX_INDICES], nall = 0;
    for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id)
        if (named_in(form, id)) {
            TK_FUZZ_CHECK(m->dims[id] >= 1 && m->dims[id] <= (size_t)1 << 31, "'%c' has size %zu",
                          tk_pltf_index_letter(id), m->dims[id]);
            all[nall++] = id;
        }
    size_t count = 0;
    TK_FUZZ_CHECK(bytes_of(m, all, nall, &count) > 0, "sizes accepted whose joint index space overflows size_t");
    TK_FUZZ_CHECK(bytes_of(m, m->out, m->out_ndim, &count) > 0 && count == tk_pltf_out_count(m),
                  "output count %zu, tk_pltf_out_count %zu", count, tk_pltf_out_count(m));
    for (int f = 0; f < m->num_factors; ++f)
        TK_FUZZ_CHECK(bytes_of(m, m->factor[f], m->factor_ndim[f], &count) > 0 && count == tk_pltf_factor_count(m, f),
                      "factor %d count %zu, tk_pltf_factor_count %zu", f, count, tk_pltf_factor_count(m, f));
    if (m->num_factors <= 8) {
        char plan[512];
        double cost = tk_pltf_plan_describe(m, plan, sizeof plan);
        TK_FUZZ_CHECK(cost >= 0, "plan cost %g (%s)", cost, plan);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) abort();
    memcpy(text, data, size);
    text[size] = '\0';
    char *sizes = strchr(text, '\n');
    if (sizes) *sizes++ = '\0';

    tk_pltf_model m;
    if (tk_pltf_parse(text, &m) != TK_OK) {
        TK_FUZZ_CHECK(tk_last_error()[0] != '\0', "rejected without a message");
        free(text);
        return 0;
    }
    TK_FUZZ_CHECK(m.num_factors >= 1 && m.num_factors <= TK_PLTF_MAX_FACTORS, "%d factors", m.num_factors);
    check_term(m.out, m.out_ndim, "the output");
    for (int f = 0; f < m.num_factors; ++f) check_term(m.factor[f], m.factor_ndim[f], "a factor");
    for (int d = 0; d < m.out_ndim; ++d) {
        int found = 0;
        for (int f = 0; f < m.num_factors; ++f)
            for (int e = 0; e < m.factor_ndim[f]; ++e) found |= m.factor[f][e] == m.out[d];
        TK_FUZZ_CHECK(found, "output index '%c' in no factor", tk_pltf_index_letter(m.out[d]));
    }
    /* The stored text is the input or the preset's expansion, and the canonical form is
     * that text without its blanks. */
    char blankless[TK_PLTF_MAX_TEXT], form[TK_PLTF_MAX_INDICES * (TK_PLTF_MAX_FACTORS + 1) + TK_PLTF_MAX_FACTORS + 2];
    size_t n = 0;
    for (const char *c = m.text; *c; ++c)
        if (*c != ' ' && *c != '\t') blankless[n++] = *c;
    blankless[n] = '\0';
    TK_FUZZ_CHECK(!strcmp(m.text, text) || strchr(text, '=') == NULL, "stored text \"%s\" is not the input", m.text);
    canonical(&m, form);
    TK_FUZZ_CHECK(!strcmp(form, blankless), "canonical form \"%s\" of \"%s\"", form, m.text);
    tk_pltf_model again;
    TK_FUZZ_CHECK(tk_pltf_parse(form, &again) == TK_OK, "canonical form \"%s\" rejected: %s", form, tk_last_error());
    TK_FUZZ_CHECK(again.out_ndim == m.out_ndim && !memcmp(again.out, m.out, sizeof m.out) &&
                      again.num_factors == m.num_factors && !memcmp(again.factor_ndim, m.factor_ndim, sizeof m.factor_ndim) &&
                      !memcmp(again.factor, m.factor, sizeof m.factor),
                  "\"%s\" parses differently from \"%s\"", form, m.text);

    if (sizes) {
        tk_pltf_model before = m;
        if (tk_pltf_set_dims(&m, sizes) == TK_OK) {
            for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id)
                if (m.dims[id] != before.dims[id]) {
                    TK_FUZZ_CHECK(named_in(form, id), "size set for '%c', which the model lacks", tk_pltf_index_letter(id));
                    TK_FUZZ_CHECK(strchr(sizes, tk_pltf_index_letter(id)) != NULL, "size of '%c' set, not named",
                                  tk_pltf_index_letter(id));
                }
            if (tk_pltf_check_dims(&m) == TK_OK) check_sizes(&m, form);
            else TK_FUZZ_CHECK(tk_last_error()[0] != '\0', "check_dims rejected without a message");
        } else {
            TK_FUZZ_CHECK(tk_last_error()[0] != '\0', "sizes rejected without a message");
        }
    }
    free(text);
    return 0;
}
