import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.linear = nn.Linear(d_in, d_out)
        self.norm = nn.LayerNorm(d_out)

    def forward(self, x):
        return self.norm(F.gelu(self.linear(x)))


def get_inputs():
    return [torch.randn(24, 48)]


def get_init_inputs():
    return [48, 40]
