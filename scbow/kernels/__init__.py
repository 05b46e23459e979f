"""Compiled kernels. Importing any module here imports numba."""
