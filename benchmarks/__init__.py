"""Benchmark scripts; each prints a report and saves it under ``benchmarks/results/``."""
