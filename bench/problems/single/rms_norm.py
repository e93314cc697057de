"""RMSNorm (nn.RMSNorm) over the hidden size, as in Llama-style decoders."""

import torch
import torch.nn as nn

BATCH = 8
SEQ = 2048
HIDDEN = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 2, 'SEQ': 16, 'HIDDEN': 64}


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.RMSNorm(features, eps=1e-6)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
