/** TensorKernels: streaming streamline writers (MRtrix3 .tck, TrackVis .trk, TRX .trx, VTK XML
 * PolyData .vtp and legacy VTK .vtk), the format chosen by the file name's extension.
 *
 * A writer takes the tracking core's chunks one after another (tk_tracking_chunk, points in
 * world RAS mm) and never holds more than one chunk: counts that headers need are reserved
 * when the file is opened and filled in at close.  The file is written under a temporary name
 * beside its destination (tk_output_set.h) and put in place only by a successful close, so a
 * failed or aborted run leaves no half-written file, and a file already there stays as it was.
 *
 *   tk_streamlines_writer *w;
 *   if (tk_streamlines_writer_open("out.tck", &grid, NULL, &w) != TK_OK) ...  // tk_last_error()
 *   tk_tracking_plan_execute(plan, ..., tk_streamlines_sink, w, &stats, NULL);
 *   then tk_streamlines_writer_close(w) on success, tk_streamlines_writer_abort(w) on failure.
 *
 * Documentation/tracking.md ("Writing streamlines") gives each format's layout and frame. \file */
#ifndef TK_STREAMLINES_H
#define TK_STREAMLINES_H

#include <stddef.h>
#include <stdint.h>

#include "tk_status.h"
#include "tk_tracking.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    TK_STREAMLINES_TCK = 0, /**< MRtrix3 tracks: float32 world mm, NaN between streamlines, Inf at the end */
    TK_STREAMLINES_TRK = 1, /**< TrackVis: 1000-byte header, points in "voxmm" (nibabel's convention) */
    TK_STREAMLINES_TRX = 2, /**< TRX: a stored (uncompressed) zip, positions.3.float32 and offsets.uint64 */
    TK_STREAMLINES_VTP = 3, /**< VTK XML PolyData: polylines, appended raw binary, tangent colours */
    TK_STREAMLINES_VTK = 4  /**< legacy VTK 4.2 binary PolyData: polylines, tangent colours */
} tk_streamlines_format;

/** The frame of the points in .vtp and .vtk files (3D Slicer's tag SPACE says which). */
typedef enum {
    TK_STREAMLINES_VTK_LPS = 0, /**< x = -R, y = -A, z = S with SPACE=LPS: what Slicer 5 writes (default) */
    TK_STREAMLINES_VTK_RAS = 1  /**< world RAS mm with SPACE=RAS */
} tk_streamlines_vtk_space;

typedef struct tk_streamlines_options {
    tk_streamlines_vtk_space vtk_space;
} tk_streamlines_options;

/** The defaults: vtk_space LPS. */
void tk_streamlines_options_init(tk_streamlines_options *opts);

/** The format of path by its extension (case-insensitive): TK_ERR_ARGUMENT naming the file
 * and the extensions known where there is none of them. */
tk_status tk_streamlines_format_of(const char *path, tk_streamlines_format *format);

typedef struct tk_streamlines_writer tk_streamlines_writer;

/** Opens a writer for path: the format from its extension, the grid (dims and the voxel to
 * RAS mm affine; what .trk, .trx and the .tck header need), opts (NULL: the defaults).
 * Checks the path (its folder exists and takes a new file, it is no folder) and writes the
 * header into a temporary file beside it.  *writer is NULL on error, with a message naming
 * the file (tk_last_error()). */
tk_status tk_streamlines_writer_open(const char *path, const tk_tracking_grid *grid,
                                     const tk_streamlines_options *opts, tk_streamlines_writer **writer);

/** Appends a chunk's streamlines (any number, none included); every streamline needs at
 * least one point and finite coordinates.  On an error the writer only takes _abort (or
 * _close, which then aborts). */
tk_status tk_streamlines_writer_append(tk_streamlines_writer *writer, const tk_tracking_chunk *chunk);

/** Completes the file (counts into the header, trailers), syncs it and puts it in place;
 * frees the writer whatever happens.  On an error nothing is left at the path but what
 * was there before. */
tk_status tk_streamlines_writer_close(tk_streamlines_writer *writer);

/** Removes the temporary file and frees the writer (NULL: nothing). */
void tk_streamlines_writer_abort(tk_streamlines_writer *writer);

/** The writer's counts so far. */
uint64_t tk_streamlines_writer_count(const tk_streamlines_writer *writer);
uint64_t tk_streamlines_writer_points(const tk_streamlines_writer *writer);

/** The colour the .vtp and .vtk writers give each of one streamline's n points (xyz, 3 bytes a
 * point into rgb): 255 |t| / ||t|| of its tangent, grey 128 where there is none; for
 * pictures that must show the files' colours (tk-track --png). */
void tk_streamlines_tangent_colours(const float *xyz, size_t n, unsigned char *rgb);

/** A tk_tracking_sink: user is the tk_streamlines_writer. */
tk_status tk_streamlines_sink(const tk_tracking_chunk *chunk, void *user);

#ifdef __cplusplus
}
#endif
#endif
