"""``python -m nystrom_kme``: the ``nystrom-kme`` command line (see :mod:`nystrom_kme.cli`)."""

import sys

from .cli import main

sys.exit(main())
