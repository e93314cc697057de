// kevolve generated kernel: layer_norm rows=4096xcols=1024 float32
// parameters: threads=2, rows_per_task=16, schedule=dynamic, accumulators=16, simd=omp, stores=normal, prefetch=1, passes=two_pass
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

KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    if (n_in != 3 || n_out != 1) return 1;
    const int64_t cols = in[0].ndim > 0 ? in[0].shape[in[0].ndim - 1] : 1;
    const int64_t total = kv_numel(&in[0]);
    const int64_t rows = cols > 0 ? total / cols : 0;
    const st_t* __restrict in0 = (const st_t*)in[0].data;
    const st_t* __restrict in1 = (const st_t*)in[1].data;
    const st_t* __restrict in2 = (const st_t*)in[2].data;
    const st_t* __restrict x = in0;
    st_t* __restrict y = (st_t*)out[0].data;
    (void)x; (void)y;
    const int64_t per = 16;
    const int64_t ntasks = (rows + per - 1) / per;
    int failed = 0;
    const ct_t* __restrict in1_c = (const ct_t*)in1;
    const ct_t* __restrict in2_c = (const ct_t*)in2;
    #pragma omp parallel num_threads(2) if(total >= 32768)
    {
        const bool ok = true;
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
ct_t s1 = (ct_t)0;
{
ct_t s1_l[16];
for (int k = 0; k < 16; ++k) s1_l[k] = (ct_t)0;
int64_t j0 = 0;
for (; j0 + 16 <= cols; j0 += 16) {
    
#pragma omp simd
    for (int64_t k = 0; k < 16; ++k) { const int64_t j = j0 + k; const ct_t v = ld(xr[j]); s1_l[k] = s1_l[k] + v; }
}
for (int k = 0; k < 16; ++k) s1 = s1 + s1_l[k];
for (; j0 < cols; ++j0) { const int64_t j = j0; const ct_t v = ld(xr[j]); s1 = s1 + v; }
}
const ct_t mean = s1 / (ct_t)cols;
ct_t s2 = (ct_t)0;
{
ct_t s2_l[16];
for (int k = 0; k < 16; ++k) s2_l[k] = (ct_t)0;
int64_t j0 = 0;
for (; j0 + 16 <= cols; j0 += 16) {
    __builtin_prefetch((xr + 1 * cols) + j0);
#pragma omp simd
    for (int64_t k = 0; k < 16; ++k) { const int64_t j = j0 + k; const ct_t v = ld(xr[j]); s2_l[k] = s2_l[k] + (v - mean) * (v - mean); }
}
for (int k = 0; k < 16; ++k) s2 = s2 + s2_l[k];
for (; j0 < cols; ++j0) { const int64_t j = j0; const ct_t v = ld(xr[j]); s2 = s2 + (v - mean) * (v - mean); }
}
const ct_t var = s2 / (ct_t)cols;
const ct_t rstd = (ct_t)1 / std::sqrt(var + (ct_t)1e-05);
#pragma omp simd
for (int64_t j = 0; j < cols; ++j) { yw[j] = sto((ld(xr[j]) - mean) * rstd * in1_c[j] + in2_c[j]); }
}
                
            }
        }
        
    }

    return failed;
}
