"""Which landmarks a Nyström fit takes (for :class:`nystrom_kme.NystromKME`): the
sampler read as given points or a private copy of a policy, m for the rows at hand
(capped at them with a warning, as scikit-learn's ``Nystroem`` caps ``n_components``),
the kernel resolved and the landmarks drawn, reading only the rows needed; for
``n_landmarks="auto"`` the certified search; and for ``passes=1`` the same choice on a
pool of the first chunks of a stream.

The draws are those of an in-memory fit whatever the source: the median heuristic's
rows, then the policy's (``policy.draw``).
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple, Union

import numpy as np

from .._compensated import CompensatedSum
from .._landmark_count import cap_landmarks, resolve_n_landmarks
from .._validation import Weights, common_dtype
from ..bounds import LandmarkSuggestion, default_n_landmarks, suggest_n_landmarks
from ..kernels import Kernel, resolve_kernel
from ..landmark_search import LandmarkSearch, as_auto_spec, search_landmarks
from ..sampling import FixedLandmarks, Policy, SamplerLike, as_policy, landmark_points, resolve_sampler
from ..sources import ArraySource, RowSource

#: n_landmarks="bound" takes at most this many times the paper's sqrt(n) log sqrt(n).
AUTO_CAP_FACTOR = 4

#: How m was chosen, for ``n_landmarks_report_``: the search of "auto", the suggestion of
#: "bound", or None.
Report = Union[LandmarkSearch, LandmarkSuggestion, None]


class LandmarkChoice(NamedTuple):
    """A fit's landmarks and what chose them: ``indices`` (m,) rows of X (None for given
    points), ``landmarks`` (m, n_features), ``policy`` the private copy of the sampler
    (None for given points), ``report`` how m was chosen."""

    kernel: Kernel
    policy: Policy | None
    indices: np.ndarray | None
    landmarks: np.ndarray
    report: Report = None


@dataclass(frozen=True)
class LandmarkSettings:
    """The parameters of a Nyström estimator that choose its landmarks.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.nystrom._landmark_choice import LandmarkSettings
    >>> from nystrom_kme.sources import as_source
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> choice = LandmarkSettings(nk.Gaussian(1.0), 10, "uniform", None).choose(
    ...     as_source(X), None, np.random.default_rng(0))
    >>> choice.landmarks.shape, bool((choice.landmarks == X[choice.indices]).all())
    ((10, 2), True)
    """

    kernel: Kernel | str
    n_landmarks: object
    sampler: SamplerLike
    n_threads: int | None

    def policy(self, X: np.ndarray | None, src: RowSource) -> tuple[np.ndarray | None, Policy | None]:
        """(given landmark points or None, a private copy of the sampling policy or None);
        points take the dtype of the data (X, else a probe of src's shape and dtype)."""
        probe = X if X is not None else np.empty((0, src.n_features or 0), dtype=src.dtype or np.float64)
        points = landmark_points(self.sampler, probe)
        if points is not None:
            return points, None
        policy = copy.deepcopy(resolve_sampler(self.sampler))  # the user's object is never modified
        params = policy.get_params() if hasattr(policy, "get_params") else {}
        if (
            "n_threads" in params
            and params["n_threads"] is None
            and self.n_threads is not None
            and hasattr(policy, "set_params")
        ):
            policy.set_params(n_threads=self.n_threads)
        return None, policy

    def count(self, n: int, points: np.ndarray | None, policy: Policy | None, *, streamed: str | None) -> int | None:
        """m for n rows (None: "bound"); see :func:`~nystrom_kme._landmark_count.resolve_n_landmarks`."""
        given = (
            points.shape[0]
            if points is not None
            else np.asarray(policy.indices).size
            if isinstance(policy, FixedLandmarks)
            else None
        )
        return resolve_n_landmarks(self.n_landmarks, n, given, streamed=streamed)

    def choose(
        self,
        src: RowSource,
        sample_weight: Weights | None,
        rng: np.random.Generator,
        *,
        streamed: str | None = None,
        n_total: int | None = None,
        rows: str = "n_samples={n}",
        stacklevel: int = 3,
    ) -> LandmarkChoice:
        """Resolve the kernel and pick the landmarks among the rows of ``src``, reading
        only the rows needed; m is sized for ``n_total`` rows (default: src's). A drawn
        m above the rows of ``src`` is capped at them with a UserWarning (``rows`` names
        them in it, ``stacklevel`` points it at the user's call)."""
        n = src.count_rows()
        X = src.to_array()
        points, policy = self.policy(X, src)
        m = self.count(n if n_total is None else n_total, points, policy, streamed=streamed if X is None else None)
        if m is not None and points is None and not isinstance(policy, FixedLandmarks):
            m = cap_landmarks(m, n, rows, stacklevel + 1)
        kernel = resolve_kernel(self.kernel, [src], rng)
        report: Report = None
        if m is None:
            assert X is not None  # "bound" is refused on streamed data (count)
            report = suggest_n_landmarks(
                X,
                kernel,
                random_state=rng,
                n_threads=self.n_threads,
                max_landmarks=AUTO_CAP_FACTOR * default_n_landmarks(n),
            )
            m = min(n, report.n_landmarks)
        if points is not None:
            src.check_features(points.shape[1], "the given landmarks")
            return LandmarkChoice(kernel, None, None, points)
        assert policy is not None  # no points: policy() gave one
        drawer = as_policy(policy)
        if drawer.needs_data_in_memory and X is None:
            raise ValueError(
                f"sampler {policy!r} needs all of X in memory; with {streamed} use "
                "'uniform', explicit landmarks, or passes=1 (the sampler then runs on "
                "the first chunk(s))"
            )
        indices = drawer.draw(src, kernel, m, rng, sample_weight=sample_weight)
        return LandmarkChoice(kernel, policy, indices, np.ascontiguousarray(src.take(indices)), report)

    def choose_first_chunk(
        self, src: RowSource, sample_weight: Weights | None, rng: np.random.Generator
    ) -> LandmarkChoice:
        """The first call of ``partial_fit``: :meth:`choose` among the rows of its chunk,
        "auto" and "bound" refused (they need all the rows) unless the sampler fixes the
        landmarks."""
        if isinstance(self.n_landmarks, str) or as_auto_spec(self.n_landmarks) is not None:
            points, policy = self.policy(src.to_array(), src)
            if points is None and not isinstance(policy, FixedLandmarks):
                raise ValueError(
                    "partial_fit chooses the landmarks from the first chunk: give an integer "
                    "n_landmarks, None (sized for the first chunk) or explicit landmarks, "
                    f"not {self.n_landmarks!r}"
                )
        return self.choose(
            src, sample_weight, rng, streamed="partial_fit", rows="the {n} rows of the first chunk", stacklevel=4
        )

    def search(
        self,
        src: RowSource,
        sample_weight: Weights | None,
        rng: np.random.Generator,
        *,
        solver: str,
        rcond: float,
        n_threads: int,
    ) -> tuple[LandmarkChoice, CompensatedSum, float, tuple[np.ndarray, str, int]]:
        """``n_landmarks="auto"``: the certified search of :mod:`nystrom_kme.landmark_search`
        along the policy's nested draws; the choice, with the final set's sums, weight sum
        and solve (so the fit solves nothing twice)."""
        points, policy = self.policy(src.to_array(), src)
        if points is not None or isinstance(policy, FixedLandmarks):
            raise ValueError(
                "n_landmarks='auto' searches over landmark sets drawn by the sampler; "
                "with given landmarks leave n_landmarks=None"
            )
        kernel = resolve_kernel(self.kernel, [src], rng)
        spec = as_auto_spec(self.n_landmarks)
        assert policy is not None and spec is not None  # called for "auto" only
        found = search_landmarks(
            src,
            kernel,
            policy,
            rng,
            spec=spec,
            sample_weight=sample_weight,
            solver=solver,
            rcond=rcond,
            n_threads=n_threads,
        )
        choice = LandmarkChoice(kernel, policy, found.indices, found.landmarks, found.report)
        return choice, found.sums, found.weight_sum, found.solution

    def choose_from_stream(
        self, src: RowSource, rng: np.random.Generator
    ) -> tuple[LandmarkChoice, Iterator[np.ndarray]]:
        """``passes=1``: the landmarks chosen among the first chunk(s) of ``src``, at least
        m rows pooled (m sized for all of src's rows when known), and every block of
        ``src`` in order, the pooled ones first, for the sums: one read."""
        chunks = src.chunks()
        first = next(chunks, None)
        if first is None:
            raise ValueError(f"{src.name} has no rows")
        pool = [first[1]]
        points, policy = self.policy(pool[0], src)
        if (
            src.n_rows is None
            and points is None
            and not isinstance(policy, FixedLandmarks)
            and not isinstance(self.n_landmarks, numbers.Integral)
        ):
            raise ValueError(
                "passes=1 over an iterable of unknown length needs an integer n_landmarks (or explicit landmarks)"
            )
        n_total = src.n_rows if src.n_rows is not None else 2**62
        m = self.count(n_total, points, policy, streamed="passes=1")
        while points is None and sum(b.shape[0] for b in pool) < m:  # pool at least m rows
            nxt = next(chunks, None)
            if nxt is None:
                break
            pool.append(nxt[1])
        head = pool[0] if len(pool) == 1 else np.concatenate(common_dtype(*pool))
        choice = self.choose(
            ArraySource(head), None, rng, n_total=n_total, rows="the {n} rows of the stream", stacklevel=5
        )
        del head

        def replay() -> Iterator[np.ndarray]:
            while pool:
                yield pool.pop(0)
            for _, block in chunks:
                yield block

        return choice, replay()


__all__ = ["AUTO_CAP_FACTOR", "LandmarkChoice", "LandmarkSettings", "Report"]
