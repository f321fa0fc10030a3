/* Recognising an image file by its bytes and handing it to its format's checks: see
 * image_probe.h. */
#define _FILE_OFFSET_BITS 64
#define _POSIX_C_SOURCE 200809L
#include "image_probe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gzip_check.h"
#include "mif_io.h"
#include "tk_status.h"

const char *tk_image_formats(void)
{
    return "NIfTI-1 or NIfTI-2 (.nii, .nii.gz, .hdr/.img), NRRD (.nrrd, .nhdr), MetaImage (.mha, .mhd) or "
           "MRtrix3 (.mif, .mif.gz, .mih)";
}

uint64_t tk_image_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? 0 : r;
}

int64_t tk_image_file_size(const char *path, const char *file)
{
    struct stat st;
    const int same = !strcmp(path, file);
    if (stat(file, &st) != 0)
        return tk_set_error(TK_ERR_IO, "%s: cannot open%s%s: %s; %s", path, same ? "" : " its data file ",
                            same ? "" : file, strerror(errno),
                            same ? "check the name and that it is readable"
                                 : "put it beside the header under that name, readable, or fix the header"), -1;
    if (!S_ISREG(st.st_mode))
        return tk_set_error(TK_ERR_IO, "%s: %s%s is not a regular file; give %s", path, same ? "it" : "its data file ",
                            same ? "" : file, same ? "an image file" : "the header a data file"), -1;
    return (int64_t)st.st_size;
}

void tk_image_sibling(const char *path, const char *name, char *out, unsigned long out_size)
{
    const char *slash = strrchr(path, '/');
    if (name[0] == '/' || !slash)
        snprintf(out, out_size, "%s", name);
    else
        snprintf(out, out_size, "%.*s/%s", (int)(slash - path), path, name);
}

const char *tk_image_subject(const char *path, const char *file, char *buf, size_t n)
{
    if (!strcmp(path, file)) return path;
    snprintf(buf, n, "%s: its data file %s", path, file);
    return buf;
}

/* MetaIO's record names that may open a header: a text file starting with one of these
 * followed by '=' (or a ':', which the MetaImage check then refuses by name) is taken as
 * a MetaImage header. */
static int metaimage_start(const unsigned char *b, size_t n)
{
    static const char *const keys[] = {"ObjectType", "ObjectSubType", "NDims", "Comment", "TransformType", "Name",
                                       "ID", "ParentID", "DimSize", "FormTypeName", NULL};
    size_t i = 0;
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) ++i;
    for (int k = 0; keys[k]; ++k) {
        const size_t len = strlen(keys[k]);
        if (n - i <= len || memcmp(b + i, keys[k], len) != 0) continue;
        size_t j = i + len;
        while (j < n && (b[j] == ' ' || b[j] == '\t')) ++j;
        if (j < n && (b[j] == '=' || b[j] == ':')) return 1;
    }
    return 0;
}

static int nifti_magic(const unsigned char *b, size_t n)
{
    const int one = n >= 348 && b[344] == 'n' && (b[345] == '+' || b[345] == 'i') && b[346] == '1' && b[347] == 0;
    const int two = n >= 540 && b[4] == 'n' && (b[5] == '+' || b[5] == 'i') && b[6] == '2' && b[7] == 0;
    return one || two;
}

static tk_image_format sniff_bytes(const char *path, const unsigned char *b, size_t n, int gzip)
{
    if (n >= 12 && !memcmp(b, "mrtrix image", 12)) return TK_IMAGE_MIF;
    if (nifti_magic(b, n)) return TK_IMAGE_NIFTI;
    if (!gzip && n >= 8 && !memcmp(b, "NRRD000", 7) && b[7] >= '1' && b[7] <= '5') return TK_IMAGE_NRRD;
    if (!gzip && metaimage_start(b, n)) return TK_IMAGE_METAIMAGE;
    const int analyze =
        n >= 348 && ((b[0] == 0x5c && b[1] == 1 && !b[2] && !b[3]) || (!b[0] && !b[1] && b[2] == 1 && b[3] == 0x5c));
    if (analyze)
        tk_set_error(TK_ERR_FORMAT, "%s: an ANALYZE 7.5 header (size 348, no NIfTI magic \"n+1\" or \"ni1\"), "
                                    "whose orientation is undefined, is not accepted (accepted: %s); convert it "
                                    "to NIfTI with its orientation set (e.g. with nibabel or mrconvert)",
                     path, tk_image_formats());
    else
        tk_set_error(TK_ERR_FORMAT, "%s: not an image in a format the tools read (judged by its content, not its "
                                    "name)%s, which are %s; convert it to one of them", path,
                     gzip ? ": gzip holding something else" : "", tk_image_formats());
    return TK_IMAGE_UNKNOWN;
}

tk_image_format tk_image_sniff(const char *path)
{
    unsigned char b[1024];
    if (tk_image_file_size(path, path) < 0) return TK_IMAGE_UNKNOWN;
    FILE *f = fopen(path, "rb");
    if (!f)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path,
                            strerror(errno)), TK_IMAGE_UNKNOWN;
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (n == 0)
        return tk_set_error(TK_ERR_FORMAT, "%s: empty file; copy or export the image again", path), TK_IMAGE_UNKNOWN;
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
        n = (size_t)tk_gzip_head(path, b, sizeof b);
        if (n == 0) return TK_IMAGE_UNKNOWN;
        return sniff_bytes(path, b, n, 1);
    }
    return sniff_bytes(path, b, n, 0);
}

/* MRtrix3: the header by mif_io.c's parser (the one the reader uses), the data by its rule
 * (tk_mif_check_data): one validation of the format, wherever the file comes from. */
static int check_mif(const char *path, tk_image_info *info)
{
    tk_mif_header h;
    if (!tk_mif_read_header(path, &h) || !tk_mif_check_data(path, &h)) return 0;
    int axes = h.ndim;
    while (axes > 1 && h.dim[axes - 1] == 1) --axes;  /* trailing axes of size 1 do not count */
    if (axes > TK_IMAGE_MAX_AXES)
        return tk_set_error(TK_ERR_FORMAT, "%s: an MRtrix3 image of %d axes of more than one voxel, the tools read at "
                                           "most %d; extract the volumes needed (e.g. mrconvert IN OUT.mif -coord 4 0)",
                            path, axes, TK_IMAGE_MAX_AXES), 0;
    info->compressed = h.gzip;
    info->axes = axes;
    for (int k = 0; k < axes; ++k) info->size[k] = h.dim[k];
    info->components = 1;
    info->bytes = tk_mif_data_bytes(&h);
    snprintf(info->data_file, sizeof info->data_file, "%s", h.data_path);
    return 1;
}

int tk_image_probe(const char *path, tk_image_info *info)
{
    memset(info, 0, sizeof *info);
    info->files = 1;          /* (MetaImage slice files set more) */
    info->range_axis = -1;
    info->format = tk_image_sniff(path);
    if (info->format == TK_IMAGE_UNKNOWN) return 0;
    if (info->format == TK_IMAGE_MIF) return check_mif(path, info);
    if (info->format == TK_IMAGE_NRRD) return tk_image_check_nrrd(path, info);
    if (info->format == TK_IMAGE_METAIMAGE) return tk_image_check_meta(path, info);
    unsigned char head[540];
    FILE *f = fopen(path, "rb");
    if (!f)
        return tk_set_error(TK_ERR_IO, "%s: cannot open: %s; check the name and that it is readable", path,
                            strerror(errno)), 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    const int gzip = n >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    if (gzip && (n = (size_t)tk_gzip_head(path, head, sizeof head)) == 0) return 0;
    return tk_image_check_nifti(path, head, n, gzip, info);
}

void tk_image_to_native(unsigned char *data, uint64_t n, int value_bytes, int big_endian)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    if (value_bytes < 2 || big_endian == (first == 0)) return;
    for (uint64_t i = 0; i < n; ++i, data += value_bytes)
        for (int a = 0, b = value_bytes - 1; a < b; ++a, --b) {
            const unsigned char t = data[a];
            data[a] = data[b];
            data[b] = t;
        }
}

int tk_image_read_data(const char *path, const tk_image_info *info, void *out, uint64_t out_bytes)
{
    tk_image_info again;
    memset(&again, 0, sizeof again);
    if (!info->own_read)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: its data are read by the format's own reader; report this as a bug",
                            path), 0;
    if (info->format == TK_IMAGE_NRRD) return tk_image_nrrd_data(path, &again, out, out_bytes);
    if (info->format == TK_IMAGE_METAIMAGE) return tk_image_meta_data(path, &again, out, out_bytes);
    return tk_set_error(TK_ERR_ARGUMENT, "%s: no data reader for this format; report this as a bug", path), 0;
}

/* Strict numbers: the whole token, ASCII digits, no sign where none may be, no overflow
 * (strtoull alone accepts "-5", " 7" and "0x10"). */
int tk_image_parse_u64(const char *s, uint64_t *v)
{
    if (!*s) return 0;
    uint64_t r = 0;
    for (; *s; ++s) {
        if (*s < '0' || *s > '9' || __builtin_mul_overflow(r, 10, &r) ||
            __builtin_add_overflow(r, (uint64_t)(*s - '0'), &r))
            return 0;
    }
    *v = r;
    return 1;
}

int tk_image_parse_i64(const char *s, int64_t *v)
{
    uint64_t u;
    const int neg = *s == '-';
    if (!tk_image_parse_u64(s + neg, &u) || u > (uint64_t)INT64_MAX) return 0;
    *v = neg ? -(int64_t)u : (int64_t)u;
    return 1;
}

int tk_image_parse_double(const char *s, double *v)
{
    if (!*s) return 0;
    for (const char *c = s; *c; ++c)  /* digits, sign, point, exponent: no "inf", "nan", hex */
        if (!((*c >= '0' && *c <= '9') || *c == '-' || *c == '+' || *c == '.' || *c == 'e' || *c == 'E')) return 0;
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return *end == 0 && errno == 0;
}

int tk_image_split(char *s, const char *separators, char **tokens, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, separators, &save); t; t = strtok_r(NULL, separators, &save)) {
        if (n == max) return max + 1;
        tokens[n++] = t;
    }
    return n;
}

size_t tk_image_read_prefix(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    const size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}
