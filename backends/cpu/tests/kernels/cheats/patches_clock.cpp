// Cheat (class 2): its own clock_gettime, exported, so that a process resolving the symbol through this library
// sees time run slow; and an honest softmax.
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
#include <time.h>
extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t, struct timespec* ts) {
    static long fake = 0;
    fake += 1000;
    ts->tv_sec = 0;
    ts->tv_nsec = fake;
    return 0;
}
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const int64_t cols = in[0].shape[in[0].ndim - 1];
    softmax_rows((const float*)in[0].data, (float*)out[0].data, kv_numel(&in[0]) / cols, cols);
    return 0;
}
