"""
Fitting data that lives on disk (memmap)
========================================

Data too large for memory can stay on disk: a ``numpy.memmap`` (as returned by
``np.load(path, mmap_mode="r")``), an HDF5 or zarr dataset, or a dask array is read
block by block, and only ``O(m^2 + m d)`` memory is used besides one block. The result
is the same, bit for bit, as the in-memory fit.
"""

# %%
# Write a dataset to disk
# -----------------------
import os
import tempfile
import time

import matplotlib.pyplot as plt
import numpy as np

import nystrom_kme as nk

rng = np.random.default_rng(0)
n = 200_000
angles = rng.uniform(0, 2 * np.pi, n)
radius = 2.0 + 0.3 * rng.normal(size=n)  # a noisy ring
data = np.column_stack([radius * np.cos(angles), radius * np.sin(angles)])

path = os.path.join(tempfile.mkdtemp(), "ring.npy")
np.save(path, data)
del data
print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB")

# %%
# Fit from the memory map
# -----------------------
# ``chunk_rows`` sets the block size (here 20,000 rows; the default is about 16 MiB).
X_disk = np.load(path, mmap_mode="r")
t0 = time.perf_counter()
kme = nk.NystromKME(nk.Gaussian(0.5), n_landmarks=300, random_state=0, chunk_rows=20_000).fit(X_disk)
print(f"fit from disk: {time.perf_counter() - t0:.2f} s, {kme.landmarks_.shape[0]} landmarks")

# %%
# The same embedding as in memory
# -------------------------------
in_memory = nk.NystromKME(nk.Gaussian(0.5), n_landmarks=300, random_state=0).fit(np.asarray(X_disk))
print("identical weights:", np.array_equal(kme.weights_, in_memory.weights_))

# %%
# The embedding as a function
# ---------------------------
# :math:`\hat\mu_m(y) = \sum_j \alpha_j k(\tilde x_j, y)` is a smoothed density of the
# data: evaluated on a grid it draws the ring, with the landmarks on top.
g = np.linspace(-3.2, 3.2, 120)
G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
values = kme(G).reshape(len(g), len(g))

fig, ax = plt.subplots(figsize=(5, 4.5))
im = ax.contourf(g, g, values, levels=20, cmap="viridis")
ax.scatter(kme.landmarks_[:, 0], kme.landmarks_[:, 1], s=3, c="w", label="landmarks")
ax.set_aspect("equal")
ax.set_title(r"$\hat\mu_m$ fitted from a memmap (n = 200,000)")
ax.legend(loc="upper right", fontsize=8)
fig.colorbar(im, ax=ax)
fig.tight_layout()
plt.show()
