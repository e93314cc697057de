// Cheat (class 1): computes an input once, then hands back its remembered output whenever it is called on the
// same buffer holding the same first value again, as each of a timed sample's back-to-back calls is.
#include <cstring>
#include <vector>
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
static const void* seen = nullptr;
static float seen_first = 0.0f;
static std::vector<float> remembered;
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const float* x = (const float*)in[0].data;
    float* y = (float*)out[0].data;
    const int64_t n = kv_numel(&in[0]), cols = in[0].shape[in[0].ndim - 1];
    if (x == seen && x[0] == seen_first && (int64_t)remembered.size() == n) {
        std::memcpy(y, remembered.data(), n * sizeof(float));
        return 0;
    }
    softmax_rows(x, y, n / cols, cols);
    seen = x;
    seen_first = x[0];
    remembered.assign(y, y + n);
    return 0;
}
