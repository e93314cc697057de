"""One C++ kernel file for a lowered program: each step's kernel (as the target's recipe wrote it) in a namespace
of its own, and one ``kevolve_kernel`` launcher that builds each step's tensors as views of the caller's inputs,
outputs, scratch and constants, and calls the steps in order.

Scratch follows the C++ kernel file contract's extension (docs/guide/kernel-files.md): the file exports
``kevolve_scratch_bytes``, and the harness passes a buffer of that many bytes as ``out[n_out]``.
"""

from __future__ import annotations

import re

from kevolve.program.lower import CONST, INPUT, OUTPUT, Program, View

KV_DTYPE = {"float32": "KV_FLOAT32", "float64": "KV_FLOAT64", "bfloat16": "KV_BFLOAT16", "float16": "KV_FLOAT16",
            "int64": "KV_INT64", "int32": "KV_INT32", "bool": "KV_BOOL"}
C_STORAGE = {"float32": "float", "float64": "double", "bfloat16": "uint16_t", "float16": "uint16_t",
             "int64": "int64_t", "int32": "int32_t", "bool": "bool"}
#: the return code of a step that declined, offset so the caller can tell which step it was
STEP_CODE = 100


def _namespaced(source: str, namespace: str) -> tuple[list[str], str]:
    """(the #include lines, the rest wrapped in ``namespace``) with the kernel's entry point made internal."""
    includes, body = [], []
    for line in source.splitlines():
        (includes if line.startswith("#include") else body).append(line)
    text = "\n".join(body)
    text, count = re.subn(r"KV_EXPORT\s+int\s+kevolve_kernel\s*\(", "int kevolve_kernel(", text)
    if count != 1:
        raise ValueError(f"a step's kernel does not define kevolve_kernel once ({count} times)")
    macros = re.findall(r"^#define\s+(\w+)", text, flags=re.M)
    undef = "".join(f"#undef {m}\n" for m in macros)
    return includes, f"namespace {namespace} {{\n{text}\n}}  // namespace {namespace}\n{undef}"


def _tensor(view: View, program: Program) -> str:
    buffer = program.buffers[view.buffer]
    storage = C_STORAGE[view.dtype]
    base = {INPUT: f"in[{buffer.index}].data", OUTPUT: f"out[{buffer.index}].data",
            CONST: f"(void*){view.buffer}"}.get(buffer.kind, f"scratch + {buffer.index}")
    shape = ", ".join(map(str, view.shape)) or "0"
    strides = ", ".join(map(str, view.strides)) or "0"
    return (f"kv_view((char*)({base}), {view.offset} * (int64_t)sizeof({storage}), {len(view.shape)}, "
            f"(const int64_t[]){{{shape}}}, (const int64_t[]){{{strides}}}, {KV_DTYPE[view.dtype]})")


def assemble(program: Program, sources: list[str]) -> str:
    """The kernel file: ``sources[i]`` is the C++ a recipe wrote for ``program.steps[i]``."""
    includes: list[str] = ['#include "kevolve_kernel.h"', "#include <cstdint>"]
    parts = []
    for i, source in enumerate(sources):
        found, body = _namespaced(source, f"kv_step{i}")
        includes += [line for line in found if line not in includes]
        parts.append(body)
    consts = []
    for name, buffer in program.buffers.items():
        if buffer.kind == CONST:
            values = ", ".join(repr(float(v)) if buffer.dtype.startswith("float") else str(int(v))
                               for v in buffer.values) or "0"
            consts.append(f"static {C_STORAGE[buffer.dtype]} {name}[] = {{{values}}};")
    checks = [f"    if (n_in != {len(program.inputs)} || n_out != {len(program.outputs)}) return 1;"]
    for kind, specs in (("in", program.inputs), ("out", program.outputs)):
        for i, (shape, dtype) in enumerate(specs):
            dims = " || ".join(f"{kind}[{i}].shape[{d}] != {s}" for d, s in enumerate(shape))
            checks.append(f"    if ({kind}[{i}].ndim != {len(shape)}{' || ' + dims if dims else ''}) return 2;")
            checks.append(f"    if ({kind}[{i}].dtype != {KV_DTYPE[dtype]}) return 3;")
    calls = []
    for i, step in enumerate(program.steps):
        ins = ", ".join(_tensor(v, program) for v in step.inputs)
        outs = ", ".join(_tensor(v, program) for v in step.outputs)
        calls.append(f"""    {{  // {step.name}: {step.kernel.op}, layout {step.kernel.layout}
        const kv_tensor a[] = {{{ins}}};
        kv_tensor b[] = {{{outs}}};
        const int rc = kv_step{i}::kevolve_kernel(a, {len(step.inputs)}, b, {len(step.outputs)});
        if (rc != 0) return {STEP_CODE} * ({i} + 1) + rc;
    }}""")
    scratch = "    char* scratch = (char*)out[n_out].data;\n" if program.scratch_bytes else ""
    return "\n".join([
        f"// kevolve lowered program: {program.name}, {len(program.steps)} kernels",
        *(f"//   {line}" for line in program.describe().splitlines()[1:]),
        *includes, "", *parts, *consts, "",
        "static inline kv_tensor kv_view(char* base, int64_t byte_offset, int64_t ndim, const int64_t* shape,",
        "                                const int64_t* strides, int32_t dtype) {",
        "    kv_tensor t;",
        "    t.data = base + byte_offset;",
        "    t.ndim = ndim;",
        "    for (int64_t d = 0; d < 8; ++d) {",
        "        t.shape[d] = d < ndim ? shape[d] : 1;",
        "        t.strides[d] = d < ndim ? strides[d] : 0;",
        "    }",
        "    t.dtype = dtype;",
        "    return t;",
        "}",
        "",
        *([] if not program.scratch_bytes else [
            "KV_EXPORT int64_t kevolve_scratch_bytes(const kv_tensor* in, int64_t n_in, const kv_tensor* out, "
            "int64_t n_out) {",
            f"    return {program.scratch_bytes};",
            "}",
            ""]),
        "KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {",
        *checks,
        scratch + "\n".join(calls),
        "    return 0;",
        "}",
        "",
    ])
