"""kevolve-nvidia: NVIDIA GPU targets (nvidia_h100, nvidia_h200, nvidia_a100) on the shared Triton layer."""
