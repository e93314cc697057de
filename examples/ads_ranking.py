"""An ads ranking model of the usual shape, in plain PyTorch (KernelBench format: Model, get_inputs,
get_init_inputs), for ``kevolve optimize-model examples/ads_ranking.py --target cpu``.

- 26 sparse features per sample, each a jagged list of raw ids (``lengths`` ids per feature and sample, about
  20 on average), flattened feature-major as production feature stores hand them over (values + lengths);
- each id hashed into its feature's table by a keyed hash (a per-feature salt), all features' tables stacked
  into one (as fused table-batched embedding bags do), and sum-pooled per (feature, sample);
- a dense bottom MLP over 13 dense features; DLRM's pairwise dot interaction of the 27 vectors;
- a user-history branch: the sample's jagged history of item ids, truncated to its last 64 events, embedded,
  and attended by the candidate item (target attention, masked where the history is shorter);
- a top MLP to one logit.

Sizes: ``BATCH`` 2048, ``ROWS`` rows per feature table (200k in production; set smaller for a quick run),
``DIM`` 64, float32 (``DTYPE``). Where the time goes on each target is in ``bench/results/<target>/models.md``.
"""

import torch
import torch.nn.functional as F

BATCH, FEATURES, POOL, ROWS, DIM, DENSE = 2048, 26, 20, 200_000, 64, 13
HISTORY_MAX, HISTORY_KEEP, HISTORY_ROWS = 128, 64, 100_000
DTYPE = torch.float32


class KeyedHash(torch.nn.Module):
    """Raw ids to rows of the stacked table: feature f's ids land in rows [f * rows, (f + 1) * rows)."""

    def __init__(self, features: int, rows: int):
        super().__init__()
        self.features, self.rows = features, rows
        self.register_buffer("salt", (torch.arange(features, dtype=torch.int64) * 0x9E3779B1 + 0x7F4A7C15))

    def forward(self, values, lengths):
        batch = lengths.numel() // self.features
        feature = torch.arange(self.features, device=values.device).repeat_interleave(batch)
        per_id = torch.repeat_interleave(feature, lengths, output_size=values.numel())
        mixed = (values ^ self.salt[per_id]) * 1000003
        return torch.remainder(mixed, self.rows) + per_id * self.rows


class PooledEmbeddings(torch.nn.Module):
    """Sum pooling of every (feature, sample) bag from the stacked tables: (batch, features, dim)."""

    def __init__(self, features: int, rows: int, dim: int):
        super().__init__()
        self.features = features
        self.weight = torch.nn.Parameter(torch.randn(features * rows, dim, dtype=DTYPE) * 0.01)

    def forward(self, rows, lengths):
        offsets = torch.cumsum(lengths, 0) - lengths
        pooled = F.embedding_bag(rows, self.weight, offsets, mode="sum")
        return pooled.view(self.features, -1, pooled.shape[-1]).transpose(0, 1)


class DotInteraction(torch.nn.Module):
    """DLRM: the dense vector beside the pooled ones, every pair's dot product (upper triangle) after it."""

    def forward(self, dense, sparse):
        vectors = torch.cat([dense.unsqueeze(1), sparse], dim=1)
        dots = torch.bmm(vectors, vectors.transpose(1, 2))
        i, j = torch.triu_indices(vectors.shape[1], vectors.shape[1], offset=1, device=dense.device)
        return torch.cat([dense, dots[:, i, j]], dim=1)


class HistoryAttention(torch.nn.Module):
    """The last ``keep`` events of each sample's jagged history, embedded and attended by the candidate item."""

    def __init__(self, rows: int, dim: int, keep: int):
        super().__init__()
        self.keep = keep
        self.table = torch.nn.Parameter(torch.randn(rows, dim, dtype=DTYPE) * 0.01)
        self.query = torch.nn.Linear(dim, dim)

    def forward(self, item, history, lengths):
        offsets = torch.cumsum(lengths, 0) - lengths
        kept = torch.clamp(lengths, max=self.keep)
        position = torch.arange(self.keep, device=history.device)
        valid = position.unsqueeze(0) < kept.unsqueeze(1)
        source = (offsets + lengths - kept).unsqueeze(1) + position.unsqueeze(0)
        source = torch.clamp(source, max=max(history.numel() - 1, 0))
        events = F.embedding(torch.where(valid, history[source], 0), self.table)
        scores = torch.einsum("bd,bkd->bk", self.query(item), events) / events.shape[-1] ** 0.5
        weights = torch.softmax(scores.masked_fill(~valid, float("-inf")), dim=1).nan_to_num(0.0)
        return torch.einsum("bk,bkd->bd", weights, events)


class Model(torch.nn.Module):
    def __init__(self, features: int | None = None, rows: int | None = None, dim: int | None = None):
        super().__init__()
        # the module's constants as they are now (a benchmark may have changed them after import)
        features, rows, dim = features or FEATURES, rows or ROWS, dim or DIM
        self.hash = KeyedHash(features, rows)
        self.embeddings = PooledEmbeddings(features, rows, dim)
        self.bottom = torch.nn.Sequential(torch.nn.Linear(DENSE, 256), torch.nn.ReLU(), torch.nn.Linear(256, dim),
                                          torch.nn.ReLU())
        self.interaction = DotInteraction()
        self.history = HistoryAttention(HISTORY_ROWS, dim, HISTORY_KEEP)
        pairs = (features + 1) * features // 2
        self.top = torch.nn.Sequential(torch.nn.Linear(dim + pairs + dim, 512), torch.nn.ReLU(),
                                       torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1))

    def forward(self, dense, values, lengths, history, history_lengths):
        sparse = self.embeddings(self.hash(values, lengths), lengths)
        dense = self.bottom(dense)
        interacted = self.interaction(dense, sparse)
        attended = self.history(sparse[:, 0], history, history_lengths)
        return torch.sigmoid(self.top(torch.cat([interacted, attended], dim=1)))


def get_inputs():
    lengths = torch.randint(1, 2 * POOL, (FEATURES * BATCH,))
    values = torch.randint(0, 1 << 40, (int(lengths.sum()),))
    history_lengths = torch.randint(0, HISTORY_MAX + 1, (BATCH,))
    history = torch.randint(0, HISTORY_ROWS, (int(history_lengths.sum()),))
    return [torch.randn(BATCH, DENSE, dtype=DTYPE), values, lengths, history, history_lengths]


def get_init_inputs():
    return []
