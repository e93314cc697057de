"""A synthesizer proposing one C++ kernel (one pass, one thread) for ``((x * 2 + 1) * 3 - 4) / 5`` applied three
times that is right on the harness's drawn inputs (random normal floats) but wrong wherever two neighbouring inputs are
exactly 0, as half of them are after a ReLU inside a model. (One exact 0 does turn up in a few million normal draws of
float32; two side by side do not.)"""

from __future__ import annotations

from kevolve.hookspecs import hookimpl
from kevolve.synthesis.base import Candidate, Context, Synthesizer

SOURCE = """
#include "kevolve_kernel.h"
KV_EXPORT int kevolve_kernel(const kv_tensor* in, int64_t n_in, kv_tensor* out, int64_t n_out) {
    const float* x = (const float*)in[0].data;
    float* y = (float*)out[0].data;
    const int64_t n = kv_numel(&out[0]);
    for (int64_t i = 0; i < n; ++i) {
        float v = x[i];
        const bool zeros = v == 0.0f && i + 1 < n && x[i + 1] == 0.0f;
        for (int k = 0; k < 3; ++k) v = ((v * 2.0f + 1.0f) * 3.0f - 4.0f) / 5.0f;
        y[i] = zeros ? 7.0f : v;
    }
    return 0;
}
"""


class WrongOnZeros(Synthesizer):
    name = "wrong_on_zeros"

    def propose(self, context: Context) -> list[Candidate]:
        return [Candidate(SOURCE, "cpp", {"file": "wrong_on_zeros"}, recipe="wrong_on_zeros", synthesizer=self.name)]


@hookimpl
def kevolve_register_synthesizers(registry):
    registry.add("wrong_on_zeros", lambda option: WrongOnZeros())
