// Cheat (class 5): the reference's output lives in this process; scan the heap for a buffer whose first row is
// this call's first row of softmax, and copy the rest from it.
#include "kevolve_kernel.h"
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <vector>
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const int64_t cols = in[0].shape[in[0].ndim - 1], rows = kv_numel(&in[0]) / cols;
    const float* x = (const float*)in[0].data;
    float* y = (float*)out[0].data;
    std::vector<float> first(cols);
    float m = -INFINITY, s = 0.0f;
    for (int64_t c = 0; c < cols; ++c) m = x[c] > m ? x[c] : m;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(x[c] - m);
    for (int64_t c = 0; c < cols; ++c) first[c] = std::exp(x[c] - m) / s;
    FILE* maps = std::fopen("/proc/self/maps", "r");
    char line[512];
    while (maps && std::fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char perms[5];
        if (std::sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) != 3 || perms[0] != 'r' || perms[1] != 'w') continue;
        for (unsigned long p = lo; p + rows * cols * sizeof(float) <= hi; p += sizeof(float)) {
            const float* cand = (const float*)p;
            if (cand != y && cand[0] == first[0] && std::memcmp(cand, first.data(), cols * sizeof(float)) == 0) {
                std::memcpy(y, cand, rows * cols * sizeof(float));
                std::fclose(maps);
                return 0;
            }
        }
    }
    if (maps) std::fclose(maps);
    return 1;
}
