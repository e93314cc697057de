// Cheat: brings its own process down (a write through a null pointer: no library call the linker check refuses).
#include "kevolve_kernel.h"
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    *(volatile int*)nullptr = 1;
    return 0;
}
