"""kevolve-amd: AMD Instinct GPU targets (amd_mi300, amd_mi325, amd_mi350, amd_mi250) on the shared Triton layer."""
