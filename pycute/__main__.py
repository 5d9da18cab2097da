"""``python -m pycute demo | explain | emit``: see ``pycute.cli``."""
import sys

from .cli import main

sys.exit(main())
