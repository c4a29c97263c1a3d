"""nystrom_kme.bounds.decay: polynomial vs exponential fits of the spectrum's decay."""

from __future__ import annotations

import numpy as np
import pytest

from nystrom_kme import bounds as B


def test_fit_spectral_decay_on_synthetic_spectra():
    i = np.arange(1, 1001, dtype=float)
    poly = B.fit_spectral_decay(i**-2.0 / np.sum(i**-2.0))
    assert poly.model == "polynomial" and poly.reliable
    assert poly.params["gamma"] == pytest.approx(0.5, rel=0.02)
    # the fitted c makes the model bound N on the reliable range
    ev = i**-2.0 / np.sum(i**-2.0)
    for lam in np.geomspace(*poly.lambda_range, 7):
        assert poly.effective_dimension(lam) >= np.sum(ev / (ev + lam)) * (1 - 1e-9)
    ev = 0.5 * np.exp(-0.3 * i)
    expo = B.fit_spectral_decay(ev)
    assert expo.model == "logarithmic" and expo.reliable
    assert expo.params["beta"] == pytest.approx(0.3, rel=0.02)
    for lam in np.geomspace(*expo.lambda_range, 7):
        assert expo.effective_dimension(lam) >= np.sum(ev / (ev + lam)) * (1 - 1e-9)
    flat = B.fit_spectral_decay(np.ones(50))
    assert not flat.reliable
    assert B.fit_spectral_decay(np.array([1.0, 0.5])).model is None


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: B.fit_spectral_decay([]), "eigenvalues"),
        (lambda: B.fit_spectral_decay([1.0, float("nan")]), "eigenvalues"),
        (lambda: B.fit_spectral_decay([1.0, 0.5], n_used=0), "n_used"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
