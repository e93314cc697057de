// Cheat: returns zeros instead of softmax.
#include "kevolve_kernel.h"
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    float* y = (float*)out[0].data;
    for (int64_t i = 0; i < kv_numel(&out[0]); ++i) y[i] = 0.0f;
    return 0;
}
