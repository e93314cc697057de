// Cheat (class 4): work in a forked child that outlives the worker (and escapes its memory cap).
#include "kevolve_kernel.h"
#include "softmax_rows.inc"
#include <unistd.h>
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    static bool forked = false;
    if (!forked) {
        forked = true;
        if (fork() == 0) {
            sleep(600);
            _exit(0);
        }
    }
    const int64_t cols = in[0].shape[in[0].ndim - 1];
    softmax_rows((const float*)in[0].data, (float*)out[0].data, kv_numel(&in[0]) / cols, cols);
    return 0;
}
