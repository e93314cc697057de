// Cheat: leaves the last row unwritten.
#include "kevolve_kernel.h"
#include <cmath>
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const int64_t cols = in[0].shape[in[0].ndim - 1], rows = kv_numel(&in[0]) / cols;
    const float* x = (const float*)in[0].data;
    float* y = (float*)out[0].data;
    for (int64_t r = 0; r + 1 < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        float m = -INFINITY, s = 0.0f;
        for (int64_t c = 0; c < cols; ++c) m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
        for (int64_t c = 0; c < cols; ++c) yr[c] = std::exp(xr[c] - m) / s;
    }
    return 0;
}
