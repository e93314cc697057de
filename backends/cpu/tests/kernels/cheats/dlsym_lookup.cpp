// Cheat (class 3): resolves symbols at run time through a lookup function the source scan cannot spell (it
// knows dlsym, not dlvsym): enough to reach any library's code.
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
extern "C" void* dlvsym(void*, const char*, const char*);
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    (void)dlvsym((void*)0, "kevolve_kernel", "X");
    const int64_t cols = in[0].shape[in[0].ndim - 1];
    softmax_rows((const float*)in[0].data, (float*)out[0].data, kv_numel(&in[0]) / cols, cols);
    return 0;
}
