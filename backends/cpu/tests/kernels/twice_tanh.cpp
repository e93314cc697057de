// 2 * tanh(x), float32, for the callable-problem test.
#include "kevolve_kernel.h"
#include <cmath>
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const float* x = (const float*)in[0].data;
    float* y = (float*)out[0].data;
    for (int64_t i = 0; i < kv_numel(&in[0]); ++i) y[i] = 2.0f * std::tanh(x[i]);
    return 0;
}
