// kevolve CPU kernel ABI. A kernel file defines
//
//   KV_EXPORT int kevolve_kernel(const kv_tensor* inputs, int64_t n_inputs,
//                                kv_tensor* outputs, int64_t n_outputs);
//
// Inputs and outputs are contiguous, in the order the problem lists them; outputs are preallocated (and
// poisoned by the harness: every element must be written). Return 0 on success, non-zero to decline.
//
// A kernel that needs scratch memory (a lowered program's intermediates) also defines
//
//   KV_EXPORT int64_t kevolve_scratch_bytes(const kv_tensor* inputs, int64_t n_inputs,
//                                           const kv_tensor* outputs, int64_t n_outputs);
//
// and the harness passes a buffer of that many bytes (KV_UINT8, 64-byte aligned, contents undefined) as
// outputs[n_outputs], one past the outputs; n_outputs does not count it.
#pragma once
#include <stdint.h>
#include <string.h>

enum kv_dtype { KV_FLOAT32 = 0, KV_FLOAT64 = 1, KV_BFLOAT16 = 2, KV_FLOAT16 = 3, KV_INT64 = 4, KV_INT32 = 5, KV_BOOL = 6, KV_UINT8 = 7 };

typedef struct {
    void* data;
    int64_t ndim;
    int64_t shape[8];
    int64_t strides[8];  // in elements
    int32_t dtype;
} kv_tensor;

#define KV_EXPORT extern "C" __attribute__((visibility("default")))

static inline int64_t kv_numel(const kv_tensor* t) {
    int64_t n = 1;
    for (int64_t i = 0; i < t->ndim; ++i) n *= t->shape[i];
    return n;
}

// whether t has like's shape and is laid out row-major without gaps (element i of both is at index i)
static inline int kv_dense_like(const kv_tensor* t, const kv_tensor* like) {
    if (t->ndim != like->ndim) return 0;
    int64_t step = 1;
    for (int64_t d = t->ndim - 1; d >= 0; --d) {
        if (t->shape[d] != like->shape[d]) return 0;
        if (t->shape[d] != 1 && t->strides[d] != step) return 0;
        step *= t->shape[d];
    }
    return 1;
}

// bfloat16 <-> float32, round to nearest even, NaN kept quiet
static inline float kv_bf16_to_f32(uint16_t v) {
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t kv_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
