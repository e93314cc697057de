import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise terms that each feed one reduction: a weighted squared error averaged per row; a bfloat16 sum
    of absolute differences per row (its terms rounded to bfloat16 before the sum, as eager stores them); a
    weighted total over every element, whose broadcast weight cannot be viewed as the reduction's one row."""

    def forward(self, pred, target, weight):
        squared = ((pred - target) ** 2 * weight).mean(dim=-1)
        rows = (pred.bfloat16() - target.bfloat16()).abs().sum(dim=-1)
        total = (pred * weight).sum()
        return squared, rows, total


def get_inputs():
    return [torch.randn(24, 70), torch.randn(24, 70), torch.rand(70)]


def get_init_inputs():
    return []
