"""A small transformer block, as a team would write it: RMSNorm, causal multi-head attention, RMSNorm, and an MLP
with SiLU gating (SwiGLU), with residuals. KernelBench format, so that

    kevolve optimize-model examples/transformer_block.py --target cpu --budget 4

optimizes its hot regions (the norms and the gated MLP's elementwise work fuse; the attention and the matmuls
are left to PyTorch where its own kernels are faster)."""

import torch
import torch.nn.functional as F

BATCH, SEQ, DIM, HEADS, HIDDEN = 4, 128, 256, 4, 704


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Attention(torch.nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim, bias=False)
        self.out = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class GatedMLP(torch.nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate = torch.nn.Linear(dim, hidden, bias=False)
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Model(torch.nn.Module):
    def __init__(self, dim: int = DIM, heads: int = HEADS, hidden: int = HIDDEN):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, heads)
        self.mlp_norm = RMSNorm(dim)
        self.mlp = GatedMLP(dim, hidden)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.mlp(self.mlp_norm(h))


def get_inputs():
    return [torch.randn(BATCH, SEQ, DIM)]


def get_init_inputs():
    return []
