// Cheat: never returns.
#include "kevolve_kernel.h"
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    volatile int spin = 1;
    while (spin) {}
    return 0;
}
