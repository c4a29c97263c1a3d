"""The Nyström kernel mean embedding (Chatalic et al., 2022, eq. 5): the estimator
:class:`NystromKME` (``_nystrom_kme.py``) and, one job each, the pieces it is built from:
the landmark choice (``_landmark_choice.py``: the sampler, m, the kernel resolved, the
draw or the certified search of ``n_landmarks="auto"``), its parameters' checks
(``_parameters.py``), the sufficient statistics and the solve of eq. 5
(``_sufficient_statistics.py``), the fitted state as data (``_fitted_state.py``: the
attributes a fit sets, saved and loaded), ``merge`` (``_merge.py``) and ``score``
(``_score.py``).
"""

from ._nystrom_kme import SOLVERS, NystromKME

__all__ = ["SOLVERS", "NystromKME"]
