"""Delivery: a kernel as a PyTorch operator (``runtime``: the per-call path; ``shapes``: its shape function;
``op``: the op in this process; ``package``: the saved package; ``load``: the op back from either)."""
