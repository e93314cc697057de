// Triton launches replayed from C for the op's native per-call path (kevolve/delivery/native.cpp), on CUDA.
//
// A Triton kernel file launches from Python: its own code computes grids and arguments, then Triton's JIT binds,
// specialises and launches, tens of microseconds of host time a call. For one input signature (device, the
// inputs' dtypes and sizes, the outputs' sizes) those launches are the same on every call but for the pointers:
// replay.py records them (the compiled function, grid, block, shared memory, each argument either a fixed value
// or a place in an input, output or scratch buffer), and this file replays them with cuLaunchKernel.
//
// A signature is learnt over its first three calls, each run by the kernel file in Python (the launch declines
// with KEVOLVE_RUN_IN_PYTHON and native.cpp calls the op's __python helper): the first compiles and autotunes
// (and costs nothing more: a stream of shapes never seen twice is never recorded), the second and third are
// recorded and must agree, and the third's record is replayed once into fresh outputs
// and compared with what Python wrote (replay.py: verify, commit). Only then is the signature replayed. A
// signature whose launches cannot be replayed (a pointer the op does not own, a host read of the device, launch
// attributes, records that differ) stays in Python, as does every signature of an op whose output sizes depend on
// input values (the launches may too), as does a call whose pointers break an alignment the
// compiled code assumes. At most kMaxSignatures are learnt; later ones stay in Python.
//
// No CUDA headers are needed: the few driver entry points are found in libcuda at first use, and the stream is
// torch's current one, through c10's device-generic interface.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

namespace {

constexpr int kRunInPython = 0x4b455650;  // native.cpp's KEVOLVE_RUN_IN_PYTHON
constexpr size_t kMaxSignatures = 256;

enum Kind : int64_t { kValue = 0, kInput = 1, kOutput = 2, kScratch = 3 };

struct Param {
  int64_t kind, index, value, align16;  // value: the bits (kValue) or a byte offset into the tensor
};

struct Launch {
  int64_t function, grid[3], block, shared;
  std::vector<Param> params;
};

struct Record {
  std::vector<int64_t> scratch_bytes;
  std::vector<Launch> launches;
};

enum class Phase { kLearning, kReplay, kPython };

struct Entry {
  Phase phase = Phase::kLearning;
  int calls = 0;  // calls seen while learning
  int recorded = 0;  // records offered so far
  std::vector<int64_t> first;  // the second call's record, as offered
  std::shared_ptr<const Record> record;
};

struct State {
  std::mutex mutex;
  std::map<std::vector<int64_t>, Entry> entries;
};

// the signature this thread's last declined call left to learn (replay.py offers its record for it)
thread_local State* pending_state = nullptr;
thread_local std::vector<int64_t> pending_key;

using CuResult = int;
struct Driver {
  CuResult (*launch)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void*, void**,
                     void**) = nullptr;
  CuResult (*get_current)(void**) = nullptr;
  CuResult (*set_current)(void*) = nullptr;
  CuResult (*device_get)(int*, int) = nullptr;
  CuResult (*primary_retain)(void**, int) = nullptr;
  CuResult (*error_string)(CuResult, const char**) = nullptr;
};

const Driver& driver() {
  static const Driver found = [] {
    Driver d;
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    TORCH_CHECK(cuda != nullptr, "kevolve Triton replay: cannot open libcuda.so.1: ", dlerror());
    auto find = [cuda](auto& slot, const char* name) {
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(cuda, name));
      TORCH_CHECK(slot != nullptr, "kevolve Triton replay: libcuda.so.1 has no ", name);
    };
    find(d.launch, "cuLaunchKernel");
    find(d.get_current, "cuCtxGetCurrent");
    find(d.set_current, "cuCtxSetCurrent");
    find(d.device_get, "cuDeviceGet");
    find(d.primary_retain, "cuDevicePrimaryCtxRetain");
    find(d.error_string, "cuGetErrorString");
    return d;
  }();
  return found;
}

std::string describe(CuResult code) {
  const char* text = nullptr;
  driver().error_string(code, &text);
  return text ? text : "unknown CUDA error";
}

// a thread that has not touched CUDA yet has no current context; Triton's own launcher does the same
void ensure_context(int device) {
  const Driver& d = driver();
  void* context = nullptr;
  d.get_current(&context);
  if (context != nullptr) return;
  int handle = 0;
  CuResult code = d.device_get(&handle, device);
  if (code == 0) code = d.primary_retain(&context, handle);
  if (code == 0) code = d.set_current(context);
  TORCH_CHECK(code == 0, "kevolve Triton replay: no CUDA context for device ", device, ": ", describe(code));
}

bool parse(const int64_t* data, int64_t size, Record* record) {
  int64_t at = 0;
  auto next = [&](int64_t* value) {
    if (at >= size) return false;
    *value = data[at++];
    return true;
  };
  int64_t n_launches = 0, n_scratch = 0;
  if (!next(&n_launches) || !next(&n_scratch)) return false;
  record->scratch_bytes.resize(n_scratch);
  for (auto& bytes : record->scratch_bytes)
    if (!next(&bytes)) return false;
  record->launches.resize(n_launches);
  for (auto& launch : record->launches) {
    int64_t n_params = 0;
    if (!next(&launch.function) || !next(&launch.grid[0]) || !next(&launch.grid[1]) || !next(&launch.grid[2]) ||
        !next(&launch.block) || !next(&launch.shared) || !next(&n_params))
      return false;
    launch.params.resize(n_params);
    for (auto& p : launch.params)
      if (!next(&p.kind) || !next(&p.index) || !next(&p.value) || !next(&p.align16)) return false;
  }
  return at == size;
}

// the launches on these buffers; false (nothing launched) where a pointer breaks an alignment the record assumed
bool aligned(const Record& record, const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs) {
  for (const auto& launch : record.launches)
    for (const auto& p : launch.params) {
      if (!p.align16 || p.kind == kValue || p.kind == kScratch) continue;  // scratch: fresh allocations, aligned
      const auto& bases = p.kind == kInput ? inputs : outputs;
      if ((bases[p.index] + p.value) % 16 != 0) return false;
    }
  return true;
}

void replay(const Record& record, const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
            c10::Device device) {
  ensure_context(device.index());
  void* stream = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device).native_handle();
  std::vector<at::Tensor> scratch;
  std::vector<uintptr_t> scratch_bases;
  for (int64_t bytes : record.scratch_bytes) {
    scratch.push_back(at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device)));
    scratch_bases.push_back(reinterpret_cast<uintptr_t>(scratch.back().data_ptr()));
  }
  std::vector<uint64_t> slots;
  std::vector<void*> params;
  for (const auto& launch : record.launches) {
    if (launch.grid[0] * launch.grid[1] * launch.grid[2] == 0) continue;  // as Triton: an empty grid launches nothing
    slots.assign(launch.params.size() + 2, 0);  // + Triton's global and profile scratch pointers, null here
    params.resize(slots.size());
    for (size_t i = 0; i < launch.params.size(); ++i) {
      const Param& p = launch.params[i];
      switch (p.kind) {
        case kInput: slots[i] = inputs[p.index] + p.value; break;
        case kOutput: slots[i] = outputs[p.index] + p.value; break;
        case kScratch: slots[i] = scratch_bases[p.index] + p.value; break;
        default: slots[i] = static_cast<uint64_t>(p.value);
      }
    }
    for (size_t i = 0; i < slots.size(); ++i) params[i] = &slots[i];
    const CuResult code = driver().launch(
        reinterpret_cast<void*>(launch.function), launch.grid[0], launch.grid[1], launch.grid[2], launch.block, 1, 1,
        launch.shared, stream, params.data(), nullptr);
    TORCH_CHECK(code == 0, "kevolve Triton replay: cuLaunchKernel failed: ", describe(code));
  }
}

// (device, each input's dtype, rank and sizes), then each output's (rank and sizes)
std::vector<int64_t> signature(const at::Tensor* tensors, int64_t count, bool with_dtypes) {
  std::vector<int64_t> key;
  if (with_dtypes) key.push_back(count ? tensors[0].device().index() : -1);
  for (int64_t i = 0; i < count; ++i) {
    if (with_dtypes) key.push_back(static_cast<int64_t>(tensors[i].scalar_type()));
    key.push_back(tensors[i].dim());
    key.insert(key.end(), tensors[i].sizes().begin(), tensors[i].sizes().end());
  }
  return key;
}

std::vector<uintptr_t> bases(const at::Tensor* tensors, int64_t count) {
  std::vector<uintptr_t> found(count);
  for (int64_t i = 0; i < count; ++i) found[i] = reinterpret_cast<uintptr_t>(tensors[i].data_ptr());
  return found;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* kevolve_triton_state() {
  return new State();
}

// native.cpp's launch: replays a learnt signature, or leaves the call to Python (learning it on the way)
extern "C" __attribute__((visibility("default"))) int kevolve_triton_launch(void* state_ptr, const at::Tensor* inputs,
                                                                          int64_t n_inputs, const at::Tensor* outputs,
                                                                          int64_t n_outputs) {
  auto* state = static_cast<State*>(state_ptr);
  pending_state = nullptr;
  if (n_inputs == 0 || !inputs[0].is_cuda()) return kRunInPython;
  auto key = signature(inputs, n_inputs, true);
  const auto out_key = signature(outputs, n_outputs, false);
  key.insert(key.end(), out_key.begin(), out_key.end());
  std::shared_ptr<const Record> record;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    auto found = state->entries.find(key);
    if (found == state->entries.end()) {
      if (state->entries.size() >= kMaxSignatures) return kRunInPython;
      found = state->entries.emplace(key, Entry()).first;
    }
    if (found->second.phase == Phase::kPython) return kRunInPython;
    // a signature's first call compiles and autotunes; one seen once only (a stream of new shapes) costs nothing
    if (found->second.phase == Phase::kLearning && found->second.calls++ == 0) return kRunInPython;
    if (found->second.phase == Phase::kLearning) {
      pending_state = state;
      pending_key = std::move(key);
      return kRunInPython;
    }
    record = found->second.record;
  }
  const auto in = bases(inputs, n_inputs), out = bases(outputs, n_outputs);
  if (!aligned(*record, in, out)) return kRunInPython;
  c10::DeviceGuard guard(inputs[0].device());
  replay(*record, in, out, inputs[0].device());
  return 0;
}

// whether this thread's call is being learnt (replay.py records it only then)
extern "C" __attribute__((visibility("default"))) int kevolve_triton_learning(void* state) {
  return pending_state == static_cast<State*>(state) ? 1 : 0;
}

// replay.py's record of the call being learnt (size -1: it cannot be replayed; -2: this call does not count, e.g.
// it ran under CUDA-graph capture). Returns 1 where it agrees with the one before and should now be verified
// (kevolve_triton_verify, then kevolve_triton_commit), else 0.
extern "C" __attribute__((visibility("default"))) int kevolve_triton_offer(void* state_ptr, const int64_t* data,
                                                                         int64_t size) {
  auto* state = static_cast<State*>(state_ptr);
  if (pending_state != state) return 0;
  if (size == -2) {
    pending_state = nullptr;
    return 0;
  }
  std::lock_guard<std::mutex> lock(state->mutex);
  Entry& entry = state->entries[pending_key];
  Record parsed;
  if (size < 0 || !parse(data, size, &parsed)) {
    entry.phase = Phase::kPython;
    pending_state = nullptr;
    return 0;
  }
  std::vector<int64_t> offered(data, data + size);
  if (++entry.recorded == 1) {
    entry.first = std::move(offered);
    pending_state = nullptr;
    return 0;
  }
  if (offered != entry.first) {
    entry.phase = Phase::kPython;
    pending_state = nullptr;
    return 0;
  }
  entry.record = std::make_shared<const Record>(std::move(parsed));
  return 1;
}

// replays the record under verification onto raw buffers (fresh outputs); 0, or 1 with the reason in `error`
extern "C" __attribute__((visibility("default"))) int kevolve_triton_verify(void* state_ptr, const uint64_t* inputs,
                                                                          int64_t n_inputs, const uint64_t* outputs,
                                                                          int64_t n_outputs, int64_t device,
                                                                          char* error, int error_size) {
  auto* state = static_cast<State*>(state_ptr);
  try {
    TORCH_CHECK(pending_state == state, "no record under verification in this thread");
    std::shared_ptr<const Record> record;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      record = state->entries[pending_key].record;
    }
    const std::vector<uintptr_t> in(inputs, inputs + n_inputs), out(outputs, outputs + n_outputs);
    TORCH_CHECK(aligned(*record, in, out), "the fresh outputs break the record's alignment");
    const c10::Device where(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device));
    c10::DeviceGuard guard(where);
    replay(*record, in, out, where);
    return 0;
  } catch (const std::exception& exc) {
    std::snprintf(error, error_size, "%s", exc.what());
    return 1;
  }
}

// the verdict on the record under verification: replay the signature from now on, or leave it to Python
extern "C" __attribute__((visibility("default"))) void kevolve_triton_commit(void* state_ptr, int replays) {
  auto* state = static_cast<State*>(state_ptr);
  if (pending_state != state) return;
  std::lock_guard<std::mutex> lock(state->mutex);
  Entry& entry = state->entries[pending_key];
  entry.phase = replays ? Phase::kReplay : Phase::kPython;
  if (!replays) entry.record.reset();
  pending_state = nullptr;
}

// how many signatures are replayed, learning, and left to Python (for the op's description and benchmarks)
extern "C" __attribute__((visibility("default"))) void kevolve_triton_counts(void* state_ptr, int64_t* counts) {
  auto* state = static_cast<State*>(state_ptr);
  std::lock_guard<std::mutex> lock(state->mutex);
  counts[0] = counts[1] = counts[2] = 0;
  for (const auto& [key, entry] : state->entries)
    ++counts[entry.phase == Phase::kReplay ? 0 : entry.phase == Phase::kLearning ? 1 : 2];
}
