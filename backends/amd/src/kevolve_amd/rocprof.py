"""rocprofv3 adapter: hardware counters on a ROCm GPU. Not driven yet; it says so, and why, and the backend
falls back to the roofline profiler (time against the roofline plus the compiler's resource counts)."""

from __future__ import annotations

import shutil

from kevolve import diagnosis as d
from kevolve.backend.profiler import Profiler, ProfileRequest


class RocprofProfiler(Profiler):
    name = "rocprofv3"

    def available(self) -> tuple[bool, str]:
        found = shutil.which("rocprofv3")
        if found is None:
            return False, ("rocprofv3 is not on PATH (it ships with ROCm's rocprofiler-sdk): diagnoses come from "
                           "the roofline and the compiler's resource counts")
        return False, (f"rocprofv3 is at {found}, but kevolve-amd does not drive it yet: diagnoses come from the "
                       "roofline and the compiler's resource counts")

    def profile(self, request: ProfileRequest) -> d.Metrics:
        raise NotImplementedError(self.available()[1])
