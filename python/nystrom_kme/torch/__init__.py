"""PyTorch losses against frozen kernel mean embeddings (the optional ``[torch]`` extra).

:class:`MMDLoss` is the squared MMD between a batch and a reference embedding fitted
once on a data set of any size (a :class:`~nystrom_kme.NystromKME`), differentiable in
the batch: the forward pass computes the loss and its gradient together, through the
compiled core for CPU tensors and blocked matrix products for CUDA tensors, as one
``torch.library`` custom operator (``nystrom_kme::mmd_to_embedding``, so
``torch.compile`` keeps it as one node). Importing :mod:`nystrom_kme` does not import
torch; importing this module does.

Examples
--------
>>> import numpy as np, torch, nystrom_kme as nk
>>> from nystrom_kme.torch import MMDLoss
>>> X = np.random.default_rng(0).normal(size=(2_000, 3))
>>> loss_fn = MMDLoss(X, nk.Gaussian(1.5), n_landmarks=100, random_state=0)
>>> y = torch.randn(32, 3, dtype=torch.float64, requires_grad=True)
>>> loss_fn(y).backward()
>>> y.grad.shape
torch.Size([32, 3])
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401  the extra's dependency, checked once here
except ImportError as error:  # pragma: no cover - exercised without torch
    raise ImportError(
        "nystrom_kme.torch needs PyTorch: pip install 'nystrom-kme[torch]' (or any torch >= 2.4)"
    ) from error

from .loss import MMDLoss

__all__ = ["MMDLoss"]
