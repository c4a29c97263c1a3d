"""Theory helpers: the error bounds of Chatalic et al. (ICML 2022) and their ingredients.

Sections 4 and 5 and Appendices C, D and F of "Nyström Kernel Mean Embeddings"
as functions, one topic per module:

* :mod:`~nystrom_kme.bounds.theorems` -- Lemma C.1 and Theorem 4.1 (constants,
  lambda, subsample condition, minimal m by Lambert's W, bound): the error of one
  mean embedding (Section 4, Appendix C);
* :mod:`~nystrom_kme.bounds.mmd_bounds` -- the MMD bounds of Theorem 5.1
  (Section 5) and Theorem D.1 (Appendix D), one bound per distribution summed;
* :mod:`~nystrom_kme.bounds.spectrum` -- estimates of the covariance spectrum,
  of the effective dimension N(lambda), of N_inf(lambda) and of ||C|| from data;
* :mod:`~nystrom_kme.bounds.decay` -- polynomial vs exponential fit of the
  spectrum's decay (the two cases of Corollary 4.1);
* :mod:`~nystrom_kme.bounds.suggest` -- the number of landmarks: the paper's
  default ``ceil(sqrt(n) log sqrt(n))``, the subsample sizes of Corollary 4.1
  and the data-driven suggestion.

Every public name is re-exported here.
"""

from .decay import DecayFit, fit_spectral_decay
from .mmd_bounds import MMDBound, theorem_5_1_bound, theorem_d1_bound
from .spectrum import (
    CovarianceSpectrum,
    covariance_norm,
    effective_dimension,
    estimate_spectrum,
    max_leverage,
)
from .suggest import (
    Explanation,
    LandmarkSuggestion,
    corollary_4_1_n_landmarks,
    default_n_landmarks,
    suggest_n_landmarks,
)
from .theorems import (
    EffDim,
    LemmaC1Bound,
    Theorem41Bound,
    lemma_c1_bound,
    theorem_4_1_bound,
    theorem_4_1_condition,
    theorem_4_1_constants,
    theorem_4_1_lambda,
    theorem_4_1_min_landmarks,
)

__all__ = [
    "CovarianceSpectrum",
    "DecayFit",
    "EffDim",
    "Explanation",
    "LandmarkSuggestion",
    "LemmaC1Bound",
    "MMDBound",
    "Theorem41Bound",
    "corollary_4_1_n_landmarks",
    "covariance_norm",
    "default_n_landmarks",
    "effective_dimension",
    "estimate_spectrum",
    "fit_spectral_decay",
    "lemma_c1_bound",
    "max_leverage",
    "suggest_n_landmarks",
    "theorem_4_1_bound",
    "theorem_4_1_condition",
    "theorem_4_1_constants",
    "theorem_4_1_lambda",
    "theorem_4_1_min_landmarks",
    "theorem_5_1_bound",
    "theorem_d1_bound",
]
