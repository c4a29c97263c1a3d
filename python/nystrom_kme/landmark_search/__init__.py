"""An a-posteriori number of landmarks: the smallest m whose Nyström embedding is, at a
stated confidence and for any data, as good as the empirical embedding up to a set
fraction of the latter's own statistical error. ``NystromKME(n_landmarks="auto")`` runs it.

The paper's m = sqrt(n) log sqrt(n) (Corollary 4.1) is a worst-case rate. Here m is
measured on the data.

**The question.** With mu the true embedding, mu_hat_n the empirical one and
sigma^2 = E ||mu_hat_n - mu||^2 its mean squared (statistical) error, the Nyström
embedding mu_m = P_m mu_hat_n (the orthogonal projection on the landmarks' span) has

    ||mu_m - mu||^2 = ||mu_hat_n - mu||^2 + e(m)^2 - 2 <mu_hat_n - mu_m, mu_hat_n - mu>,

with e(m) = ||mu_hat_n - mu_m||. The last term is a cross term between the residual
and the sample's noise, small against e(m)^2 (measured on the Section 6.1 mixture,
digits and a d = 50 mixture: bench/RESULTS.md). So the target "the Nyström embedding's
RMS error within 10% of the empirical one's", E ||mu_m - mu||^2 <= 1.1^2 sigma^2, is
e(m) <= tol sigma with tol = (1.1^2 - 1)^(1/2) = 0.458 (``AutoLandmarks(within=0.1)``,
the default; ``tol`` sets the ratio directly). It is a statement in expectation: for one
sample, whose own error may be below sigma, the ratio of the two errors may exceed 1.1
while the excess stays below 0.21 sigma^2.

**The certificate** (:mod:`nystrom_kme.landmark_search._certificate` has the bounds and why they hold).
"certified" means: with probability at least ``confidence`` (0.99 by default) over the
draws of the search, e(m) <= tol sigma, where sigma is the population's statistical
error, for *any* data -- no normal approximation, no assumption on how the mass is
spread; only that the rows are i.i.d. (for sigma) and the kernel bounded on them. By the
projection identity e(m)^2 = ||mu_hat_n||^2 - ||P_m mu_hat_n||^2, the second term exact for
every prefix of the landmarks (:mod:`nystrom_kme.landmark_search._nested_projection`). The first is

* computed ("exact", n^2 kernel values): e(m) is then known to round-off for every
  prefix, and only sigma's lower bound (Hoeffding's, for the U-statistic of the n rows)
  is random;
* or bounded from validation rows drawn from the data independently of the landmarks,
  by a test by betting whose values have mean e(m)^2 and a range proportional to e(m),
  for every row of the data, read or not (the range comes from a pass over all of them):
  a mass of rows that no landmark and no validation row reaches is bounded by that
  range, never assumed away (issue 43). Each validation row costs one kernel sum over the
  n rows, and the test cannot certify with fewer than one *floor*, r ln(1/delta) /
  (MAX_BET tol sigma) rows (r = sqrt(kappa), or less when the kernel varies little on the
  data; about 7 / (tol sigma) at the defaults): they are drawn FLOOR_MARGIN (3.5) floors
  first, then doubling, up to 8 floors.

"auto" computes ||mu_hat_n||^2 unless 8 floors of validation rows (their most) cost fewer
kernel sums, with a premium for the larger m that validation certifies at: exact up to
n of about 1.5 10^4 / (1 - E k(x, x')) (2 to 3 10^4 rows on the tables of
bench/search_cost.py), validation beyond. The decision is taken at
the first try, when the screen's estimate of sigma is known.

A screen decides when the certificate is tried: the landmarks' own residuals, as a
prequential estimate (256 probe rows for samplers whose landmarks are not draws from the
data), until the mode is decided; with validation rows, 1024 probe rows drawn apart from
them, at which the solver's weights are evaluated (the projection's span leaves out
directions under its pivot tolerance that the weights use) once the projection is within
8 times the target. A try when the estimate is 0.7 of the target and m grew by a quarter
since the last. Each try j spends 6 delta / (pi^2 j^2) of the confidence, so the tries
together spend at most delta; the screen reads no validation row, so it cannot bias the
test. In "exact" mode every prefix the projection proposes is tried, and the weights on
all the landmarks whenever the last block added no direction to the projection (issue
43: on 2-D tables the projection's pivots fall under its tolerance long before the
weights meet the target).

**The returned weights** are the core solver's (``solver``, ``rcond``), and they are
what is certified: for any weights alpha on the landmarks L, ||mu_hat_n - sum_j alpha_j
phi(l_j)||^2 = ||mu_hat_n||^2 - alpha^T s + alpha^T (K_m alpha - s), s = mu_hat_n(L), the
last two terms exact (O(m^2 d)); the validation rows see the residual mu_hat_n(v) -
sum_j alpha_j k(l_j, v), whose mean is the same up to that exact term. So neither the
solver's treatment of a rank-deficient K_m nor the nested factorization's rounding
(which only proposes where to look) enters the bound, beyond a round-off allowance.

**Stops.** "tolerance": certified. "every row": sampling without replacement took all n
rows (exact, but no cheaper than the empirical embedding: not certified). "plateau": the
last landmarks added no direction to the span and every row lies in it to 1e-6 of k(x, x) (constant
or near-constant kernels, few distinct rows): more landmarks change nothing the
factorization can see. "exhausted":
a pivoted-Cholesky sampler found no further landmark. "max_landmarks": the cap (not
converged). Only "tolerance" is certified; constant data (sigma = 0, both errors zero to
round-off) are certified at the first check.

**The path.** Landmarks join in blocks from the policy's ``nested_draws``: 64, then
blocks of 5% of m (at least 16), the screen (or, "exact", the certificate) at each
block's end; their kernel sums are computed in chunks of 64 landmarks (four of the core's
tasks; the same chunks on any number of threads, so the search's bits do not depend on
it). With "exact" every prefix is a candidate (the smallest that the projection proposes
and the solver's weights meet is returned, m = 1 on constant data); with validation rows
the block ends are (64 at least). The largest m is ``max_landmarks`` (default min(n,
max(8192, 2 ceil(sqrt(n) log sqrt(n))))).

**Cost** (bench/RESULTS.md, issues 34 and 43): the landmarks' sums, as one fit at the
returned m; one O(n d) pass for the kernel's range; and the certificate: n^2 d kernel
values ("exact"), or about 3.5 to 7 floors of validation rows, each n d. Against a plain
fit at the returned m (n m d, plus m^3 / 3 for the solve) that is about n / m times more
for "exact" and 5 ln(1/delta) / (tol sigma m) times more with validation rows: the floor
is what any test from rows must pay to exclude an unseen far mass (see
:mod:`~nystrom_kme.landmark_search._certificate`), so a certificate costs several fits
unless m exceeds about 7 / (tol sigma) ~ 15 (n / (1 - E k(x, x')))^(1/2). Measured at
n = 10^4 to 10^5: 10 to 100 plain fits, a plain fit taking milliseconds there
(bench/search_cost.py, bench/RESULTS.md).

**Samplers.** Uniform sampling (the default, with or without replacement, weighted or
not) draws one stream whose prefixes are the sets. The sequential policies
("rpcholesky", "greedy-cholesky", "dpp-greedy", "herding", "cortes-scott") are
rerun at doubling sizes from one seed: their first m picks do not depend on how many
follow, so every prefix of the last run is a set of that policy. "block-rpcholesky"
below 128 landmarks, "rls" and callables need not nest: the factorization then starts
again on the new run (``LandmarkSearch.nested`` is False).

**The modules.** ``_auto_landmarks.py`` the settings (:class:`AutoLandmarks`),
``_search.py`` :func:`search_landmarks` (the sample's weights and kernel range, sigma's
pilot, the walk, the report), ``_report.py`` what it returns (:class:`LandmarkSearch`,
:class:`SearchResult`), ``_certified_path.py`` the walk (blocks, screen, certificate,
plateau), ``_path_settings.py`` what the walk is given (the sample, the levels, the
landmark stream, the solver, the draws: small frozen objects) and what it returns,
``_nested_projection.py`` every prefix's projection, ``_certificate.py`` the bounds as
pure functions, ``_kernel_range.py`` the kernel's range on the data,
``_statistical_error.py`` sigma.
"""

from ._auto_landmarks import AutoLandmarks, as_auto_spec
from ._report import LandmarkSearch, SearchResult
from ._search import search_landmarks
from ._statistical_error import StatisticalError, estimate_statistical_error

__all__ = [
    "AutoLandmarks",
    "LandmarkSearch",
    "SearchResult",
    "StatisticalError",
    "as_auto_spec",
    "estimate_statistical_error",
    "search_landmarks",
]
