// Cheat (class 1): the checks come first, so it computes for its first calls and only writes one row after.
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
static long calls = 0;
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const int64_t cols = in[0].shape[in[0].ndim - 1];
    softmax_rows((const float*)in[0].data, (float*)out[0].data, ++calls > 12 ? 1 : kv_numel(&in[0]) / cols, cols);
    return 0;
}
