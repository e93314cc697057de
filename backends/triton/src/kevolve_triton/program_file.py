"""One Python kernel file (Triton) for a lowered program: each step's file as the target's recipe wrote it, its
top-level names suffixed with the step's number so that the steps share one module, and one launcher
``kernel(inputs, outputs, buffers)`` that views the caller's tensors and the harness's buffers (``as_strided``:
no torch in the launcher) and calls each step's own launcher in order.

Scratch and constants follow the Python kernel files' contract extension (docs/guide/kernel-files.md):
``scratch(inputs, outputs)`` lists the buffers the harness allocates, one per intermediate and per constant.
"""

from __future__ import annotations

import ast

from kevolve.program.lower import CONST, INPUT, OUTPUT, Program, View


class _Rename(ast.NodeTransformer):
    """Every use of a top-level name, except where a function's parameter of that name shadows it."""

    def __init__(self, names: set[str], suffix: str) -> None:
        self.names, self.suffix, self.shadowed = names, suffix, [set()]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        if node.name in self.names and len(self.shadowed) == 1:
            node.name += self.suffix
        params = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
        params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        self.shadowed.append(self.shadowed[-1] | params)
        node.body = [self.visit(statement) for statement in node.body]
        self.shadowed.pop()
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names and node.id not in self.shadowed[-1]:
            node.id += self.suffix
        return node


def _step_module(source: str, index: int) -> tuple[list[str], str]:
    """(the import lines, the rest with its top-level names suffixed ``_s<index>``)."""
    tree = ast.parse(source)
    imports, body = [], []
    for statement in tree.body:
        (imports if isinstance(statement, (ast.Import, ast.ImportFrom)) else body).append(statement)
    names = set()
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    renamer = _Rename(names, f"_s{index}")
    module = ast.Module([renamer.visit(s) for s in body], type_ignores=[])
    return [ast.unparse(i) for i in imports], ast.unparse(module)


def _tensor(view: View, program: Program, slots: dict[str, int]) -> str:
    buffer = program.buffers[view.buffer]
    if buffer.kind in (INPUT, OUTPUT):
        base = f"{buffer.kind}s[{buffer.index}]"
    else:
        base = f"buffers[{slots[view.buffer]}]"
    return f"{base}.as_strided({tuple(view.shape)!r}, {tuple(view.strides)!r}, {view.offset})"


def assemble(program: Program, sources: list[str]) -> str:
    """The kernel file: ``sources[i]`` is the file a recipe wrote for ``program.steps[i]``."""
    imports: list[str] = []
    parts = []
    for i, source in enumerate(sources):
        found, body = _step_module(source, i)
        imports += [line for line in found if line not in imports]
        parts.append(f"# --- step {i}: {program.steps[i].name}: {program.steps[i].kernel.describe()}\n{body}")
    slots: dict[str, int] = {}
    requests = []
    for name, buffer in program.buffers.items():
        if buffer.kind == CONST:
            slots[name] = len(requests)
            requests.append(f"({buffer.dtype!r}, {list(buffer.values)!r})")
        elif buffer.kind not in (INPUT, OUTPUT):
            slots[name] = len(requests)
            requests.append(f"({buffer.dtype!r}, {buffer.numel})")
    checks = [f"    if len(inputs) != {len(program.inputs)} or len(outputs) != {len(program.outputs)}:",
              '        raise RuntimeError("declined: wrong number of tensors")']
    for kind, specs in (("inputs", program.inputs), ("outputs", program.outputs)):
        for i, (shape, _) in enumerate(specs):
            checks += [f"    if tuple({kind}[{i}].shape) != {tuple(shape)!r} or not {kind}[{i}].is_contiguous():",
                       '        raise RuntimeError("declined: shape or layout it was not written for")']
    calls = []
    for i, step in enumerate(program.steps):
        ins = ", ".join(_tensor(v, program, slots) for v in step.inputs)
        outs = ", ".join(_tensor(v, program, slots) for v in step.outputs)
        calls.append(f"    kernel_s{i}([{ins}], [{outs}])  # {step.name}")
    header = [f"# kevolve lowered program: {program.name}, {len(program.steps)} kernels",
              *(f"#   {line}" for line in program.describe().splitlines()[1:])]
    return "\n".join([
        *header, *imports, "", "", "\n\n\n".join(parts), "", "",
        "def scratch(inputs, outputs):",
        '    """The buffers the harness allocates: intermediates (dtype, elements) and constants (dtype, values)."""',
        f"    return [{', '.join(requests)}]",
        "", "",
        "def kernel(inputs, outputs, buffers):",
        *checks, *calls, "",
    ])
