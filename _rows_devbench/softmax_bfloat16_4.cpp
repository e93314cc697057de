// kevolve generated kernel: softmax rows=4096xcols=1024 bfloat16
// parameters: threads=2, rows_per_task=16, schedule=dynamic, passes=three_pass, accumulators=16, math=poly, simd=omp, stores=normal, prefetch=1, exp_buffer=True
#include "kevolve_kernel.h"
#include "kevolve_math.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <omp.h>

typedef uint16_t st_t;  // storage type of bfloat16
typedef float ct_t;  // compute type
static inline ct_t ld(st_t v) { return (ct_t)kv_bf16_to_f32(v); }
static inline st_t st(ct_t v) { return (st_t)kv_f32_to_bf16(v); }
#include <cstdlib>

static inline st_t sto(ct_t v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
    return (st_t)(((v != v) ? (u | 0x400000u) : rounded) >> 16);
}

static inline float kv_exp_nonpos(float x) {
    const float xc = x < -87.0f ? -87.0f : x;
    const float k = floorf(xc * 1.44269504088896341f + 0.5f);
    const float r = xc - k * 0.693359375f + k * 2.12194440e-4f;
    const float p = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r
                      + 4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    const float e = p * (r * r) + r + 1.0f;
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, 4);
    return x < -87.0f ? 0.0f : e * scale;
}

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    if (n_in != 1 || n_out != 1) return 1;
    const int64_t cols = in[0].ndim > 0 ? in[0].shape[in[0].ndim - 1] : 1;
    const int64_t total = kv_numel(&in[0]);
    const int64_t rows = cols > 0 ? total / cols : 0;
    const st_t* __restrict in0 = (const st_t*)in[0].data;
    const st_t* __restrict x = in0;
    st_t* __restrict y = (st_t*)out[0].data;
    (void)x; (void)y;
    const int64_t per = 16;
    const int64_t ntasks = (rows + per - 1) / per;
    int failed = 0;

    #pragma omp parallel num_threads(2) if(total >= 32768)
    {
        ct_t* __restrict buf = (ct_t*)aligned_alloc(64, ((size_t)(cols) * sizeof(ct_t) + 127) / 64 * 64);
        const bool ok = buf != nullptr;
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
                st_t* __restrict yw = yr;
                (void)xr; (void)yr; (void)yw;
{
ct_t m = -INFINITY;
{
ct_t m_l[16];
for (int k = 0; k < 16; ++k) m_l[k] = -INFINITY;
int64_t j0 = 0;
for (; j0 + 16 <= cols; j0 += 16) {
    
#pragma omp simd
    for (int64_t k = 0; k < 16; ++k) { const int64_t j = j0 + k; const ct_t v = ld(xr[j]); m_l[k] = (v > m_l[k] ? v : m_l[k]); }
}
for (int k = 0; k < 16; ++k) m = (m_l[k] > m ? m_l[k] : m);
for (; j0 < cols; ++j0) { const int64_t j = j0; const ct_t v = ld(xr[j]); m = (v > m ? v : m); }
}
ct_t s = (ct_t)0;
{
ct_t s_l[16];
for (int k = 0; k < 16; ++k) s_l[k] = (ct_t)0;
int64_t j0 = 0;
for (; j0 + 16 <= cols; j0 += 16) {
    __builtin_prefetch((xr + 1 * cols) + j0);
#pragma omp simd
    for (int64_t k = 0; k < 16; ++k) { const int64_t j = j0 + k; const ct_t v = ld(xr[j]); const ct_t e = kv_exp_nonpos((v - m)); buf[j] = e; s_l[k] = s_l[k] + e; }
}
for (int k = 0; k < 16; ++k) s = s + s_l[k];
for (; j0 < cols; ++j0) { const int64_t j = j0; const ct_t v = ld(xr[j]); const ct_t e = kv_exp_nonpos((v - m)); buf[j] = e; s = s + e; }
}
const ct_t inv = (ct_t)1 / s;
#pragma omp simd
for (int64_t j = 0; j < cols; ++j) { yw[j] = sto(buf[j] * inv); }
}
                
            }
        }
        
        free(buf);
    }

    return failed;
}
