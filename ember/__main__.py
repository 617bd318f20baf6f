"""``python -m ember script.py [args...]``: same as ``python -m ember.run``."""
import sys

from ember.run import main

sys.exit(main())
