"""
Monitoring drift: handwritten digits whose class mix changes
============================================================

A model trained on scikit-learn's 8x8 handwritten digits (1797 images, no download) sees
new images every day. Halfway through the stream, the images start coming from the
digits 3, 5 and 8 only: the class mix drifts. We watch the stream two ways:

* :class:`nystrom_kme.DriftDetector` tests each batch of 20 images against the
  reference with an exact permutation p-value;
* :class:`nystrom_kme.OnlineDriftDetector` updates a sliding window's MMD to the
  reference after every image, with a threshold set for an expected run time of 5000
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
ref_rows, pool = order[:1200], order[1200:]  # the reference, and the images the stream draws from
X_ref = X_all[ref_rows]


def draw(n, drifted):
    """n images of the pool; after the change only the digits 3, 5 and 8."""
    source = pool[np.isin(y_all[pool], (3, 5, 8))] if drifted else pool
    return X_all[rng.choice(source, size=n)]


stream = np.vstack([draw(600, False), draw(600, True)])  # the change at image 600

# %%
# Batches of 20 images
# --------------------
# Each batch is tested against the frozen reference: the default two-sample statistic
# of :func:`nystrom_kme.two_sample_test`, permuting the batch with 600 held-out
# reference images, so the p-value is exact whatever the reference's size. A detector's
# false-alarm rate stays near alpha for batches of up to 1/30 of its held-out rows
# (``summary()["largest_calibrated_batch"]``: 20 here); a larger batch gets a warning.
batch = nk.DriftDetector(X_ref, n_holdout=600, random_state=0)
print("largest calibrated batch:", batch.summary()["largest_calibrated_batch"])
flagged = {False: 0, True: 0}
for start in range(0, len(stream), 20):
    res = batch.predict(stream[start : start + 20])
    flagged[start >= 600] += res.is_drift
    if start % 200 == 0:
        d = res.distance
        print(f"images {start:4d}-{start + 19:4d}: p = {res.pvalue:.3f}  MMD {d.mmd:.3f} [{d.low:.3f}, {d.high:.3f}]")
# Under no drift a test at alpha = 0.05 flags one batch in 20 by chance (the p-values
# are uniform): count the flags on each side of the change.
print(f"flagged: {flagged[False]} of 30 batches before the change, {flagged[True]} of 30 after")

# %%
# Image by image
# --------------
online = nk.OnlineDriftDetector(X_ref, ert=5000, window_size=40, n_holdout=600, random_state=0)
res = online.update(stream)
print(f"first alarm at image {res.drift_time} (the change is at image 600)")

fig, ax = plt.subplots(figsize=(7, 3.2))
ax.plot(res.time, res.statistic, lw=1, label="window MMD$^2$ to the reference")
ax.plot(res.time, res.threshold, lw=1, ls="--", label="threshold (ERT 5000)")
ax.axvline(600, color="k", lw=0.8, alpha=0.6, label="class mix changes")
ax.set_xlabel("image")
ax.set_ylabel("statistic")
ax.legend(fontsize=8, loc="upper left")
fig.tight_layout()
plt.show()
