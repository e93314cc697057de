"""What a compiled C++ kernel may link and export: an allowlist read from the library's dynamic symbols.

A word list in the source is always one spelling short (``dlvsym`` for ``dlsym``, a symbol built at run time);
the linker's view is not. A kernel computes with libm, the OpenMP runtime, memory allocation and copying, the
C++ runtime's few helpers for containers and exceptions, and the compiler's arithmetic helpers; anything else it
links (a BLAS, libtorch, the Python C API, symbol lookup, process creation, threads, clocks, files) does
work for it or reaches outside the harness. It exports ``kevolve_kernel`` (and ``kevolve_scratch_bytes`` when it
asks the harness for scratch memory) and nothing else of its own: a library
that defines ``clock_gettime`` or ``memcpy`` would stand in for the C library.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

_MATH = ("exp|exp2|expm1|exp10|log|log2|log10|log1p|pow|sqrt|cbrt|sin|cos|tan|asin|acos|atan|atan2|sinh|cosh|tanh|"
         "asinh|acosh|atanh|erf|erfc|lgamma|tgamma|fabs|floor|ceil|round|lround|llround|rint|lrint|llrint|"
         "nearbyint|trunc|fmod|remainder|remquo|fmin|fmax|fdim|fma|hypot|copysign|nextafter|ldexp|frexp|modf|"
         "sincos|scalbn|scalbln|ilogb|logb|nan")

#: undefined symbols a kernel may link
ALLOWED = re.compile("|".join([
    rf"^(__)?({_MATH})[fl]?(_finite)?$",                  # libm
    r"^(omp_|GOMP_|__kmpc_)",                            # the OpenMP runtime
    r"^(memcpy|memmove|memset|memcmp|malloc|calloc|realloc|free|posix_memalign|aligned_alloc|abort)$",
    r"^(__stack_chk_fail|__assert_fail|__errno_location|__tls_get_addr|__cxa_finalize|__gmon_start__)$",
    r"^_ITM_(de)?registerTMCloneTable$",                 # weak references every shared library carries
    r"^(__cxa_\w+|_Unwind_\w+|__gxx_personality_v0)$",   # C++ exceptions and static guards
    r"^_Z(nw|na|dl|da)\w*$",                              # operator new / delete
    r"^_ZSt\d+__throw_\w+$|^_ZSt9terminatev$|^_ZSt7nothrow$",  # what std containers call when they fail
    r"^_ZT[IVS]\w*$",                                     # type information and vtables
    r"^__(u)?(div|mod|mul)[td]i3$|^__mulo[dt]i4$",        # compiler arithmetic helpers (128-bit division)
]))

#: the only symbol a kernel library defines for others to call
ENTRY = "kevolve_kernel"
#: and the optional one that asks the harness for scratch memory (kevolve_kernel.h)
SCRATCH_ENTRY = "kevolve_scratch_bytes"


def outside_contract(library: Path) -> list[str]:
    """What the library links or exports outside the contract, each as "links NAME" or "defines NAME"; empty
    when nothing (or when ``nm`` is not installed, in which case nothing can be read)."""
    nm = shutil.which("nm")
    if nm is None:
        return []
    found = []
    for flag, verb in (("--undefined-only", "links"), ("--defined-only", "defines")):
        out = subprocess.run([nm, "-D", flag, str(library)], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if not parts:
                continue
            name, kind = parts[-1].split("@")[0], parts[-2] if len(parts) > 1 else "U"
            if verb == "links" and not ALLOWED.match(name):
                found.append(f"links {name}")
            elif verb == "defines" and name not in (ENTRY, SCRATCH_ENTRY) and not (
                    kind in "WVuv" and name.startswith("_Z")):
                found.append(f"defines {name}")
    return sorted(set(found))
