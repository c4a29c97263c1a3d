"""The GPU path: CUDA arrays (CuPy, PyTorch, anything with ``__cuda_array_interface__``
or a CUDA ``__dlpack_device__``) as data, and the CUDA kernels behind their sums.

Importing this package imports neither CuPy nor PyTorch; CuPy (the ``gpu`` extra,
``pip install "nystrom-kme[gpu]"``) is imported on the first GPU computation. The
public entry points are the usual ones: ``NystromKME.fit``, ``score``, the
evaluation of a fitted embedding, ``mmd2``, ``mmd2_exact`` and ``two_sample_test``
accept CUDA arrays (:func:`nystrom_kme.sources.as_source` wraps them in a
:class:`~nystrom_kme.sources.CudaSource`).

Modules, one job each:

* :mod:`~nystrom_kme.cuda.arrays`: detection and zero-copy conversion of CUDA arrays;
* :mod:`~nystrom_kme.cuda.program`: the CUDA source (the C++ headers
  ``nystrom_kme/cuda/*.cuh``), kernel codes, template names, modules, launch plans and
  which kernel sums what; pure Python;
* :mod:`~nystrom_kme.cuda.sums`: NVRTC compilation through ``cupy.RawModule``, the
  launches and cuBLAS: K(A, B) W, K(A, B) 1, 1^T K 1, the kernel matrix, the binned
  sums, and the permutation labels (``DeviceSplits``).
"""

from __future__ import annotations

from .arrays import cupy_available, is_cuda_array

__all__ = ["cupy_available", "is_cuda_array"]
