/* Fuzz target: the binary cache beside a .tns file (tk_tns_read_cached reading
 * PATH.tkc).
 *
 * The text is a fixed valid tensor; the input is the cache file, except that its
 * stamp (bytes 8..31: the text's size and modification time, which the reader compares
 * first) is overwritten with the text's real stamp so that the fuzzer reaches the rest.
 * Byte 32 (the order field) also picks the order passed: 0 (from the file) when even.
 *
 * Asserts: the call always succeeds (a bad cache is ignored, and the text read); a
 * tensor from the cache passes tk_tucker_coo_check with the order asked for; one from
 * the text equals the text's entries. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "tk_tucker.h"

static const char text[] = "1 2 3 1.5\n2 1 1 -2\n3 3 2 0.25\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char *tns, *cache;
    static struct stat st;
    if (!tns) {
        tns = tk_fuzz_scratch_path("t.tns");
        cache = tk_fuzz_scratch_path("t.tns.tkc");
        tk_fuzz_write_file(tns, text, sizeof text - 1);
        if (stat(tns, &st) != 0) abort();
    }
    unsigned char *bytes = malloc(size + 1);
    if (!bytes) abort();
    memcpy(bytes, data, size);
    if (size >= 32) {
        uint64_t text_size = (uint64_t)st.st_size;
        int64_t sec = (int64_t)st.st_mtim.tv_sec, nsec = (int64_t)st.st_mtim.tv_nsec;
        memcpy(bytes + 8, &text_size, 8);
        memcpy(bytes + 16, &sec, 8);
        memcpy(bytes + 24, &nsec, 8);
    }
    tk_fuzz_write_file(cache, bytes, size);
    const int order = size > 32 && (data[32] & 1) ? 3 : 0;
    free(bytes);

    tk_tucker_coo t;
    int from_cache = -1;
    tk_status s = tk_tns_read_cached(tns, order, &t, &from_cache);
    TK_FUZZ_CHECK(s == TK_OK, "a valid text with a bad cache failed: %s", tk_last_error());
    TK_FUZZ_CHECK(from_cache == 0 || from_cache == 1, "from_cache = %d", from_cache);
    if (order) TK_FUZZ_CHECK(t.order == order, "order %d, asked for %d", t.order, order);
    if (from_cache) {
        TK_FUZZ_CHECK(tk_tucker_coo_check(&t, "cache") == TK_OK, "a cache with invalid entries was used: %s",
                      tk_last_error());
    } else {
        static const uint32_t idx[] = {0, 1, 2, 1, 0, 0, 2, 2, 1};
        static const float val[] = {1.5f, -2.0f, 0.25f};
        TK_FUZZ_CHECK(t.order == 3 && t.nnz == 3 && t.dims[0] == 3 && t.dims[1] == 3 && t.dims[2] == 3,
                      "the text read as order %d, %zu entries", t.order, t.nnz);
        TK_FUZZ_CHECK(!memcmp(t.idx, idx, sizeof idx) && !memcmp(t.val, val, sizeof val), "the text read wrong");
    }
    tk_tucker_coo_free(&t);
    return 0;
}
