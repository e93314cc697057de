// An honest softmax whose comments mention words the scan looks for: it does not dlopen anything, nor popen.
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const int64_t cols = in[0].shape[in[0].ndim - 1];  /* no torch here either */
    softmax_rows((const float*)in[0].data, (float*)out[0].data, kv_numel(&in[0]) / cols, cols);
    return 0;
}
