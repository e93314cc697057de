// Cheat (class 1): returns at once and lets a detached thread write the result, so the clock stops before the
// work is done. Checked outputs (poisoned) are computed before returning.
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
#include <thread>
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const int64_t cols = in[0].shape[in[0].ndim - 1], rows = kv_numel(&in[0]) / cols;
    const float* x = (const float*)in[0].data;
    float* y = (float*)out[0].data;
    if (std::isnan(y[0]) || y[0] == -3.0e38f) {
        softmax_rows(x, y, rows, cols);
    } else {
        std::thread(softmax_rows, x, y, rows, cols).detach();
    }
    return 0;
}
