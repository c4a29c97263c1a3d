"""
Monitoring drift: handwritten digits whose class mix changes
============================================================

A model trained on scikit-learn's 8x8 handwritten digits (1797 images, no download) sees
new images every day. Halfway through the stream, half of the images start coming
from the digits 3, 5 and 8 only: the class mix drifts. We watch the stream two ways:

* :class:`nystrom_kme.DriftDetector` tests each batch of 100 images against the
  reference with an exact permutation p-value;
* :class:`nystrom_kme.OnlineDriftDetector` updates a sliding window's MMD to the
  reference after every image, with a threshold set for an expected run time of 500
  images between false alarms.

scikit-learn is a documentation-only dependency here (``pip install ".[docs]"``).
"""

# %%
# Reference and stream
# --------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

import nystrom_kme as nk

digits = load_digits()
X_all, y_all = digits.data / 16.0, digits.target
rng = np.random.default_rng(0)
order = rng.permutation(len(X_all))
ref_rows, pool = order[:900], order[900:]  # the reference, and the images the stream draws from
X_ref = X_all[ref_rows]


def draw(n, drifted):
    """n images of the pool; after the change half of them come from the digits 3, 5 and 8."""
    rows = rng.choice(pool, size=n)
    if drifted:
        mix = pool[np.isin(y_all[pool], (3, 5, 8))]
        swap = rng.random(n) < 0.5
        rows[swap] = rng.choice(mix, size=int(swap.sum()))
    return X_all[rows]


stream = np.vstack([draw(600, False), draw(600, True)])  # the change at image 600

# %%
# Batches of 100 images
# ---------------------
# Each batch is tested against the frozen reference: the default two-sample statistic
# of :func:`nystrom_kme.two_sample_test`, permuting the batch with 400 held-out
# reference images, so the p-value is exact whatever the reference's size.
batch = nk.DriftDetector(X_ref, n_holdout=400, random_state=0)
for start in range(0, len(stream), 100):
    res = batch.predict(stream[start : start + 100])
    d = res.distance
    print(
        f"images {start:4d}-{start + 99:4d}: p = {res.pvalue:.3f}  MMD {d.mmd:.3f} [{d.low:.3f}, {d.high:.3f}]"
        f"  {'DRIFT' if res.is_drift else ''}"
    )

# %%
# Image by image
# --------------
online = nk.OnlineDriftDetector(X_ref, ert=500, window_size=40, n_holdout=400, random_state=0)
res = online.update(stream)
print(f"first alarm at image {res.drift_time} (the change is at image 600)")

fig, ax = plt.subplots(figsize=(7, 3.2))
ax.plot(res.time, res.statistic, lw=1, label="window MMD$^2$ to the reference")
ax.plot(res.time, res.threshold, lw=1, ls="--", label="threshold (ERT 500)")
ax.axvline(600, color="k", lw=0.8, alpha=0.6, label="class mix changes")
ax.set_xlabel("image")
ax.set_ylabel("statistic")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()
