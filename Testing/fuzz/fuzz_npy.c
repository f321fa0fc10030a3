/* Fuzz target: the .npy reader (tk_npy_parse from memory and tk_npy_read from a file).
 *
 * Asserts, for every input:
 *  - tk_npy_parse and tk_npy_read (the same bytes as a file) agree: both accept or both
 *    reject with the same status, and accepted arrays are identical;
 *  - an accepted header has no NUL byte in its dictionary (a C string would end there);
 *  - an accepted array has 0..TK_NPY_MAX_DIMS axes whose non-zero sizes times the item
 *    size fit in size_t (numpy's rule, even with a zero axis), count = the product of
 *    the shape, and count x itemsize equals the bytes after the header (its end computed here from
 *    the preamble), which hold exactly the returned data (byte-reversed per word for
 *    big-endian input);
 *  - a rejected input leaves an empty array and a message;
 *  - an accepted array written by tk_npy_write reads back identical. */
#include <string.h>

#include "fuzz_common.h"
#include "tk_npy.h"

static int same_array(const tk_npy_array *a, const tk_npy_array *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim || a->count != b->count) return 0;
    for (int d = 0; d < a->ndim; ++d)
        if (a->shape[d] != b->shape[d]) return 0;
    size_t bytes = a->count * tk_npy_dtype_size(a->dtype);
    return bytes == 0 || memcmp(a->data, b->data, bytes) == 0;
}

/* Per real component: complex values swap each half. */
static int reversed_words(const unsigned char *raw, const unsigned char *native, size_t bytes, size_t word)
{
    for (size_t w = 0; w < bytes; w += word)
        for (size_t i = 0; i < word; ++i)
            if (raw[w + i] != native[w + word - 1 - i]) return 0;
    return 1;
}

static void check_accepted(const uint8_t *data, size_t size, const tk_npy_array *a)
{
    TK_FUZZ_CHECK(a->ndim >= 0 && a->ndim <= TK_NPY_MAX_DIMS, "ndim %d", a->ndim);
    size_t item = tk_npy_dtype_size(a->dtype);
    TK_FUZZ_CHECK(item > 0, "dtype %d has no size", (int)a->dtype);
    size_t product = 1, span = item;
    for (int d = 0; d < a->ndim; ++d) {
        product *= a->shape[d];
        if (a->shape[d]) TK_FUZZ_CHECK(!__builtin_mul_overflow(span, a->shape[d], &span), "axes overflow size_t bytes");
    }
    TK_FUZZ_CHECK(product == a->count, "shape product %zu, count %zu", product, a->count);
    /* The header's end from the preamble alone. */
    TK_FUZZ_CHECK(size >= 10, "accepted %zu bytes", size);
    size_t start = data[6] == 1 ? 10 : 12;
    size_t len = data[6] == 1 ? (size_t)data[8] | (size_t)data[9] << 8
                              : (size_t)data[8] | (size_t)data[9] << 8 | (size_t)data[10] << 16 | (size_t)data[11] << 24;
    TK_FUZZ_CHECK(start + len <= size, "header end %zu past %zu bytes", start + len, size);
    const unsigned char *close = memchr(data + start, '}', len);
    TK_FUZZ_CHECK(close && !memchr(data + start, '\0', (size_t)(close - (data + start))),
                  "accepted a header dictionary holding a NUL byte");
    size_t payload = size - start - len;
    TK_FUZZ_CHECK(a->count * item == payload, "shape x itemsize = %zu x %zu, %zu bytes of data", a->count, item, payload);
    TK_FUZZ_CHECK(a->data != NULL, "no data buffer");
    const unsigned char *raw = data + start + len;
    if (payload && memcmp(raw, a->data, payload) != 0) {
        size_t word = a->dtype == TK_NPY_COMPLEX64 || a->dtype == TK_NPY_COMPLEX128 ? item / 2 : item;
        TK_FUZZ_CHECK(memchr(data + start, '>', len) != NULL, "data differ from the file's and the header is not big-endian");
        TK_FUZZ_CHECK(reversed_words(raw, a->data, payload, word), "big-endian data not swapped per %zu-byte word", word);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tk_npy_array parsed;
    tk_status s = tk_npy_parse(data, size, "input.npy", &parsed);
    if (s == TK_OK) {
        check_accepted(data, size, &parsed);
    } else {
        TK_FUZZ_CHECK(parsed.data == NULL && parsed.ndim == 0 && parsed.count == 0, "rejected, yet an array came back");
        TK_FUZZ_CHECK(tk_last_error()[0] != '\0', "rejected without a message (status %d)", (int)s);
    }

    char *path = tk_fuzz_scratch_path("input.npy");
    tk_fuzz_write_file(path, data, size);
    tk_npy_array read;
    tk_status r = tk_npy_read(path, &read);
    TK_FUZZ_CHECK(r == s, "tk_npy_parse says %d, tk_npy_read %d (%s)", (int)s, (int)r, tk_last_error());
    if (r == TK_OK) {
        TK_FUZZ_CHECK(same_array(&parsed, &read), "tk_npy_parse and tk_npy_read return different arrays");
        char *copy = tk_fuzz_scratch_path("roundtrip.npy");
        tk_status w = tk_npy_write(copy, read.dtype, read.ndim, read.shape, read.data);
        TK_FUZZ_CHECK(w == TK_OK, "cannot write back an accepted array: %s", tk_last_error());
        tk_npy_array back;
        tk_status b = tk_npy_read(copy, &back);
        TK_FUZZ_CHECK(b == TK_OK, "cannot read back what tk_npy_write wrote: %s", tk_last_error());
        TK_FUZZ_CHECK(same_array(&read, &back), "the written copy reads back different");
        tk_npy_free(&back);
        free(copy);
    }
    tk_npy_free(&read);
    tk_npy_free(&parsed);
    free(path);
    return 0;
}
