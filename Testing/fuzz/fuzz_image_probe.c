/* Fuzz target: recognising and validating image files before any image library reads
 * them (tools/io/image_probe.c with image_nifti.c, image_nrrd.c, image_meta.c and
 * gzip_check.c).
 *
 * Input: the layout of the sh_image target (so its corpus serves here too): byte 0 picks
 * the file name (mod 8: .nii, .nii.gz, .nrrd, .nhdr, .mha, .mhd, .hdr, .dat: the
 * recogniser must not care), byte 1 is unused, the rest is the file; "@@FILE@@\n" splits
 * off a second file: data.raw (named by a detached header) or, for .hdr, input.img (a
 * NIfTI pair's data).
 *
 * Asserts: a refusal's message starts with the file probed (never with its data file) and
 * ends with what to do (tk_message_style.h); an
 * accepted file has 1 to TK_IMAGE_MAX_AXES axes of 1 or more voxels, 1 or more
 * components, and data bytes that are a whole multiple of its voxel count and that the
 * files can hold: raw data within the data file's size, compressed data within
 * deflate's reach of the compressed file's size (bzip2: within its densest expansion;
 * MRtrix3 Bit data: one bit a value); data the tools decode themselves (NRRD ascii, hex,
 * bzip2) read back through tk_image_read_data; and probing twice gives the same answer. */
#define _GNU_SOURCE  /* memmem */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/tk_message_style.h"
#include "fuzz_common.h"
#include "gzip_check.h"
#include "image_probe.h"
#include "tk_status.h"

static const char *const kNames[] = {"input.nii", "input.nii.gz", "input.nrrd", "input.nhdr",
                                     "input.mha", "input.mhd",    "input.hdr",  "input.dat"};

static char *g_path[8], *g_raw, *g_img;

static uint64_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    if (!g_raw) {
        for (int k = 0; k < 8; ++k) g_path[k] = tk_fuzz_scratch_path(kNames[k]);
        g_raw = tk_fuzz_scratch_path("data.raw");
        g_img = tk_fuzz_scratch_path("input.img");
    }
    const int which = data[0] % 8;
    const char *path = g_path[which];
    const uint8_t *body = data + 2;
    size_t body_size = size - 2;
    remove(g_raw);
    remove(g_img);
    static const char sep[] = "@@FILE@@\n";
    const uint8_t *at = memmem(body, body_size, sep, sizeof sep - 1);
    if (at) {
        const size_t head = (size_t)(at - body), skip = head + sizeof sep - 1;
        tk_fuzz_write_file(which == 6 ? g_img : g_raw, body + skip, body_size - skip);
        body_size = head;
    }
    tk_fuzz_write_file(path, body, body_size);

    tk_image_info info, again;
    const int ok = tk_image_probe(path, &info);
    char first[1024];
    snprintf(first, sizeof first, "%s", ok ? "" : tk_last_error());
    const int ok2 = tk_image_probe(path, &again);
    TK_FUZZ_CHECK(ok == ok2, "probing twice: %d then %d", ok, ok2);
    if (!ok) {
        /* the file the user named first, even when its data file is what is wrong */
        TK_FUZZ_CHECK(!strncmp(first, path, strlen(path)) && first[strlen(path)] == ':',
                      "the message does not start with the file: %s", first);
        TK_FUZZ_CHECK(tk_message_advises(first), "the message does not end with what to do: %s", first);
        TK_FUZZ_CHECK(!strcmp(first, tk_last_error()), "two messages: %s / %s", first, tk_last_error());
        return 0;
    }
    TK_FUZZ_CHECK(info.format == again.format && info.bytes == again.bytes, "probing twice differs");
    TK_FUZZ_CHECK(info.format != TK_IMAGE_UNKNOWN, "accepted an unknown format");
    TK_FUZZ_CHECK(info.axes >= 1 && info.axes <= TK_IMAGE_MAX_AXES, "%d axes", info.axes);
    TK_FUZZ_CHECK(info.components >= 1, "0 components");
    uint64_t values = info.components;
    for (int k = 0; k < info.axes; ++k) {
        TK_FUZZ_CHECK(info.size[k] >= 1, "axis %d of size 0", k);
        values = tk_image_mul(values, info.size[k]);
        TK_FUZZ_CHECK(values > 0, "the value count overflows");
    }
    if (info.format == TK_IMAGE_MIF && info.bytes < values)  /* MRtrix3's Bit: 8 values a byte */
        TK_FUZZ_CHECK(info.bytes == values / 8 + (values % 8 != 0), "%llu bytes for %llu bits",
                      (unsigned long long)info.bytes, (unsigned long long)values);
    else
        TK_FUZZ_CHECK(info.bytes >= values && info.bytes % values == 0 && info.bytes / values <= 8,
                      "%llu bytes for %llu values", (unsigned long long)info.bytes, (unsigned long long)values);
    if (info.own_read && info.bytes <= (64u << 20)) {
        /* the data the tools decode themselves: what was validated reads, exactly */
        unsigned char *out = malloc(info.bytes);
        TK_FUZZ_CHECK(out != NULL, "out of memory");
        TK_FUZZ_CHECK(tk_image_read_data(path, &info, out, info.bytes), "accepted, but its data do not read: %s",
                      tk_last_error());
        free(out);
    }
    if (info.files > 1) return 0;  /* slice files: each checked against its own size */
    const uint64_t stored = size_of(info.data_file);
    if (info.encoding == TK_IMAGE_ENCODING_BZIP2)
        TK_FUZZ_CHECK(info.bytes / 2000000 <= stored, "%llu bytes from %llu of bzip2", (unsigned long long)info.bytes,
                      (unsigned long long)stored);
    else if (info.encoding == TK_IMAGE_ENCODING_ASCII || info.encoding == TK_IMAGE_ENCODING_HEX)
        TK_FUZZ_CHECK(info.bytes / (uint64_t)info.value_bytes <= stored, "%llu values in %llu bytes of text",
                      (unsigned long long)(info.bytes / (uint64_t)info.value_bytes), (unsigned long long)stored);
    else if (info.compressed)
        TK_FUZZ_CHECK(info.bytes <= tk_inflate_bound(stored), "%llu bytes from %llu compressed",
                      (unsigned long long)info.bytes, (unsigned long long)stored);
    else
        TK_FUZZ_CHECK(info.bytes <= stored, "%llu bytes of data in a file of %llu", (unsigned long long)info.bytes,
                      (unsigned long long)stored);
    return 0;
}
