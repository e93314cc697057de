# Cheat: a "numba" kernel that calls back into PyTorch.
import torch


def kernel(x, y):
    y[:] = torch.softmax(torch.from_numpy(x), dim=-1).numpy()
