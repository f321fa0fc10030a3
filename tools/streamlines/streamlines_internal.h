/* What the writer's front end (streamlines_writer.c) and the format files share: the buffered
 * file, the writer, and one table of functions per format. */
#ifndef TK_STREAMLINES_INTERNAL_H
#define TK_STREAMLINES_INTERNAL_H

#include <stdint.h>

#include "tk_output_set.h"
#include "tk_streamlines.h"

/* A file written through a buffer, with what was written so far, so that a format can patch
 * its header in place (sl_file_pwrite) once the counts are known. */
typedef struct sl_file {
    int fd;
    unsigned char *buf;
    size_t len;      /* bytes waiting in buf */
    uint64_t size;   /* bytes written, buffered ones included */
    int err;         /* the first errno of a failed write (then every later call fails) */
} sl_file;

int sl_file_init(sl_file *f, int fd);
int sl_file_put(sl_file *f, const void *data, size_t bytes);
int sl_file_flush(sl_file *f);
int sl_file_pwrite(sl_file *f, uint64_t offset, const void *data, size_t bytes);
/* Appends src's bytes (src flushed first) to dst; crc (may be NULL) is updated with them. */
int sl_file_copy(sl_file *dst, sl_file *src, uint32_t *crc);
/* Frees the buffer and closes the fd without a sync (the scratch files, error paths). */
void sl_file_discard(sl_file *f);

/* Little-endian and big-endian stores, whatever the host's order. */
void sl_le16(unsigned char *p, uint16_t v);
void sl_le32(unsigned char *p, uint32_t v);
void sl_le64(unsigned char *p, uint64_t v);
void sl_lef32(unsigned char *p, float v);
void sl_be32(unsigned char *p, uint32_t v);
void sl_bef32(unsigned char *p, float v);

uint32_t sl_crc32(uint32_t crc, const unsigned char *data, size_t bytes);

/* The DEC colour of each point of one streamline (3 bytes a point): 255 |t| / ||t|| of the
 * tangent (central differences inside, one-sided at the ends); a one-point streamline, with
 * no tangent, is grey. */
void sl_tangent_colours(const float *xyz, size_t n, unsigned char *rgb);

typedef struct sl_format sl_format;

#define SL_MAX_SCRATCH 2

struct tk_streamlines_writer {
    const sl_format *format;
    tk_outset *set;
    int idx;
    char *path;
    sl_file out;
    sl_file scratch[SL_MAX_SCRATCH]; /* unlinked files beside the output for arrays appended at close */
    int num_scratch;
    tk_tracking_grid grid;
    tk_streamlines_options opts;
    uint64_t streamlines, points;
    int failed;
    /* per format */
    uint64_t mark[8];      /* offsets in the file of what close patches */
    double xform[12];      /* world to the format's frame: 3 x 4, row-major */
    unsigned char *rgb;    /* colours of one streamline (vtp, vtk) */
    size_t rgb_cap;
    uint32_t crc;          /* trx: positions' CRC-32 */
};

struct sl_format {
    const char *ext;
    tk_streamlines_format id;
    int scratch_files;
    tk_status (*begin)(tk_streamlines_writer *w);
    /* one streamline: n points (xyz, n >= 1), its number in the file w->streamlines and
     * its first point's w->points */
    tk_status (*streamline)(tk_streamlines_writer *w, const float *xyz, size_t n);
    tk_status (*finish)(tk_streamlines_writer *w);
};

extern const sl_format sl_format_tck, sl_format_trk, sl_format_trx, sl_format_vtp, sl_format_vtk;

/* A failed write of the output as a tk_status, naming the file and what to do. */
tk_status sl_write_error(const tk_streamlines_writer *w, int err);
/* The writer's buffer for one streamline's colours, grown as needed (NULL: out of memory). */
unsigned char *sl_colour_buffer(tk_streamlines_writer *w, size_t n);
/* Applies w->xform to a point. */
void sl_transform(const tk_streamlines_writer *w, const float *in, double *out);

#endif
