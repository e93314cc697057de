// Cheat (class 1): honest while checked, idle while timed. The harness poisons the outputs it checks (NaN or
// -3e38); outputs that hold neither are not being checked, so nothing is written to them.
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    float* y = (float*)out[0].data;
    if (!(std::isnan(y[0]) || y[0] == -3.0e38f)) return 0;
    const int64_t cols = in[0].shape[in[0].ndim - 1];
    softmax_rows((const float*)in[0].data, y, kv_numel(&in[0]) / cols, cols);
    return 0;
}
