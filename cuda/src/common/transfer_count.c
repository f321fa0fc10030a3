/* The transfer probe of device_arrays.h: bytes of callers' arrays the cores copied between
 * host and device memory, summed over the process (atomic: several plans run at once). */
#include <stdatomic.h>

#include "device_arrays.h"
#include "tk_bench_hooks.h"

static _Atomic unsigned long long array_transfer_bytes;

void tk_count_array_transfer(size_t bytes)
{
    atomic_fetch_add_explicit(&array_transfer_bytes, (unsigned long long)bytes, memory_order_relaxed);
}

unsigned long long tk_test_array_transfer_bytes(void)
{
    return atomic_load_explicit(&array_transfer_bytes, memory_order_relaxed);
}
