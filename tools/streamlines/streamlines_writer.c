/* The writer's front end: the format from the extension, the output set that keeps a failed
 * run from leaving a partial file, the checks of each chunk, and the calls into the format. */
#define _GNU_SOURCE /* O_TMPFILE (Linux), for open_scratch */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "streamlines_internal.h"

static const sl_format *const formats[] = {&sl_format_tck, &sl_format_trk, &sl_format_trx, &sl_format_vtp,
                                           &sl_format_vtk};

void tk_streamlines_options_init(tk_streamlines_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->vtk_space = TK_STREAMLINES_VTK_LPS;
}

static const sl_format *format_of(const char *path)
{
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return NULL;
    for (size_t i = 0; i < sizeof formats / sizeof *formats; ++i) {
        const char *a = dot + 1, *b = formats[i]->ext;
        while (*a && *b && tolower((unsigned char)*a) == *b) ++a, ++b;
        if (!*a && !*b) return formats[i];
    }
    return NULL;
}

tk_status tk_streamlines_format_of(const char *path, tk_streamlines_format *format)
{
    if (!path || !*path) return tk_set_error(TK_ERR_ARGUMENT, "no streamline file name given");
    const sl_format *f = format_of(path);
    if (!f)
        return tk_set_error(TK_ERR_ARGUMENT,
                            "%s: unknown streamline format; give a name ending in .tck, .trk, .trx, .vtp or .vtk", path);
    if (format) *format = f->id;
    return TK_OK;
}

tk_status sl_write_error(const tk_streamlines_writer *w, int err)
{
    if (err == ENOMEM) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory while writing; free memory and run again", w->path);
    return tk_set_error(TK_ERR_IO, "%s: cannot write: %s; %s", w->path, strerror(err), tk_write_advice(err));
}

unsigned char *sl_colour_buffer(tk_streamlines_writer *w, size_t n)
{
    if (n > w->rgb_cap) {
        size_t cap = n > 2 * w->rgb_cap ? n : 2 * w->rgb_cap;
        unsigned char *p = realloc(w->rgb, 3 * cap);
        if (!p) return NULL;
        w->rgb = p;
        w->rgb_cap = cap;
    }
    return w->rgb;
}

void sl_transform(const tk_streamlines_writer *w, const float *in, double *out)
{
    for (int r = 0; r < 3; ++r)
        out[r] = w->xform[4 * r] * in[0] + w->xform[4 * r + 1] * in[1] + w->xform[4 * r + 2] * in[2] + w->xform[4 * r + 3];
}

static tk_status check_grid(const char *path, const tk_tracking_grid *g)
{
    if (!g) return tk_set_error(TK_ERR_ARGUMENT, "%s: no grid given for the streamlines' header", path);
    for (int i = 0; i < 16; ++i)
        if (!isfinite(g->vox2world[i]))
            return tk_set_error(TK_ERR_ARGUMENT, "%s: the grid's voxel-to-world affine is not finite", path);
    const double *a = g->vox2world;
    double det = a[0] * (a[5] * a[10] - a[6] * a[9]) - a[1] * (a[4] * a[10] - a[6] * a[8]) +
                 a[2] * (a[4] * a[9] - a[5] * a[8]);
    if (det == 0 || a[12] != 0 || a[13] != 0 || a[14] != 0 || a[15] != 1)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: the grid's voxel-to-world affine is singular or its last row is not 0 0 0 1",
                            path);
    return TK_OK;
}

/* A scratch file for arrays appended at close (colours, cell offsets), in the output's
 * private temporary folder, so that it goes away with the process whatever happens (a
 * killed run's folder is removed by the next run's set): unnamed from the start where the
 * system can (Linux's O_TMPFILE), else made and unlinked at once.  (The named way leaves
 * the folder behind when SIGINT lands between the two: the set's handler, which knows only
 * its own files, cannot remove a folder still holding NAME.part0; the bad-input matrix's
 * SIGINT row caught it in about 1 run of 13.) */
static tk_status open_scratch(tk_streamlines_writer *w, int k)
{
    const char *temp = tk_outset_temp(w->set, w->idx, 0);
    size_t n = strlen(temp) + 32;
    char *name = malloc(n);
    if (!name) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory; free memory and run again", w->path);
    int fd = -1, err = 0;
#ifdef O_TMPFILE
    snprintf(name, n, "%s", temp);
    char *slash = strrchr(name, '/');
    if (slash) slash[slash == name] = '\0'; /* the folder ("/" kept for a file at the root) */
    else snprintf(name, n, ".");
    fd = open(name, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
    err = errno;
    if (fd < 0 && err != EOPNOTSUPP && err != EISDIR && err != EINVAL) {  /* a real failure, not "unsupported" */
        free(name);
        return tk_set_error(TK_ERR_IO, "%s: cannot make a scratch file beside it: %s; %s", w->path, strerror(err),
                            tk_write_advice(err));
    }
#endif
    if (fd < 0) {
        snprintf(name, n, "%s.part%d", temp, k);
        fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        err = errno;
        if (fd >= 0) unlink(name);
    }
    free(name);
    if (fd < 0) return tk_set_error(TK_ERR_IO, "%s: cannot make a scratch file beside it: %s; %s", w->path,
                                    strerror(err), tk_write_advice(err));
    w->num_scratch = k + 1;
    if (sl_file_init(&w->scratch[k], fd)) return sl_write_error(w, ENOMEM);
    return TK_OK;
}

static void free_writer(tk_streamlines_writer *w)
{
    for (int k = 0; k < w->num_scratch; ++k) sl_file_discard(&w->scratch[k]);
    sl_file_discard(&w->out);
    if (w->set) tk_outset_free(w->set); /* removes whatever was not committed */
    free(w->rgb);
    free(w->path);
    free(w);
}

tk_status tk_streamlines_writer_open(const char *path, const tk_tracking_grid *grid,
                                     const tk_streamlines_options *opts, tk_streamlines_writer **writer)
{
    if (!writer) return tk_set_error(TK_ERR_ARGUMENT, "no place for the writer given");
    *writer = NULL;
    tk_streamlines_format id;
    tk_status st = tk_streamlines_format_of(path, &id);
    if (st != TK_OK) return st;
    if ((st = check_grid(path, grid)) != TK_OK) return st;
    if (opts && opts->vtk_space != TK_STREAMLINES_VTK_LPS && opts->vtk_space != TK_STREAMLINES_VTK_RAS)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: unknown VTK space %d", path, (int)opts->vtk_space);

    tk_streamlines_writer *w = calloc(1, sizeof *w);
    if (!w) return tk_set_error(TK_ERR_MEMORY, "%s: out of memory; free memory and run again", path);
    w->out.fd = -1;
    w->format = format_of(path);
    w->grid = *grid;
    if (opts) w->opts = *opts;
    else tk_streamlines_options_init(&w->opts);
    if (!(w->path = strdup(path)) || !(w->set = tk_outset_new(NULL))) {
        free_writer(w);
        return tk_set_error(TK_ERR_MEMORY, "%s: out of memory; free memory and run again", path);
    }
    /* The set's messages name the path and say what to do; its codes are exit codes. */
    if ((w->idx = tk_outset_add(w->set, NULL, path, NULL)) < 0) {
        free_writer(w);
        return TK_ERR_IO;
    }
    int fd = tk_outset_open(w->set, w->idx, 0);
    if (fd < 0) {
        free_writer(w);
        return TK_ERR_IO;
    }
    if (sl_file_init(&w->out, fd)) st = sl_write_error(w, ENOMEM);
    for (int k = 0; st == TK_OK && k < w->format->scratch_files; ++k) st = open_scratch(w, k);
    if (st == TK_OK) st = w->format->begin(w);
    if (st == TK_OK && w->out.err) st = sl_write_error(w, w->out.err);
    if (st != TK_OK) {
        free_writer(w);
        return st;
    }
    *writer = w;
    return TK_OK;
}

static tk_status check_chunk(const tk_streamlines_writer *w, const tk_tracking_chunk *c)
{
    if (!c) return tk_set_error(TK_ERR_ARGUMENT, "%s: no chunk given", w->path);
    if (c->num_streamlines && !c->num_points)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: a chunk of %zu streamlines has no point counts", w->path, c->num_streamlines);
    size_t total = 0;
    for (size_t s = 0; s < c->num_streamlines; ++s) {
        if (c->num_points[s] == 0)
            return tk_set_error(TK_ERR_ARGUMENT, "%s: streamline %zu of the chunk has no points", w->path, s);
        if (c->num_points[s] > SIZE_MAX / 3 - total)
            return tk_set_error(TK_ERR_ARGUMENT, "%s: the chunk's point counts overflow", w->path);
        total += c->num_points[s];
    }
    if (total != c->total_points)
        return tk_set_error(TK_ERR_ARGUMENT, "%s: the chunk's point counts add up to %zu, not its total %zu", w->path, total,
                            c->total_points);
    if (total && !c->points) return tk_set_error(TK_ERR_ARGUMENT, "%s: a chunk of %zu points has no points", w->path, total);
    /* .tck marks the ends of streamlines with NaN and the file's end with Inf. */
    for (size_t i = 0; i < 3 * total; ++i)
        if (!isfinite(c->points[i]))
            return tk_set_error(TK_ERR_DATA, "%s: point %zu of the chunk is not finite", w->path, i / 3);
    return TK_OK;
}

tk_status tk_streamlines_writer_append(tk_streamlines_writer *w, const tk_tracking_chunk *chunk)
{
    if (!w) return tk_set_error(TK_ERR_ARGUMENT, "no streamline writer given");
    if (w->failed) return tk_set_error(TK_ERR_ARGUMENT, "%s: the writer failed before; abort it", w->path);
    tk_status st = check_chunk(w, chunk);
    const float *p = chunk ? chunk->points : NULL;
    for (size_t s = 0; st == TK_OK && s < chunk->num_streamlines; ++s) {
        size_t n = chunk->num_points[s];
        st = w->format->streamline(w, p, n);
        if (st == TK_OK && w->out.err) st = sl_write_error(w, w->out.err);
        for (int k = 0; st == TK_OK && k < w->num_scratch; ++k)
            if (w->scratch[k].err) st = sl_write_error(w, w->scratch[k].err);
        w->streamlines += 1;
        w->points += n;
        p += 3 * n;
    }
    if (st != TK_OK) w->failed = 1;
    return st;
}

tk_status tk_streamlines_writer_close(tk_streamlines_writer *w)
{
    if (!w) return tk_set_error(TK_ERR_ARGUMENT, "no streamline writer given");
    if (w->failed) {
        tk_streamlines_writer_abort(w);
        return tk_set_error(TK_ERR_ARGUMENT, "writer closed after a failure: the file was not written");
    }
    tk_status st = w->format->finish(w);
    if (st == TK_OK && sl_file_flush(&w->out)) st = sl_write_error(w, w->out.err);
    if (st == TK_OK) {
        uint64_t size = w->out.size;
        free(w->out.buf);
        w->out.buf = NULL;
        int fd = w->out.fd, e;
        w->out.fd = -1;
        if ((e = tk_fsync_close(fd)) != 0) st = sl_write_error(w, e);
        else {
            tk_outset_expect_size(w->set, w->idx, 0, size);
            if (tk_outset_commit(w->set) != 0) st = TK_ERR_IO; /* the set's message names the file */
        }
    }
    free_writer(w);
    return st;
}

void tk_streamlines_writer_abort(tk_streamlines_writer *w)
{
    if (w) free_writer(w);
}

uint64_t tk_streamlines_writer_count(const tk_streamlines_writer *w) { return w ? w->streamlines : 0; }
uint64_t tk_streamlines_writer_points(const tk_streamlines_writer *w) { return w ? w->points : 0; }

tk_status tk_streamlines_sink(const tk_tracking_chunk *chunk, void *user)
{
    return tk_streamlines_writer_append((tk_streamlines_writer *)user, chunk);
}
