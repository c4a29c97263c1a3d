"""nystrom_kme.bounds as a package: its re-exports and what its modules may import from
the rest of nystrom_kme."""

from __future__ import annotations

import ast
import pathlib

import nystrom_kme.bounds as B

#: The names the package re-exports (one per public function, class or alias).
PUBLIC = {
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
}
#: The public modules of the package, one topic each; their __all__ together are PUBLIC.
MODULES = ("theorems", "mmd_bounds", "spectrum", "decay", "suggest")
#: The only modules of the rest of nystrom_kme that bounds may import.
ALLOWED_OUTSIDE = {"_validation", "kernels", "_core", "_blas", "defaults"}


def test_every_name_in_all_is_exposed():
    assert set(B.__all__) == PUBLIC
    assert len(B.__all__) == len(set(B.__all__))
    for name in B.__all__:
        assert hasattr(B, name), name


def test_each_module_all_is_reexported():
    import importlib

    modules = [importlib.import_module(f"nystrom_kme.bounds.{name}") for name in MODULES]
    exported = []
    for module in modules:
        for name in module.__all__:
            assert getattr(B, name) is getattr(module, name), (module.__name__, name)
        exported += module.__all__
    assert sorted(exported) == sorted(B.__all__)


def test_modules_list_is_complete():
    """MODULES names every public module of the package (a new one must be re-exported)."""
    root = pathlib.Path(B.__file__).parent
    on_disk = {p.stem for p in root.glob("*.py") if not p.stem.startswith("_")}
    assert on_disk == set(MODULES)


def test_moved_names_live_in_their_topic_module():
    from nystrom_kme.bounds import mmd_bounds, suggest, theorems

    assert set(mmd_bounds.__all__) == {"MMDBound", "theorem_5_1_bound", "theorem_d1_bound"}
    assert "corollary_4_1_n_landmarks" in suggest.__all__
    assert not set(theorems.__all__) & (set(mmd_bounds.__all__) | {"corollary_4_1_n_landmarks"})
    assert B.theorem_5_1_bound.__module__ == "nystrom_kme.bounds.mmd_bounds"
    assert B.corollary_4_1_n_landmarks.__module__ == "nystrom_kme.bounds.suggest"


def test_bounds_imports_only_validation_kernels_and_core_from_the_package():
    """No import circle with embedding (which uses default_n_landmarks from here). The
    rules for the whole package (private names and modules, circles) are in
    tests/python/test_imports.py."""
    root = pathlib.Path(B.__file__).parent
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level == 2:  # from ..x import y: the rest of nystrom_kme
                    assert node.module in ALLOWED_OUTSIDE, (path.name, node.module)
                else:
                    assert node.level in (0, 1), (path.name, node.module)
                    assert not (node.module or "").startswith("nystrom_kme"), (path.name, node.module)
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("nystrom_kme") for a in node.names), path.name
