"""Sphinx configuration of the nystrom-kme documentation.

Build (from the repository root, in a venv with ``pip install ".[docs]"``)::

    sphinx-build -W --keep-going -b html docs docs/_build/html

Choices:

* pydata-sphinx-theme: the theme of numpy, scipy and scikit-learn, whose readers
  are ours; versioned navigation and a clean API reference without custom CSS.
* numpydoc: every docstring of the package is written in numpydoc style (see
  STYLE.md, rule 11); numpydoc renders its sections (Parameters, Returns,
  Examples, ...) instead of napoleon's approximation of them.
* autosummary: one page per public class and function, generated from
  ``nystrom_kme.__all__`` and the subpackages' ``__all__`` at build time, so the
  reference cannot drift from the code.
* sphinx-mathjax-offline: MathJax 3 packaged on PyPI and copied into
  ``_build/html/_static/mathjax``, so the math renders offline (plain
  ``sphinx.ext.mathjax`` loads it from a CDN; ``sphinx.ext.imgmath`` needs LaTeX).
* sphinx-gallery: the examples are plain Python scripts (``docs/examples/``),
  executed at every build (a broken example fails the build), rendered with
  their figures and offered as ``.py`` and ``.ipynb`` downloads. It is what
  scikit-learn and matplotlib use; the alternative, notebooks through nbsphinx
  or myst-nb, would need pandoc or Jupyter kernels and stores outputs in the
  repository.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Source-tree builds (the compiled module next to the sources, PYTHONPATH unset):
# fall back to python/ when nystrom_kme is not installed.
try:
    import nystrom_kme
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(ROOT / "python"))
    import nystrom_kme

# Small dense factorizations are much slower with a multi-threaded BLAS on a busy machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

project = "nystrom-kme"
author = "nystrom-kme developers"
copyright = "2026, nystrom-kme developers"
release = nystrom_kme.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # sets mathjax_path to its own copy (the module name has hyphens)
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",  # the command-line page, generated from the parser
]

templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "README.md",
    "examples/README.txt",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
    "auto_examples/*.json",
    "sg_execution_times.rst",
]
default_role = "autolink"

# -- autodoc / autosummary / numpydoc ------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False  # the class template lists the members
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- sphinx-gallery ----------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "reference_url": {"nystrom_kme": None},
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "min_reported_time": 1,
    # its execution-times page loads jQuery and DataTables from CDNs: the site must read offline
    "write_computation_times": False,
}
# Any warning an example raises fails the build (as -W does for Sphinx's own warnings).
warnings.filterwarnings("error", category=DeprecationWarning, module="nystrom_kme")
# numpydoc also parses class docstrings before the hook below sees them; the qualified
# section titles it complains about are handled there.
warnings.filterwarnings("ignore", message=r"Unknown section Attributes \(after", category=UserWarning)
warnings.filterwarnings("ignore", message="Matplotlib is currently using agg", category=UserWarning)

# No intersphinx: the docs build must work offline (CI reaches package registries only).

# -- HTML -----------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"nystrom-kme {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path: list[str] = []
html_show_sourcelink = False


# -- Docstring clean-up before numpydoc --------------------------------------------
# The docstrings are written for ``help()`` first. Two habits of theirs are not valid
# numpydoc/reStructuredText, so they are adapted here rather than in the sources:
# * section titles with a qualifier, "Attributes (after ``fit``)": numpydoc only
#   knows "Attributes", and the qualifier moves into the first line of the section;
# * fitted-attribute names in running text (``weights_ = K_m^+ s_sum_ / weight_sum_``):
#   a word ending in "_" is a hyperlink reference in reST, so the "_" is escaped
#   (outside inline literals, parameter names and examples).
import re  # noqa: E402

_SECTION = re.compile(r"^(\s*)(Attributes|Parameters|Returns) \((.+)\)\s*$")
_PARAM_LINE = re.compile(r"^(\s*[\w*][\w*, ]*\s:(?:\s|$))(.*)$")
_LITERAL = re.compile(r"(``.+?``|`[^`]+`|:math:`[^`]+`)")
_REFERENCE = re.compile(r"(?<![\w\\])([A-Za-z]\w*?)_(?=$|[\s,.;:!?'\")\]}>/-])")


def _escape_references(text: str) -> str:
    return "".join(p if _LITERAL.fullmatch(p) else _REFERENCE.sub(r"\1\\_", p) for p in _LITERAL.split(text))


def _clean_docstring(app, what, name, obj, options, lines):  # noqa: ANN001, ARG001
    if not name.startswith("nystrom_kme"):
        return
    out: list[str] = []
    i = 0
    literal = False  # in an Examples section: doctest text, kept as is
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and set(lines[i + 1].strip()) == {"-"}:
            literal = line.strip() == "Examples"
        if literal or line.lstrip().startswith((">>>", "...")):
            out.append(line)
            i += 1
            continue
        m = _SECTION.match(line)
        if m and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
            indent, title, note = m.groups()
            out += [f"{indent}{title}", f"{indent}{'-' * len(title)}"]
            i += 2
            continue
        p = _PARAM_LINE.match(line)
        out.append(p.group(1) + _escape_references(p.group(2)) if p else _escape_references(line))
        i += 1
    lines[:] = out


# Docutils reports what it cannot parse in text that Sphinx does not read itself (the
# command-line page's help texts, parsed by sphinx-argparse with a reporter of its own) on
# stderr only, where -W does not see it: the build once logged 36 such errors and passed.
# Every system message still in a page becomes a Sphinx warning, which -W turns into a
# failure; .ci/docs.sh also fails on any docutils message in the build's log.
def _fail_on_system_messages(app, doctree):  # noqa: ANN001, ANN201
    from docutils import nodes
    from sphinx.util import logging

    logger = logging.getLogger("nystrom_kme.docs")
    for message in list(doctree.findall(nodes.system_message)):
        if message["level"] >= 2:  # WARNING, ERROR, SEVERE
            logger.warning("docutils %s: %s", message["type"], message.astext(), location=message)


def setup(app):  # noqa: ANN001, ANN201
    app.connect("autodoc-process-docstring", _clean_docstring, priority=400)
    app.connect("doctree-read", _fail_on_system_messages)
