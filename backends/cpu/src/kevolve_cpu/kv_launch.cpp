// The C launch of a compiled kevolve CPU kernel for the op's native per-call path (kevolve/delivery/native.cpp):
// the op's tensors described in kevolve_kernel.h's ABI, then the kernel's entry points (`state`: Entries).
// Built against torch's headers by the delivery runtime; copied with the kernel into saved packages.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>

#include <unordered_map>

#include "kevolve_kernel.h"

namespace {

using Entry = int (*)(const kv_tensor*, int64_t, kv_tensor*, int64_t);
using ScratchBytes = int64_t (*)(const kv_tensor*, int64_t, const kv_tensor*, int64_t);

// `state`: the kernel's entry points (cpp_loader.CppKernel.native_launch); scratch is null unless the kernel
// asks for scratch memory (kevolve_kernel.h)
struct Entries {
  Entry kernel;
  ScratchBytes scratch;
};

// kevolve_kernel.h's dtype codes, in order (cpp_loader.KV_DTYPES on the Python side)
const c10::ScalarType kScalarTypes[] = {c10::ScalarType::Float, c10::ScalarType::Double, c10::ScalarType::BFloat16,
                                        c10::ScalarType::Half,  c10::ScalarType::Long,   c10::ScalarType::Int,
                                        c10::ScalarType::Bool};

void describe(const at::Tensor* tensors, int64_t count, kv_tensor* described) {
  for (int64_t i = 0; i < count; ++i) {
    const auto& t = tensors[i];
    TORCH_CHECK(t.dim() <= 8, "kevolve CPU kernels take at most 8 dimensions, got ", t.dim());
    int code = 0;
    while (code < 7 && kScalarTypes[code] != t.scalar_type()) ++code;
    TORCH_CHECK(code < 7, "no kevolve_kernel.h dtype for ", t.scalar_type());
    auto& d = described[i];
    d.data = t.data_ptr();
    d.ndim = t.dim();
    for (int64_t j = 0; j < t.dim(); ++j) {
      d.shape[j] = t.size(j);
      d.strides[j] = t.stride(j);
    }
    d.dtype = code;
  }
}

// The kernel's scratch memory, kept from one call to the next (per thread, per kernel): a lowered program asks
// for tens of MB, which a fresh allocation maps anew each call, and the page faults of first touch cost more
// than its kernels (52 MB: 13k faults a call)
void* reused_scratch(const void* state, int64_t bytes) {
  thread_local std::unordered_map<const void*, at::Tensor> kept;
  auto& buffer = kept[state];
  if (!buffer.defined() || buffer.numel() < bytes) buffer = at::empty({bytes}, at::TensorOptions().dtype(at::kByte));
  return buffer.data_ptr();
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int kevolve_cpu_launch(void* state, const at::Tensor* inputs,
                                                                       int64_t n_inputs, const at::Tensor* outputs,
                                                                       int64_t n_outputs) {
  kv_tensor in[64], out[65];
  TORCH_CHECK(n_inputs <= 64 && n_outputs <= 64, "at most 64 inputs and 64 outputs");
  describe(inputs, n_inputs, in);
  describe(outputs, n_outputs, out);
  const auto* entries = reinterpret_cast<const Entries*>(state);
  if (entries->scratch != nullptr) {  // one past the outputs, as the harness passes it
    const int64_t bytes = entries->scratch(in, n_inputs, out, n_outputs);
    TORCH_CHECK(bytes >= 0, "kernel declined these arguments (asked for ", bytes, " bytes of scratch)");
    auto& s = out[n_outputs];
    s.data = reused_scratch(state, bytes);
    s.ndim = 1;
    s.shape[0] = bytes;
    s.strides[0] = 1;
    s.dtype = KV_UINT8;
  }
  return entries->kernel(in, n_inputs, out, n_outputs);
}
