"""Binary cross-entropy on logits against soft targets in [0, 1]."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'FEATURES': 128}


class Model(nn.Module):
    def forward(self, pred, target):
        return F.binary_cross_entropy_with_logits(pred, target)


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.rand(BATCH, FEATURES)]


def get_init_inputs():
    return []
