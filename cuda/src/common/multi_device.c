/* One batch over several GPUs: the ranges and the host threads that run them
 * (multi_device.h). */
#include "multi_device.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

int tk_device_count_checked(int cuda_device_count, const char *field)
{
    if (cuda_device_count < 0 || cuda_device_count > TK_MAX_CUDA_DEVICES) {
        tk_set_error(TK_ERR_ARGUMENT, "%s must be from 0 to %d (0 and 1: one device), got %d", field,
                     TK_MAX_CUDA_DEVICES, cuda_device_count);
        return 0;
    }
    return cuda_device_count > 1 ? cuda_device_count : 1;
}

size_t tk_device_range(size_t count, int parts, int index, size_t *first)
{
    const size_t p = (size_t)parts, i = (size_t)index, share = count / p, extra = count % p;
    /* ranges 0 .. extra-1 hold share + 1 items, the rest share */
    *first = i * share + (i < extra ? i : extra);
    return share + (i < extra ? 1 : 0);
}

/* One device's run: its range, and what it returned with its message. */
typedef struct {
    tk_device_work_fn work;
    void *ctx;
    int index;
    size_t first, count;
    tk_status status;
    char message[1024];
    pthread_t thread;
    int started;
} device_run;

static void run_one(device_run *r)
{
    tk_clear_error();
    r->status = r->work(r->ctx, r->index, r->first, r->count);
    if (r->status != TK_OK) snprintf(r->message, sizeof r->message, "%s", tk_last_error());
}

static void *run_thread(void *arg)
{
    run_one((device_run *)arg);
    return NULL;
}

tk_status tk_run_on_devices(int first_device, int devices, size_t count, tk_device_work_fn work, void *ctx)
{
    if (devices <= 1) return count ? work(ctx, 0, 0, count) : TK_OK;
    if (devices > TK_MAX_CUDA_DEVICES)
        return tk_set_error(TK_ERR_ARGUMENT, "%d devices asked for, at most %d", devices, TK_MAX_CUDA_DEVICES);
    device_run runs[TK_MAX_CUDA_DEVICES];
    memset(runs, 0, sizeof runs);
    for (int i = 0; i < devices; ++i) {
        device_run *r = &runs[i];
        r->work = work, r->ctx = ctx, r->index = i;
        r->count = tk_device_range(count, devices, i, &r->first);
        if (r->count) r->started = pthread_create(&r->thread, NULL, run_thread, r) == 0;
    }
    /* ranges whose thread could not start run here, while the others run on */
    for (int i = 0; i < devices; ++i)
        if (runs[i].count && !runs[i].started) run_one(&runs[i]);
    for (int i = 0; i < devices; ++i)
        if (runs[i].started) pthread_join(runs[i].thread, NULL);
    for (int i = 0; i < devices; ++i)
        if (runs[i].count && runs[i].status != TK_OK)
            return tk_set_error(runs[i].status, "CUDA device %d: %s", first_device + i, runs[i].message);
    return TK_OK;
}
