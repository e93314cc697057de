"""KL divergence between log-probabilities and probabilities, batchmean reduction."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 4096
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'FEATURES': 128}


class Model(nn.Module):
    def forward(self, pred, target):
        return F.kl_div(F.log_softmax(pred, dim=1), target, reduction="batchmean")


def get_inputs():
    return [torch.randn(BATCH, FEATURES), torch.softmax(torch.randn(BATCH, FEATURES), dim=1)]


def get_init_inputs():
    return []
