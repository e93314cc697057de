"""Row-wise L2 normalisation with F.normalize, as before a cosine-similarity head."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
FEATURES = 1024
# the same problem at CPU-test sizes: bench/programs.py --small runs globals().update(SMALL)
SMALL = {'BATCH': 64, 'FEATURES': 96}


class Model(nn.Module):
    def forward(self, x):
        return F.normalize(x, p=2.0, dim=1)


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
