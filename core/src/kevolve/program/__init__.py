"""Any PyTorch program, built from the backends' ATen kernels: capture it with ``torch.export``, lower every ATen
node onto the conformance table's kernels, fuse pointwise chains, and assemble one kernel file per candidate.

Modules, one job each: :mod:`~kevolve.program.capture` (module or file to an ATen graph),
:mod:`~kevolve.program.decompositions` (overloads rewritten into covered ones),
:mod:`~kevolve.program.overloads` (ATen overload to the conformance table's entry), :mod:`~kevolve.program.lower`
(the graph to kernels and buffers), :mod:`~kevolve.program.fuse` (which pointwise edges fuse),
:mod:`~kevolve.program.recipe` (the template synthesizer's recipe over all of it). Writing the one kernel file is
the language's: each toolchain's :class:`~kevolve.backend.LanguageForm` carries its ``assemble_program``.
"""
