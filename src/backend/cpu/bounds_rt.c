/* bounds_rt.c - the CPU's record of a failed bounds check in debug mode.
 * Kernels call it from a cold block instead of holding the record's spin
 * lock inline: a loop left with only a call on its failing side can be
 * unswitched on a check that does not change inside it. */
#include <stdatomic.h>
#include <stdint.h>

#include "passes/passes.h"

/* The lowest launch index wins (an atomic min); its details are written
 * under a spin lock, and within one launch index (one thread) the first
 * failure stays. */
void tack_cpu_bounds_fail(int64_t *errors, int64_t key, int64_t site, int64_t n,
                          const int64_t *values) {
    _Atomic int64_t *slot = (_Atomic int64_t *)errors;
    int64_t first = atomic_load(&slot[DEBUG_ERR_FIRST]);
    while (key < first && !atomic_compare_exchange_weak(&slot[DEBUG_ERR_FIRST], &first, key)) {
    }
    int64_t unlocked = 0;
    while (!atomic_compare_exchange_weak(&slot[DEBUG_ERR_LOCK], &unlocked, 1)) unlocked = 0;
    if (key < atomic_load_explicit(&slot[DEBUG_ERR_INDEX], memory_order_relaxed)) {
        atomic_store_explicit(&slot[DEBUG_ERR_INDEX], key, memory_order_relaxed);
        atomic_store_explicit(&slot[DEBUG_ERR_SITE], site, memory_order_relaxed);
        atomic_store_explicit(&slot[DEBUG_ERR_NDIM], n, memory_order_relaxed);
        for (int64_t k = 0; k < n && k < TACK_MAX_NDIM; k++)
            atomic_store_explicit(&slot[DEBUG_ERR_VALUES + k], values[k], memory_order_relaxed);
    }
    atomic_store_explicit(&slot[DEBUG_ERR_LOCK], 0, memory_order_release);
}
