/* A CPU thread's scratch for its streamlines (tracking_internal.h's tk_tracking_work); the
 * growth itself is tracking_streamline.h's, shared with the CUDA tracker. */
#include <stdlib.h>
#include <string.h>

#include "tracking_internal.h"

tk_status tk_tracking_work_init(tk_tracking_work *w, const tk_tracking_plan *plan, size_t num_include)
{
    memset(w, 0, sizeof *w);
    w->cap = 1024;
    w->pts = malloc(w->cap * 3 * sizeof *w->pts);
    w->visited = calloc(num_include ? num_include : 1, 1);
    w->values = malloc((size_t)plan->k * sizeof *w->values);
    if (!w->pts || !w->visited || !w->values) {
        tk_tracking_work_free(w);
        return tk_set_error(TK_ERR_MEMORY, "out of memory for a tracking thread's scratch");
    }
    return TK_OK;
}

void tk_tracking_work_free(tk_tracking_work *w)
{
    free(w->pts), free(w->visited), free(w->values);
    w->pts = NULL, w->visited = NULL, w->values = NULL;
}
