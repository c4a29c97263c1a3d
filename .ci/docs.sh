#!/usr/bin/env bash
# Documentation job: a fresh venv, the package with its `docs` extra, and a Sphinx build
# with warnings as errors. The build runs the example gallery (sphinx-gallery executes
# every docs/examples/plot_*.py), so a broken example fails it. Output: docs/_build/html.
#
#   bash .ci/docs.sh                  # a fresh .venv-docs (VENV=path for another place)
#   VENV=.venv REUSE_VENV=1 bash .ci/docs.sh
#                                     # a venv that has the package already: only the
#                                     # docs extra's own requirements are installed
#                                     # (CI: saves a second compile of the C++ module)
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VENV:-.venv-docs}
start=$(date +%s)
if [ "${REUSE_VENV:-0}" = 1 ]; then
  "$venv/bin/python" -c 'import nystrom_kme' || { echo "error: nystrom_kme is not installed in $venv" >&2; exit 1; }
  mapfile -t reqs < <("$venv/bin/python" -c 'import tomllib
for r in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"]:
    print(r)')
  "$venv/bin/pip" install "${reqs[@]}"
else
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --upgrade pip >/dev/null
  "$venv/bin/pip" install ".[docs]"
fi

# Generated pages from an earlier build would hide a missing or renamed object.
rm -rf docs/_build docs/auto_examples docs/api/generated docs/sg_execution_times.rst
# Run from the docs' own interpreter, outside the source tree's python/ (so the
# installed package is what gets documented), with one BLAS thread: the gallery's small
# dense factorizations are slower with more on a busy machine.
mkdir -p docs/_build
OPENBLAS_NUM_THREADS=1 MPLBACKEND=agg \
  "$venv/bin/python" -m sphinx -W --keep-going -b html docs docs/_build/html 2>&1 | tee docs/_build/sphinx.log
# Docutils messages about text Sphinx does not parse itself (sphinx-argparse's help texts)
# go to stderr, not through Sphinx's logging, so -W alone once passed 36 of them; conf.py
# turns those left in a page into warnings, and any in the log fails here too.
if grep -E '\((WARNING|ERROR|SEVERE)/[0-9]\)' docs/_build/sphinx.log; then
  echo "error: docutils reported the problems above" >&2
  exit 1
fi
# The site must read offline: MathJax from _static (sphinx-mathjax-offline), and no page
# loading a script or a stylesheet from the network.
html=docs/_build/html
[ -f "$html/_static/mathjax/tex-chtml.js" ] || { echo "error: MathJax is not in $html/_static/mathjax" >&2; exit 1; }
if grep -rlE '<(script|link)[^>]*(src|href)="(https?:)?//' --include='*.html' "$html"; then
  echo "error: the pages above load a script or stylesheet from the network" >&2
  exit 1
fi
echo "docs built in $(( $(date +%s) - start )) s: docs/_build/html/index.html"
