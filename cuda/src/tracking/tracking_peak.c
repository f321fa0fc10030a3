/* The public one-series peak search (tk_tracking_plan_peak), for tests and callers that want
 * the step's peak alone; the search itself is tracking_peak.h's, shared with the CUDA tracker. */
#include "tracking_peak.h"

double tk_tracking_plan_peak(const tk_tracking_plan *plan, const double *sh, double *dir)
{
    if (!plan || !sh || !dir) return 0;
    tk_tracking_peak_work work;
    return tk_tracking_peak(plan, sh, dir, &work);
}
