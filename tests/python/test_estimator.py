"""scikit-learn's parameter conventions (ParamsMixin) without scikit-learn, and with it."""

from __future__ import annotations

import numpy as np
import nystrom_kme as nk
import pytest
from nystrom_kme._estimator import ParamsMixin


class Toy(ParamsMixin):
    def __init__(self, a: int = 1, *, b: object = None, c: str = "x") -> None:
        self.a, self.b, self.c = a, b, c


class Inner(ParamsMixin):
    def __init__(self, tolerance: float = 1e-3) -> None:
        self.tolerance = tolerance


def test_get_set_params_and_repr():
    toy = Toy(2, b=Inner(1e-5))
    assert toy.get_params(deep=False) == {"a": 2, "b": toy.b, "c": "x"}
    assert toy.get_params()["b__tolerance"] == 1e-5
    assert repr(toy) == "Toy(a=2, b=Inner(tolerance=1e-05))"  # defaults are left out
    assert repr(Toy()) == "Toy()"
    assert toy.set_params(a=3, b__tolerance=0.5) is toy and toy.a == 3 and toy.b.tolerance == 0.5
    with pytest.raises(ValueError, match="invalid parameter 'd' for Toy"):
        toy.set_params(d=1)
    with pytest.raises(ValueError, match="has no parameters to set"):
        Toy(b=5).set_params(b__x=1)


def test_sklearn_clone_and_tags_of_the_estimators():
    from sklearn.base import clone
    from sklearn.utils import get_tags

    for est in (nk.NystromKME(nk.Gaussian(2.0), n_landmarks=7, sampler="rls"), nk.EmpiricalKME("laplacian")):
        twin = clone(est)
        assert type(twin) is type(est) and twin.get_params() == est.get_params()
        assert get_tags(est).target_tags.required is False
    X = np.random.default_rng(0).normal(size=(100, 2))
    fitted = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X)
    assert repr(fitted) == "EmpiricalKME(kernel=Gaussian(bandwidth=1.0))  # fitted: 100 points in R^2, kernel=Gaussian(bandwidth=1.0)"
