/* Fuzz target: FROSTT .tns text (tk_tns_read and tk_tns_read_queries).
 *
 * Input: byte 0 chooses the call, the rest is the file.  (byte0 & 3): 0 tk_tns_read with
 * the order taken from the file; 1 tk_tns_read with order 2 + (byte0 >> 2) % 9; 2
 * tk_tns_read_queries with that order; 3 tk_tns_read with that order and a dims hint of
 * 1..255 per mode taken from the byte0.
 *
 * Asserts, for every input:
 *  - a rejection zeroes the tensor and leaves a message;
 *  - an accepted tensor has the order asked for (2..10 when taken from the file), one
 *    entry per line that is neither blank nor a comment (counted here), no NUL byte in
 *    those lines (zero-filled blocks of a torn write must not read as numbers), dims equal to
 *    the largest index of each mode (or the hint when larger), every index inside them
 *    and finite values (tk_tucker_coo_check);
 *  - written back with tk_tns_write it reads back bit-identical (indices and values). */
#include <string.h>

#include "fuzz_common.h"
#include "tk_tucker.h"

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* Lines holding an entry: a non-blank character that does not start a comment.
 * *nul: whether a NUL byte sits in such a line before its comment. */
static size_t entry_lines(const uint8_t *text, size_t size, int *nul)
{
    size_t lines = 0;
    *nul = 0;
    for (size_t p = 0; p < size;) {
        size_t s = p;
        while (s < size && text[s] != '\n' && blank((char)text[s])) ++s;
        if (s < size && text[s] != '\n' && text[s] != '#') {
            ++lines;
            for (; s < size && text[s] != '\n' && text[s] != '#'; ++s) *nul |= text[s] == '\0';
        }
        while (p < size && text[p] != '\n') ++p;
        ++p;
    }
    return lines;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const int mode = data[0] & 3, given = 2 + (data[0] >> 2) % 9;
    uint32_t hint[TK_TUCKER_MAX_ORDER];
    for (int n = 0; n < TK_TUCKER_MAX_ORDER; ++n) hint[n] = 1u + (uint32_t)((data[0] * (n + 7)) & 0xfe);
    char *path = tk_fuzz_scratch_path("input.tns");
    tk_fuzz_write_file(path, data + 1, size - 1);

    tk_tucker_coo t;
    tk_status s;
    if (mode == 0) s = tk_tns_read(path, 0, NULL, &t);
    else if (mode == 1) s = tk_tns_read(path, given, NULL, &t);
    else if (mode == 2) s = tk_tns_read_queries(path, given, &t);
    else s = tk_tns_read(path, given, hint, &t);

    if (s != TK_OK) {
        TK_FUZZ_CHECK(t.idx == NULL && t.val == NULL && t.nnz == 0 && t.order == 0, "rejected, yet entries came back");
        TK_FUZZ_CHECK(tk_last_error()[0] != '\0', "rejected without a message (status %d)", (int)s);
        free(path);
        return 0;
    }
    if (mode == 0) TK_FUZZ_CHECK(t.order >= 2 && t.order <= TK_TUCKER_MAX_ORDER, "order %d", t.order);
    else TK_FUZZ_CHECK(t.order == given, "order %d, asked for %d", t.order, given);
    int nul = 0;
    size_t lines = entry_lines(data + 1, size - 1, &nul);
    TK_FUZZ_CHECK(t.nnz == lines, "%zu entries from %zu entry lines", t.nnz, lines);
    TK_FUZZ_CHECK(!nul, "accepted an entry line holding a NUL byte (a corrupt or binary file)");
    if (t.nnz == 0) { /* order given, only comments: an empty tensor */
        tk_tucker_coo_free(&t);
        free(path);
        return 0;
    }
    TK_FUZZ_CHECK(tk_tucker_coo_check(&t, "input.tns") == TK_OK, "accepted an invalid tensor: %s", tk_last_error());
    for (int n = 0; n < t.order; ++n) {
        uint32_t largest = 0;
        for (size_t e = 0; e < t.nnz; ++e)
            if (t.idx[e * (size_t)t.order + (size_t)n] + 1 > largest) largest = t.idx[e * (size_t)t.order + (size_t)n] + 1;
        uint32_t want = mode == 3 && hint[n] > largest ? hint[n] : largest;
        TK_FUZZ_CHECK(t.dims[n] == want, "mode %d: size %u, expected %u", n + 1, t.dims[n], want);
    }

    char *copy = tk_fuzz_scratch_path("roundtrip.tns");
    TK_FUZZ_CHECK(tk_tns_write(copy, &t) == TK_OK, "cannot write back: %s", tk_last_error());
    tk_tucker_coo back;
    TK_FUZZ_CHECK(tk_tns_read(copy, t.order, NULL, &back) == TK_OK, "cannot read back: %s", tk_last_error());
    TK_FUZZ_CHECK(back.nnz == t.nnz, "%zu entries read back, %zu written", back.nnz, t.nnz);
    TK_FUZZ_CHECK(!memcmp(back.idx, t.idx, t.nnz * (size_t)t.order * sizeof *t.idx), "indices differ after a round trip");
    TK_FUZZ_CHECK(!memcmp(back.val, t.val, t.nnz * sizeof *t.val), "values differ after a round trip");
    tk_tucker_coo_free(&back);
    tk_tucker_coo_free(&t);
    free(copy);
    free(path);
    return 0;
}
