/* The end of every core's plan create.  A plan is built in steps that may fail (its tables,
 * its device state); on a failure the half-built plan is destroyed and the status returned,
 * and only a complete plan reaches the caller's pointer.  One expression, so that a create
 * ends with
 *     return TK_PLAN_HAND_OUT(status, p, tk_xxx_plan_destroy, plan);
 * instead of each core writing the same if-destroy-return-else-assign block again.  A macro,
 * as each core's destroy takes its own plan type. */
#ifndef TK_PLAN_HAND_OUT_H
#define TK_PLAN_HAND_OUT_H

#include "tk_status.h"

#define TK_PLAN_HAND_OUT(status, plan, destroy, out) \
    ((status) != TK_OK ? ((destroy)(plan), (status)) : (*(out) = (plan), TK_OK))

#endif
