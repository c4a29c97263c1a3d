"""How many landmarks a Nyström fit takes: its ``n_landmarks`` parameter read against
the number of rows and the landmarks a sampler fixes."""

from __future__ import annotations

import warnings

from ._validation import check_positive_int
from .bounds import default_n_landmarks
from .landmark_search import as_auto_spec


def resolve_n_landmarks(n_landmarks: object, n: int, given: int | None, *, streamed: str | None) -> int | None:
    """m for ``n`` rows, or None for "bound" (resolved later on the data).

    ``given`` is the number of landmarks the sampler fixes (points or indices), None
    when it draws them; ``streamed`` names the situation that cannot see all the rows,
    where "bound" and "auto" are refused (None: all rows are in memory). An integer m
    above n is returned as it is: the landmark choice caps it at the rows it draws from,
    with a warning (:class:`~nystrom_kme.nystrom._landmark_choice.LandmarkSettings`).

    >>> resolve_n_landmarks(None, 10_000, None, streamed=None)
    461
    """
    if given is not None:
        if n_landmarks is not None and n_landmarks != given:
            raise ValueError(
                f"n_landmarks={n_landmarks!r} but the sampler gives {given} landmarks; leave n_landmarks=None"
            )
        return given
    if n_landmarks is None:
        return default_n_landmarks(n)
    if isinstance(n_landmarks, str) and n_landmarks == "bound":
        if streamed is not None:
            raise ValueError(
                f"n_landmarks='bound' needs all of X in memory; {streamed} "
                "needs an integer n_landmarks, 'auto' (passes=2) or explicit landmarks"
            )
        return None
    if as_auto_spec(n_landmarks) is not None:
        raise ValueError(
            f"n_landmarks='auto' reads the data once per block of landmarks; {streamed or 'this call'} "
            "needs an integer n_landmarks (or explicit landmarks)"
        )
    return check_positive_int(n_landmarks, "n_landmarks")  # m > n: capped where the rows are drawn


def cap_landmarks(m: int, n: int, rows: str = "n_samples={n}", stacklevel: int = 3) -> int:
    """m capped at the n rows it is drawn from, with a UserWarning naming them (``rows``):
    the one rule of every entry point (scikit-learn's ``Nystroem`` caps ``n_components``
    alike; m > n landmarks would only repeat rows, at m^3 cost).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     cap_landmarks(500, 300, "the {n} pooled rows"), str(w[0].message)
    (300, 'n_landmarks=500 exceeds the 300 pooled rows: n_landmarks=300 is used')
    """
    if m <= n:
        return m
    warnings.warn(
        f"n_landmarks={m} exceeds {rows.format(n=n)}: n_landmarks={n} is used", UserWarning, stacklevel=stacklevel
    )
    return n
