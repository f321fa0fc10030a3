/* Fuzz target: tk-tucker model directories and checkpoints (tk_tucker_model_load: the
 * manifest.txt text and the A<n>.npy / B<n>.npy matrices it names).
 *
 * Input: files separated by "@@FILE@@\n": manifest.txt first, then A1.npy,
 * B1.npy, A2.npy, B2.npy, ... (at most 2 x 10), written into a fresh model directory.
 *
 * Asserts: a rejection leaves a zeroed model and a message; an accepted model has order
 * 3..10 and ranks 4..64, and for every mode n A<n>.npy and B<n>.npy, parsed here with
 * tk_npy_parse, are float32 of shapes (dims[n], J) and (J, R) holding exactly the
 * model's values, all finite; the manifest returned is manifest.txt's text, in which
 * order, rank_j and rank_r are whole integers equal to the model's and dims lists exactly
 * its sizes (read here digit by digit; trailing blanks allowed). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "tk_npy.h"
#include "tk_tucker.h"

#define SEPARATOR "@@FILE@@\n"
#define MAX_FILES (1 + 2 * TK_TUCKER_MAX_ORDER)

typedef struct {
    const uint8_t *data;
    size_t size;
} section;

static int split(const uint8_t *data, size_t size, section *out)
{
    const size_t sep = sizeof SEPARATOR - 1;
    int n = 0;
    size_t start = 0;
    for (size_t p = 0; n < MAX_FILES - 1 && p + sep <= size; ++p)
        if (!memcmp(data + p, SEPARATOR, sep)) {
            out[n++] = (section){data + start, p - start};
            start = p + sep;
            p = start - 1;
        }
    out[n++] = (section){data + start, size - start};
    return n;
}

static const char *file_name(int f, char *buf, size_t cap)
{
    if (f == 0) snprintf(buf, cap, "manifest.txt");
    else snprintf(buf, cap, "%c%d.npy", f % 2 ? 'A' : 'B', (f + 1) / 2);
    return buf;
}

/* The value of key in the manifest as whole unsigned integers separated by commas (each
 * may start with blanks and '+'; blanks, a CR included, may end the value); their count,
 * or -1 when it is not that. */
static int manifest_numbers(const char *manifest, const char *key, unsigned long long *out, int cap)
{
    char v[4096];
    if (!tk_tucker_manifest_get(manifest, key, v, sizeof v)) return -1;
    size_t end = strlen(v);
    while (end && (v[end - 1] == ' ' || v[end - 1] == '\t' || v[end - 1] == '\r')) v[--end] = '\0';
    int n = 0;
    for (const char *c = v;; ++c) {
        while (*c == ' ' || (*c >= '\t' && *c <= '\r')) ++c; /* as strtol reads them: blanks, then a '+' */
        if (*c == '+') ++c;
        if (*c < '0' || *c > '9' || n == cap) return -1;
        unsigned long long x = 0;
        for (; *c >= '0' && *c <= '9'; ++c) {
            if (x > (~0ull - 9) / 10) return -1;
            x = x * 10 + (unsigned)(*c - '0');
        }
        out[n++] = x;
        if (*c == '\0') return n;
        if (*c != ',') return -1;
    }
}

static void check_manifest(const char *manifest, const tk_tucker_model *m)
{
    unsigned long long x[TK_TUCKER_MAX_ORDER + 1];
    TK_FUZZ_CHECK(manifest_numbers(manifest, "order", x, 1) == 1 && x[0] == (unsigned long long)m->order,
                  "order %d is not the manifest's whole value", m->order);
    TK_FUZZ_CHECK(manifest_numbers(manifest, "rank_j", x, 1) == 1 && x[0] == (unsigned long long)m->rank_j,
                  "rank_j %d is not the manifest's whole value", m->rank_j);
    TK_FUZZ_CHECK(manifest_numbers(manifest, "rank_r", x, 1) == 1 && x[0] == (unsigned long long)m->rank_r,
                  "rank_r %d is not the manifest's whole value", m->rank_r);
    TK_FUZZ_CHECK(manifest_numbers(manifest, "dims", x, TK_TUCKER_MAX_ORDER + 1) == m->order,
                  "the manifest's dims do not list exactly %d sizes", m->order);
    for (int n = 0; n < m->order; ++n) TK_FUZZ_CHECK(x[n] == m->dims[n], "mode %d: size %u", n + 1, m->dims[n]);
}

static void check_matrix(const section *file, const char *name, size_t rows, size_t cols, const float *values)
{
    tk_npy_array a;
    TK_FUZZ_CHECK(tk_npy_parse(file->data, file->size, name, &a) == TK_OK, "%s: accepted, yet not a .npy: %s", name,
                  tk_last_error());
    TK_FUZZ_CHECK(a.dtype == TK_NPY_FLOAT32 && a.ndim == 2 && a.shape[0] == rows && a.shape[1] == cols,
                  "%s: accepted as (%zu, %zu), the file is %s of %d axes", name, rows, cols, tk_npy_dtype_name(a.dtype),
                  a.ndim);
    TK_FUZZ_CHECK(!memcmp(a.data, values, rows * cols * sizeof(float)), "%s: the model's values differ from the file's",
                  name);
    for (size_t k = 0; k < rows * cols; ++k) TK_FUZZ_CHECK(isfinite(values[k]), "%s: non-finite value accepted", name);
    tk_npy_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *dir;
    if (!dir) {
        dir = tk_fuzz_scratch_path("model");
        if (mkdir(dir, 0700) != 0) abort();
    }
    section files[MAX_FILES];
    const int nfiles = split(data, size, files);
    char name[32], path[4200];
    for (int f = 0; f < MAX_FILES; ++f) { /* no file of the previous input stays behind */
        snprintf(path, sizeof path, "%s/%s", dir, file_name(f, name, sizeof name));
        if (f < nfiles) tk_fuzz_write_file(path, files[f].data, files[f].size);
        else unlink(path);
    }

    tk_tucker_model m;
    char *manifest = NULL;
    tk_status s = tk_tucker_model_load(dir, &m, &manifest);
    if (s != TK_OK) {
        TK_FUZZ_CHECK(m.order == 0 && m.a[0] == NULL && manifest == NULL, "rejected, yet a model came back");
        TK_FUZZ_CHECK(tk_last_error()[0] != '\0', "rejected without a message (status %d)", (int)s);
        return 0;
    }
    TK_FUZZ_CHECK(m.order >= 3 && m.order <= TK_TUCKER_MAX_ORDER, "order %d", m.order);
    TK_FUZZ_CHECK(m.rank_j >= TK_TUCKER_MIN_RANK && m.rank_j <= TK_TUCKER_MAX_RANK && m.rank_r >= TK_TUCKER_MIN_RANK &&
                      m.rank_r <= TK_TUCKER_MAX_RANK,
                  "ranks %d, %d", m.rank_j, m.rank_r);
    TK_FUZZ_CHECK(nfiles >= 1 + 2 * m.order, "order %d from %d files", m.order, nfiles);
    for (int n = 0; n < m.order; ++n) {
        check_matrix(&files[2 * n + 1], file_name(2 * n + 1, name, sizeof name), m.dims[n], (size_t)m.rank_j, m.a[n]);
        check_matrix(&files[2 * n + 2], file_name(2 * n + 2, name, sizeof name), (size_t)m.rank_j, (size_t)m.rank_r,
                     m.b[n]);
    }
    size_t text = files[0].size < 65536 ? files[0].size : 65536;
    TK_FUZZ_CHECK(manifest && !memcmp(manifest, files[0].data, text) && manifest[text] == '\0',
                  "the manifest returned is not manifest.txt's text");
    check_manifest(manifest, &m);
    free(manifest);
    tk_tucker_model_free(&m);
    return 0;
}
