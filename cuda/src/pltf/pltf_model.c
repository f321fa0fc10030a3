/* PLTF models: the "OUT=F1,F2,..." parser, presets and index sizes. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tk_pltf.h"

int tk_pltf_index_id(char c)
{
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
    return -1;
}

char tk_pltf_index_letter(int id)
{
    if (id >= 0 && id < 26) return (char)('a' + id);
    if (id >= 26 && id < 52) return (char)('A' + id - 26);
    return '?';
}

static const char *preset(const char *text)
{
    if (!strcmp(text, "parafac") || !strcmp(text, "cp")) return "ijk=ia,ja,ka";
    if (!strcmp(text, "tucker3")) return "ijk=ip,jq,kr,pqr";
    return NULL;
}

static tk_status parse_error(const char *text, size_t pos, const char *what)
{
    char shown[16];
    unsigned char c = (unsigned char)text[pos];
    if (!c) snprintf(shown, sizeof shown, "end of text");
    else if (isprint(c)) snprintf(shown, sizeof shown, "'%c'", c);
    else snprintf(shown, sizeof shown, "byte 0x%02x", c);
    return tk_set_error(TK_ERR_ARGUMENT, "model \"%s\": %s at position %zu (%s)", text, what, pos + 1, shown);
}

tk_status tk_pltf_parse(const char *text, tk_pltf_model *m)
{
    if (!text || !m) return tk_set_error(TK_ERR_ARGUMENT, "tk_pltf_parse: NULL argument");
    memset(m, 0, sizeof *m);
    const char *p = preset(text);
    if (p) text = p;
    if (strlen(text) >= TK_PLTF_MAX_TEXT)
        return tk_set_error(TK_ERR_ARGUMENT, "model \"%.40s...\": longer than %d characters", text, TK_PLTF_MAX_TEXT - 1);
    /* part -1 is OUT, then the factors; a term is a run of letters. */
    int part = -1, *ndim = &m->out_ndim, *idx = m->out, seen_eq = 0;
    size_t term_start = 0;
    int in_term = 0;
    for (size_t pos = 0;; ++pos) {
        char c = text[pos];
        if (c == ' ' || c == '\t') continue;
        int id = tk_pltf_index_id(c);
        if (id >= 0) {
            if (!in_term) in_term = 1, term_start = pos;
            for (int d = 0; d < *ndim; ++d)
                if (idx[d] == id)
                    return parse_error(text, pos, part < 0 ? "index repeated in the output" : "index repeated within one factor");
            idx[(*ndim)++] = id;
            continue;
        }
        if (c == '=' || c == ',' || c == '\0') {
            if (!in_term) {
                if (c == '\0' && part < 0 && !seen_eq) return parse_error(text, pos, "expected '=' and the factors");
                return parse_error(text, pos, part < 0 ? "expected the output's indices" : "expected a factor's indices");
            }
            (void)term_start;
            in_term = 0;
            if (c == '=') {
                if (seen_eq) return parse_error(text, pos, "a second '='");
                seen_eq = 1;
            } else if (part < 0) {
                return parse_error(text, pos, c ? "expected '=' after the output's indices" : "expected '=' and the factors");
            }
            if (c == '\0') {
                ++part;
                break;
            }
            if (++part >= TK_PLTF_MAX_FACTORS)
                return parse_error(text, pos, "too many factors (at most 12)");
            ndim = &m->factor_ndim[part];
            idx = m->factor[part];
            continue;
        }
        return parse_error(text, pos, "not an index letter, '=' or ','");
    }
    m->num_factors = part;
    /* Every output index must come from some factor (nothing broadcasts). */
    for (int d = 0; d < m->out_ndim; ++d) {
        int found = 0;
        for (int f = 0; f < m->num_factors && !found; ++f)
            for (int e = 0; e < m->factor_ndim[f]; ++e) found |= m->factor[f][e] == m->out[d];
        if (!found) {
            const char *eq = strchr(text, '=');
            size_t pos = 0;
            for (size_t q = 0; text + q < eq; ++q)
                if (tk_pltf_index_id(text[q]) == m->out[d]) pos = q;
            return parse_error(text, pos, "output index appears in no factor");
        }
    }
    snprintf(m->text, sizeof m->text, "%s", text);
    return TK_OK;
}

static int model_has_index(const tk_pltf_model *m, int id)
{
    for (int d = 0; d < m->out_ndim; ++d)
        if (m->out[d] == id) return 1;
    for (int f = 0; f < m->num_factors; ++f)
        for (int e = 0; e < m->factor_ndim[f]; ++e)
            if (m->factor[f][e] == id) return 1;
    return 0;
}

tk_status tk_pltf_set_dim(tk_pltf_model *m, char letter, size_t size)
{
    int id = tk_pltf_index_id(letter);
    if (id < 0 || !model_has_index(m, id))
        return tk_set_error(TK_ERR_ARGUMENT, "model \"%s\" has no index '%c'", m->text, letter);
    if (size == 0 || size > ((size_t)1 << 31))
        return tk_set_error(TK_ERR_ARGUMENT, "size of index '%c' must be from 1 to 2^31, got %zu", letter, size);
    m->dims[id] = size;
    return TK_OK;
}

tk_status tk_pltf_set_dims(tk_pltf_model *m, const char *text)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',') ++p;
        if (!*p) break;
        char letter = *p;
        if (tk_pltf_index_id(letter) < 0 || p[1] != '=')
            return tk_set_error(TK_ERR_ARGUMENT, "sizes \"%s\": expected LETTER=SIZE at position %zu", text,
                                (size_t)(p - text) + 1);
        char *end = NULL;
        const char *num = p + 2;
        if (!isdigit((unsigned char)*num))
            return tk_set_error(TK_ERR_ARGUMENT, "sizes \"%s\": expected a positive integer at position %zu", text,
                                (size_t)(num - text) + 1);
        unsigned long long v = strtoull(num, &end, 10);
        if (*end && *end != ',' && *end != ' ')
            return tk_set_error(TK_ERR_ARGUMENT, "sizes \"%s\": unexpected '%c' at position %zu", text, *end,
                                (size_t)(end - text) + 1);
        tk_status s = tk_pltf_set_dim(m, letter, (size_t)v);
        if (s != TK_OK) return s;
        p = end;
    }
    return TK_OK;
}

tk_status tk_pltf_set_out_shape(tk_pltf_model *m, int ndim, const size_t *shape)
{
    if (ndim != m->out_ndim)
        return tk_set_error(TK_ERR_ARGUMENT, "model \"%s\" has %d observed axes, the data has %d", m->text, m->out_ndim,
                            ndim);
    for (int d = 0; d < ndim; ++d) {
        tk_status s = tk_pltf_set_dim(m, tk_pltf_index_letter(m->out[d]), shape[d]);
        if (s != TK_OK) return s;
    }
    return TK_OK;
}

tk_status tk_pltf_check_dims(const tk_pltf_model *m)
{
    for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id)
        if (model_has_index(m, id) && !m->dims[id])
            return tk_set_error(TK_ERR_ARGUMENT, "model \"%s\": no size given for index '%c'", m->text,
                                tk_pltf_index_letter(id));
    /* Every tensor of the model (observed, factor, intermediate of a contraction) spans a
     * subset of the indices, so a joint index space whose doubles fit in size_t keeps all
     * their element counts and byte sizes from wrapping. */
    size_t joint = 1;
    for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id)
        if (model_has_index(m, id)) {
            if (m->dims[id] > SIZE_MAX / sizeof(double) / joint)
                return tk_set_error(TK_ERR_ARGUMENT,
                                    "model \"%s\": the index sizes multiply to more than 2^64 bytes of tensor entries",
                                    m->text);
            joint *= m->dims[id];
        }
    return TK_OK;
}

size_t tk_pltf_out_count(const tk_pltf_model *m)
{
    size_t n = 1;
    for (int d = 0; d < m->out_ndim; ++d) n *= m->dims[m->out[d]];
    return n;
}

size_t tk_pltf_factor_count(const tk_pltf_model *m, int f)
{
    size_t n = 1;
    for (int d = 0; d < m->factor_ndim[f]; ++d) n *= m->dims[m->factor[f][d]];
    return n;
}

void tk_pltf_factor_name(const tk_pltf_model *m, int f, char *buf)
{
    int d = 0;
    for (; d < m->factor_ndim[f]; ++d) buf[d] = tk_pltf_index_letter(m->factor[f][d]);
    buf[d] = '\0';
}
