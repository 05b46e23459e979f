"""Backends: where the sentence part's batches are computed (``--device cpu`` or ``cuda``).

The trainer owns the loop (epochs, shuffles, batches, NaN check, progress, hooks) and makes the backend
of the device (``trainer.SentencePhase``); a backend (``cpu.CpuBackend``, ``cuda.CudaBackend``) owns the
matrix while the run lasts and the device's kernels, and has ``batch`` (the examples per call it prefers;
None: the trainer's), ``begin_epoch(order)`` (the epoch's shuffled targets, int64 sentence indices),
``run(lo, hi, done)`` (trains targets ``order[lo:hi]``, the run's examples ``done`` onwards: ``(loss sum,
examples)``), ``vectors()`` (the current float32 matrix on the host; a copy on a GPU) and ``close()`` (the
final matrix on the host; frees what the backend holds). ``params.py`` turns a config into kernel
parameters. Layers, each importing only those below it::

    session, checkpoint, curve        wrap or watch a run
    trainer                           the loop
    backends (cpu, cuda, params)      a run's device and kernel parameters
    kernels (sampling, cpu, cuda)     numba code: arrays and scalars in
"""
