import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        a = torch.log_softmax(x, dim=1)
        b = torch.cumsum(y, dim=-1)
        return torch.cat([a, b * 0.5], dim=0)


def get_inputs():
    return [torch.randn(5, 9), torch.randn(3, 9)]


def get_init_inputs():
    return []
