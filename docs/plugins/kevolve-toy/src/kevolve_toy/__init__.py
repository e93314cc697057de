"""kevolve-toy: a tutorial backend whose kernels are NumPy files run on the host CPU."""
