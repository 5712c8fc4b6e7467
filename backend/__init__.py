"""The real thing: operators, fused kernels, data; torch and numba live only here."""
