// kevolve generated kernel: rms_norm rows=4096xcols=1024 float32
// parameters: threads=2, rows_per_task=16, schedule=dynamic, accumulators=16, simd=omp, stores=stream, prefetch=1
#include "kevolve_kernel.h"
#include "kevolve_math.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <omp.h>

typedef float st_t;  // storage type of float32
typedef float ct_t;  // compute type
static inline ct_t ld(st_t v) { return (ct_t)v; }
static inline st_t st(ct_t v) { return (st_t)v; }
#include <cstdlib>

static inline st_t sto(ct_t v) { return st(v); }

#include <immintrin.h>
// copy a finished row out with non-temporal stores: no read-for-ownership of the destination, and the output
// does not evict the input from the caches
static inline void kv_stream_copy(void* __restrict dst, const void* __restrict src, size_t bytes) {
#if defined(__AVX__)
    char* d = (char*)dst;
    const char* s = (const char*)src;
    size_t head = (32 - ((uintptr_t)d & 31)) & 31;
    if (head > bytes) head = bytes;
    memcpy(d, s, head);
    d += head; s += head; bytes -= head;
    for (; bytes >= 32; bytes -= 32, d += 32, s += 32)
        _mm256_stream_si256((__m256i*)d, _mm256_loadu_si256((const __m256i*)s));
    memcpy(d, s, bytes);
#else
    memcpy(dst, src, bytes);
#endif
}
static inline void kv_stream_fence() {
#if defined(__AVX__)
    _mm_sfence();
#endif
}

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    if (n_in != 2 || n_out != 1) return 1;
    const int64_t cols = in[0].ndim > 0 ? in[0].shape[in[0].ndim - 1] : 1;
    const int64_t total = kv_numel(&in[0]);
    const int64_t rows = cols > 0 ? total / cols : 0;
    const st_t* __restrict in0 = (const st_t*)in[0].data;
    const st_t* __restrict in1 = (const st_t*)in[1].data;
    const st_t* __restrict x = in0;
    st_t* __restrict y = (st_t*)out[0].data;
    (void)x; (void)y;
    const int64_t per = 16;
    const int64_t ntasks = (rows + per - 1) / per;
    int failed = 0;
    const ct_t* __restrict in1_c = (const ct_t*)in1;
    #pragma omp parallel num_threads(2) if(total >= 32768)
    {
        st_t* __restrict stage = (st_t*)aligned_alloc(64, ((size_t)(cols) * sizeof(st_t) + 127) / 64 * 64);
        const bool ok = stage != nullptr;
        if (!ok) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(dynamic)
        for (int64_t t = 0; t < ntasks; ++t) {
            if (!ok) continue;  // every thread meets the worksharing loop; one without scratch does no rows
            const int64_t r_begin = t * per;
            const int64_t r_end = std::min(rows, r_begin + per);

            for (int64_t r = r_begin; r < r_end; ++r) {
                const st_t* __restrict xr = x + r * cols;
                st_t* __restrict yr = y + r * cols;
                st_t* __restrict yw = stage;
                (void)xr; (void)yr; (void)yw;
{
ct_t s2 = (ct_t)0;
{
ct_t s2_l[16];
for (int k = 0; k < 16; ++k) s2_l[k] = (ct_t)0;
int64_t j0 = 0;
for (; j0 + 16 <= cols; j0 += 16) {
    
#pragma omp simd
    for (int64_t k = 0; k < 16; ++k) { const int64_t j = j0 + k; const ct_t v = ld(xr[j]); s2_l[k] = s2_l[k] + v * v; }
}
for (int k = 0; k < 16; ++k) s2 = s2 + s2_l[k];
for (; j0 < cols; ++j0) { const int64_t j = j0; const ct_t v = ld(xr[j]); s2 = s2 + v * v; }
}
const ct_t rstd = (ct_t)1 / std::sqrt(s2 / (ct_t)cols + (ct_t)1e-06);
int64_t j0 = 0;
for (; j0 + 16 <= cols; j0 += 16) {
    __builtin_prefetch((xr + 1 * cols) + j0);
    #pragma omp simd
    for (int64_t j = j0; j < j0 + 16; ++j) { yw[j] = sto(ld(xr[j]) * rstd * in1_c[j]); }
}
#pragma omp simd
for (int64_t j = j0; j < cols; ++j) { yw[j] = sto(ld(xr[j]) * rstd * in1_c[j]); }
}
                kv_stream_copy(yr, stage, (size_t)cols * sizeof(st_t));
            }
        }
        kv_stream_fence();
        free(stage);
    }

    return failed;
}
