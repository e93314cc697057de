"""Importable PyTorch functions used as problems in tests."""

import torch


def twice_tanh(x):
    return 2.0 * torch.tanh(x)
