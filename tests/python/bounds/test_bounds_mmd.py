"""nystrom_kme.bounds.mmd_bounds: the MMD bounds of Theorem 5.1 (Section 5) and D.1 (App. D).

Each is the sum of one single-distribution bound per distribution (Theorem 4.1,
resp. Lemma C.1), at confidence 1 - 2 delta.
"""

from __future__ import annotations

import pytest
from bounds_data import decreasing, poly_eff_dim

from nystrom_kme import bounds as B


def test_mmd_bounds_are_sums_and_monotone():
    N1, N2 = poly_eff_dim(2.0), poly_eff_dim(4.0)
    b = B.theorem_5_1_bound((5000, 8000), (600, 700), 0.05, (N1, N2), op_norm=(0.5, 0.5))
    p1 = B.theorem_4_1_bound(5000, 600, 0.05, N1, op_norm=0.5)
    p2 = B.theorem_4_1_bound(8000, 700, 0.05, N2, op_norm=0.5)
    assert b.value == pytest.approx(p1.value + p2.value)
    assert b.confidence == pytest.approx(0.9)
    assert b.holds is False  # m = 600 < 633 for the first distribution
    assert decreasing([B.theorem_5_1_bound((n, n), (500, 500), 0.05, (N1, N2)).value for n in [1000, 4000, 10**5]])
    assert decreasing([B.theorem_5_1_bound((10**4,) * 2, (m, m), 0.05, (N1, N2)).value for m in [100, 500, 2000]])
    assert decreasing([B.theorem_5_1_bound((10**4,) * 2, (500, 500), d, (N1, N2)).value for d in [1e-3, 0.05, 0.3]])
    d1 = B.theorem_d1_bound((0.1, 0.05), (3.0, 6.0), (5.0, 15.0), 1.0, (2000, 3000), (600, 700), 0.05)
    l1 = B.lemma_c1_bound(0.1, 3.0, 5.0, 1.0, 2000, 600, 0.05)
    l2 = B.lemma_c1_bound(0.05, 6.0, 15.0, 1.0, 3000, 700, 0.05)
    assert d1.value == pytest.approx(l1.value + l2.value)
    assert d1.holds == (l1.holds and l2.holds)


# --------------------------------------------------------------------------- #
# argument validation: ValueError naming the argument (with its index)
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: B.theorem_5_1_bound(100, (10, 10), 0.05, (1.0, 1.0)), "n"),
        (lambda: B.theorem_5_1_bound((100, 100), (10, 200), 0.05, (1.0, 1.0)), r"m\[1\]"),
        (lambda: B.theorem_5_1_bound((100, 100), (10, 10), 0.05, (1.0, -1.0)), r"eff_dim\[1\]"),
        (lambda: B.theorem_5_1_bound((100, 100), (10, 10), 0.05, (1.0, 1.0), op_norm=(1, 0)), r"op_norm\[1\]"),
        (lambda: B.theorem_d1_bound((0.1, -0.1), (1, 1), (1, 1), 1.0, (100, 100), (10, 10), 0.05), r"lam\[1\]"),
        (lambda: B.theorem_d1_bound((0.1, 0.1), (1, 1), (1, -1), 1.0, (100, 100), (10, 10), 0.05), r"eff_dim_inf\[1\]"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
