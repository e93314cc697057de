// The native half of a kevolve kernel op (torch.ops.kevolve.NAME), built against torch's headers by
// runtime.build_torch_library and copied with the kernel into saved packages.
//
// kevolve_bind_op registers the op's per-call path for its device: the dispatcher calls it directly, so a call pays
// no Python but the kernel's own launcher. It keeps the outputs' shapes and dtypes per input signature (dtypes and
// sizes) and asks the op's Python shape function, registered as NS::NAME__shapes, only for a signature it has not
// seen, or on every call where sizes depend on input values; then it allocates the outputs and launches the kernel
// through the C function it offers (a compiled CPU kernel's, e.g.). That function may leave a call to Python by
// returning KEVOLVE_RUN_IN_PYTHON (a Triton kernel learning its launches, kevolve_triton/replay.cpp): the op's
// Python helper NS::NAME__python then runs the kernel's own launcher on the same tensors.
//
// kevolve_raise_on_backward registers PyTorch's own fallback for ops without a derivative at the Autograd key:
// backward raises "derivative for NS::NAME is not implemented" instead of passing on a missing gradient, at no cost
// per call.
//
// Registrations live as long as the process (never destroyed, so nothing runs at exit). Both functions return 0,
// or 1 with the reason in `error`: no exception crosses the C boundary.
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

constexpr int KEVOLVE_RUN_IN_PYTHON = 0x4b455650;

// A kernel's own launch from C: returns 0, or the kernel's non-zero code when it declines the arguments.
using Launch = int (*)(void* state, const at::Tensor* inputs, int64_t n_inputs, const at::Tensor* outputs,
                       int64_t n_outputs);

struct Spec {
  c10::ScalarType dtype;
  std::vector<int64_t> sizes;
};

std::vector<torch::Library*>& libraries() {
  static auto* kept = new std::vector<torch::Library*>();
  return *kept;
}

torch::Library* impl_library(const std::string& qualname, c10::DispatchKey key) {
  auto* library = new torch::Library(torch::Library::IMPL, qualname.substr(0, qualname.find("::")), key, __FILE__,
                                     __LINE__);
  libraries().push_back(library);
  return library;
}

std::string op_name(const std::string& qualname) { return qualname.substr(qualname.find("::") + 2); }

class KernelOp final : public c10::OperatorKernel {
 public:
  KernelOp(std::string qualname, int64_t n_inputs, bool value_dependent, Launch launch, void* state)
      : qualname_(std::move(qualname)), n_inputs_(n_inputs), value_dependent_(value_dependent), launch_(launch),
        state_(state), shapes_(helper("__shapes")), python_(helper("__python")) {
    TORCH_CHECK(launch_ != nullptr, qualname_, ": no launch function");
    if (auto provider = c10::Dispatcher::singleton().findSchema({qualname_ + "__extras", ""})) {  // weights, once
      torch::jit::Stack stack;
      provider->callBoxed(&stack);
      extras_ = stack.back().toTensorVector();
    }
  }

  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) {
    c10::SmallVector<at::Tensor, 8> inputs;
    for (auto& arg : torch::jit::last(*stack, n_inputs_)) inputs.push_back(arg.toTensor().contiguous());
    torch::jit::drop(*stack, n_inputs_);
    const c10::Device device = inputs.empty() ? c10::Device(c10::kCPU) : inputs[0].device();
    std::vector<Spec> asked;
    const std::vector<Spec>& specs = value_dependent_ ? (asked = ask(inputs)) : cached(inputs);
    c10::SmallVector<at::Tensor, 4> outputs;
    {
      c10::OptionalDeviceGuard guard(device);
      for (const auto& spec : specs) outputs.push_back(allocate(spec, device));
    }
    inputs.append(extras_.begin(), extras_.end());
    int code = launch_(state_, inputs.data(), static_cast<int64_t>(inputs.size()), outputs.data(),
                       static_cast<int64_t>(outputs.size()));
    if (code == KEVOLVE_RUN_IN_PYTHON) {  // NS::NAME__python(Tensor[] inputs, Tensor(a!)[] outputs) -> ()
      torch::jit::Stack call{c10::IValue(std::vector<at::Tensor>(inputs.begin(), inputs.end())),
                             c10::IValue(std::vector<at::Tensor>(outputs.begin(), outputs.end()))};
      python_.callBoxed(&call);
      code = 0;
    }
    TORCH_CHECK(code == 0, qualname_, ": the kernel declined these arguments (returned ", code, ")");
    for (auto& output : outputs) torch::jit::push(*stack, std::move(output));
  }

 private:
  // An output as at::empty makes it, without dispatching at::empty: the device's own allocator (on the device the
  // caller's guard selected). A dispatch per output costs as much as the rest of a call on a tiny input.
  static at::Tensor allocate(const Spec& spec, c10::Device device) {
    return at::detail::empty_generic(spec.sizes, c10::GetAllocator(device.type()),
                                     c10::DispatchKeySet(c10::computeDispatchKey(spec.dtype, c10::kStrided, device)),
                                     spec.dtype, std::nullopt);
  }

  // The specs of a signature seen before (kept for the process: the reference stays valid), else the shape
  // function's answer, remembered. The key is built in a buffer of the calling thread's, with no allocation.
  const std::vector<Spec>& cached(c10::ArrayRef<at::Tensor> inputs) {
    thread_local std::vector<int64_t> key;
    key.clear();
    for (const auto& t : inputs) {
      key.push_back(static_cast<int64_t>(t.scalar_type()));
      key.push_back(t.dim());
      key.insert(key.end(), t.sizes().begin(), t.sizes().end());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = cache_.find(key);
      if (found != cache_.end()) return found->second;
    }
    auto specs = ask(inputs);
    std::lock_guard<std::mutex> lock(mutex_);
    return cache_.emplace(key, std::move(specs)).first->second;
  }

  // NS::NAME__shapes(Tensor[] inputs) -> Tensor[]: one meta tensor per output, of its shape and dtype
  std::vector<Spec> ask(c10::ArrayRef<at::Tensor> inputs) {
    torch::jit::Stack stack;
    stack.emplace_back(inputs.vec());
    shapes_.callBoxed(&stack);
    std::vector<Spec> specs;
    for (const auto& meta : stack.back().toTensorVector()) specs.push_back({meta.scalar_type(), meta.sizes().vec()});
    return specs;
  }

  c10::OperatorHandle helper(const char* suffix) const {
    return c10::Dispatcher::singleton().findSchemaOrThrow((qualname_ + suffix).c_str(), "");
  }

  std::string qualname_;
  int64_t n_inputs_;
  bool value_dependent_;
  Launch launch_;
  void* state_;
  c10::OperatorHandle shapes_;
  c10::OperatorHandle python_;
  std::vector<at::Tensor> extras_;
  std::mutex mutex_;
  std::map<std::vector<int64_t>, std::vector<Spec>> cache_;
};

}  // namespace

extern "C" __attribute__((visibility("default"))) int kevolve_bind_op(const char* qualname, const char* dispatch_key,
                                                                    int64_t n_inputs, int value_dependent,
                                                                    void* launch, void* state, char* error,
                                                                    int error_size) {
  try {
    const std::string name(qualname);
    auto kernel = std::make_unique<KernelOp>(name, n_inputs, value_dependent != 0, reinterpret_cast<Launch>(launch),
                                             state);
    impl_library(name, c10::parseDispatchKey(dispatch_key))
        ->impl(op_name(name).c_str(),
               torch::CppFunction::makeFromBoxedKernel(c10::BoxedKernel::makeFromFunctor(std::move(kernel))));
    return 0;
  } catch (const std::exception& exc) {
    std::snprintf(error, error_size, "%s", exc.what());
    return 1;
  }
}

extern "C" __attribute__((visibility("default"))) int kevolve_raise_on_backward(const char* qualname, char* error,
                                                                              int error_size) {
  try {
    const std::string name(qualname);
    impl_library(name, c10::DispatchKey::Autograd)
        ->impl(op_name(name).c_str(), torch::autograd::autogradNotImplementedFallback());
    return 0;
  } catch (const std::exception& exc) {
    std::snprintf(error, error_size, "%s", exc.what());
    return 1;
  }
}
