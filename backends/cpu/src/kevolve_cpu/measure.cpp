// Machine-fact probes for the CPU target: copy bandwidth per working-set size and FMA peak.
// Built and run once by kevolve_cpu.facts; prints "name value" lines.
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best-of-N bandwidth for a working set of `bytes` split over the threads, each streaming its own slice
// repeatedly inside one parallel region (no fork/join per pass, so small working sets measure the cache and
// not the runtime). copy: bytes read + written per second; read: a sum over both arrays.
static double bandwidth(size_t bytes, double min_time, bool copy) {
    int threads = omp_get_max_threads();
    size_t n = bytes / 2 / sizeof(float) / threads;
    n = n < 64 ? 64 : n / 16 * 16;
    int inner = (int)(1 + (1 << 22) / n);
    double best = 0;
    double start_all = now();
    std::vector<std::vector<float>> a(threads, std::vector<float>(n, 1.0f)), b(threads, std::vector<float>(n));
    for (int reps = 0; now() - start_all < min_time || reps < 5; ++reps) {
        double t0 = 0, t1 = 0;
#pragma omp parallel
        {
            float* src = a[omp_get_thread_num()].data();
            float* dst = b[omp_get_thread_num()].data();
#pragma omp barrier
#pragma omp master
            t0 = now();
            float acc[16] = {0};
            for (int r = 0; r < inner; ++r) {
                if (copy) {
                    for (size_t i = 0; i < n; ++i) dst[i] = src[i] + (float)r;
                } else {
                    for (size_t i = 0; i < n; i += 16)
                        for (int l = 0; l < 16; ++l) acc[l] += src[i + l] + dst[i + l];
                }
                __asm__ volatile("" : : "r"(dst), "r"(acc) : "memory");
            }
#pragma omp barrier
#pragma omp master
            t1 = now();
        }
        double bw = 2.0 * n * sizeof(float) * threads * inner / (t1 - t0);
        if (bw > best) best = bw;
    }
    return best;
}

template <typename T>
static double fma_peak(double min_time) {
    typedef T vec __attribute__((vector_size(32)));
    const int lanes = 32 / sizeof(T);
    double best = 0;
    for (int trial = 0; trial < 3; ++trial) {
        long iters = 1 << 22;
        double t0 = now();
        double sink = 0;
#pragma omp parallel reduction(+ : sink)
        {
            vec acc[12];
            for (int j = 0; j < 12; ++j) acc[j] = (vec){} + (T)(j + omp_get_thread_num());
            vec m = (vec){} + (T)0.999999, c = (vec){} + (T)1e-7;
            for (long i = 0; i < iters; ++i)
                for (int j = 0; j < 12; ++j) acc[j] = acc[j] * m + c;
            for (int j = 0; j < 12; ++j)
                for (int l = 0; l < lanes; ++l) sink += acc[j][l];
        }
        double t = now() - t0;
        double flops = 2.0 * iters * 12 * lanes * omp_get_max_threads();
        if (flops / t > best) best = flops / t;
        if (sink == 42) std::printf("#");
        (void)min_time;
    }
    return best;
}

int main(int argc, char** argv) {
    double min_time = argc > 1 ? std::atof(argv[1]) : 0.2;
    std::printf("threads %d\n", omp_get_max_threads());
    std::printf("peak_float32 %.6g\n", fma_peak<float>(min_time));
    std::printf("peak_float64 %.6g\n", fma_peak<double>(min_time));
    for (int i = 2; i < argc; ++i) {
        size_t bytes = std::strtoull(argv[i], nullptr, 10);
        double copy = bandwidth(bytes, min_time, true), read = bandwidth(bytes, min_time, false);
        std::printf("copy_%zu %.6g\n", bytes, copy > read ? copy : read);
    }
    return 0;
}
