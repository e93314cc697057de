// The Python entry of a kevolve kernel op: a C function that calls torch.ops.kevolve.NAME through the dispatcher
// without the Python layers an OpOverload call goes through (its __call__ frame, then the JIT's conversion of the
// Python arguments by the schema): 1.6 us of a call on a lent H100's host, 0.7 us on a 2-core CPU VM, as much as
// some whole eager ops. runtime.fast_calls installs it as the op's __call__; built by
// runtime.build_torch_library(python=True).
//
// kevolve_entry(qualname, n_inputs, n_outputs, fallback) returns a new builtin function. A call with n_inputs
// positional tensors of exactly torch.Tensor, and no __torch_function__ mode active, is the op's boxed call
// through the dispatcher (autograd's refusal, dispatch modes and every other key included); any other call (a
// tensor subclass such as a fake tensor, a mode, keywords, a wrong count) goes to `fallback`, the OpOverload's
// own callable, which handles it as PyTorch does.
#include <Python.h>

#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>

namespace {

struct Entry {
  c10::OperatorHandle op;
  Py_ssize_t n_inputs;
  Py_ssize_t n_outputs;
  PyObject* fallback;
  PyMethodDef method;
};

PyObject* call(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  HANDLE_TH_ERRORS
  auto* entry = static_cast<Entry*>(PyCapsule_GetPointer(self, nullptr));
  if (entry == nullptr) return nullptr;
  bool plain = nargs == entry->n_inputs && kwnames == nullptr && !at::impl::torch_function_mode_enabled();
  for (Py_ssize_t i = 0; plain && i < nargs; ++i) plain = THPVariable_CheckExact(args[i]);
  if (!plain) return PyObject_Vectorcall(entry->fallback, args, nargs, kwnames);
  torch::jit::Stack stack;
  stack.reserve(nargs);
  for (Py_ssize_t i = 0; i < nargs; ++i) stack.emplace_back(THPVariable_Unpack(args[i]));
  {
    pybind11::gil_scoped_release released;  // as an OpOverload call does: the kernel may run long
    entry->op.callBoxed(stack);
  }
  if (entry->n_outputs == 1) return THPVariable_Wrap(stack.back().toTensor());
  PyObject* outputs = PyTuple_New(entry->n_outputs);
  if (outputs == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < entry->n_outputs; ++i) {
    PyObject* output = THPVariable_Wrap(stack[stack.size() - entry->n_outputs + i].toTensor());
    if (output == nullptr) {
      Py_DECREF(outputs);
      return nullptr;
    }
    PyTuple_SET_ITEM(outputs, i, output);
  }
  return outputs;
  END_HANDLE_TH_ERRORS
}

}  // namespace

// Entries live as long as the process, as the op's registration does: the capsule is never freed.
extern "C" __attribute__((visibility("default"))) PyObject* kevolve_entry(const char* qualname, Py_ssize_t n_inputs,
                                                                        Py_ssize_t n_outputs, PyObject* fallback) {
  HANDLE_TH_ERRORS
  auto* entry = new Entry{c10::Dispatcher::singleton().findSchemaOrThrow(qualname, ""), n_inputs, n_outputs,
                          fallback, {}};
  Py_INCREF(fallback);
  entry->method = {"kevolve_entry_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call)),
                   METH_FASTCALL | METH_KEYWORDS, nullptr};
  PyObject* capsule = PyCapsule_New(entry, nullptr, nullptr);
  if (capsule == nullptr) return nullptr;
  PyObject* function = PyCFunction_New(&entry->method, capsule);
  Py_DECREF(capsule);
  return function;
  END_HANDLE_TH_ERRORS
}
