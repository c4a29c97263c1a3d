"""``python -m nystrom_kme.cli``: the command line (as ``python -m nystrom_kme``)."""

import sys

from . import main

sys.exit(main())
