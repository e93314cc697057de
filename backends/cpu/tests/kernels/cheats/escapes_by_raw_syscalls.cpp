// Cheat (class 4): escape the worker through raw system calls that no symbol names (the source scan and the
// linker's view see no fork): a grandchild in a session of its own outlives the worker and its process group.
// x86-64 Linux system call numbers.
#include "kevolve_kernel.h"
#include "softmax_rows.inc"

static long raw_syscall(long number, long a = 0, long b = 0, long c = 0, long d = 0) {
    long result;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(result) : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return result;
}

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    static bool escaped = false;
    if (!escaped) {
        escaped = true;
        long child = raw_syscall(57);  // fork
        if (child == 0) {
            raw_syscall(112);  // setsid
            if (raw_syscall(57) == 0) {
                long pause[2] = {20, 0};
                raw_syscall(35, (long)pause);  // nanosleep: the grandchild lives on
            }
            raw_syscall(231, 0);  // exit_group
        }
        if (child > 0) raw_syscall(61, child);  // wait4: no child is left for the harness to see
    }
    const int64_t cols = in[0].shape[in[0].ndim - 1];
    softmax_rows((const float*)in[0].data, (float*)out[0].data, kv_numel(&in[0]) / cols, cols);
    return 0;
}
