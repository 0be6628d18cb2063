"""numba kernels: pure functions on arrays, each with a NumPy reference used by the tests.

Nothing here imports from the rest of the package.
"""
