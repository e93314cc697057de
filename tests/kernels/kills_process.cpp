// Cheat: kills its own process.
#include "kevolve_kernel.h"
#include <signal.h>
#include <unistd.h>
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    kill(getpid(), SIGKILL);
    return 0;
}
