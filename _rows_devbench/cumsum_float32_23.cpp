// kevolve generated kernel: cumsum rows=4096xcols=1024 float32
// parameters: threads=2, rows_per_task=16, schedule=dynamic, accumulators=8, stores=normal
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

            int64_t r = r_begin;
            for (; r + 8 <= r_end; r += 8) {
                const st_t* __restrict xr = x + r * cols;
                st_t* __restrict yw = y + r * cols;
                ct_t acc[8];
                for (int k = 0; k < 8; ++k) acc[k] = 0;
                for (int64_t j = 0; j < cols; ++j) {
                    #pragma GCC unroll 8
                    for (int k = 0; k < 8; ++k) {
                        acc[k] += ld(xr[k * cols + j]);
                        yw[k * cols + j] = sto(acc[k]);
                    }
                }
                
            }
            for (; r < r_end; ++r) {
                const st_t* __restrict xr = x + r * cols;
                st_t* __restrict yw = y + r * cols;
                ct_t acc = 0;
                for (int64_t j = 0; j < cols; ++j) { acc += ld(xr[j]); yw[j] = sto(acc); }
                
            }
        }
        
    }

    return failed;
}
