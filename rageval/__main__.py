"""``python -m rageval [overrides]`` runs the Hydra app; ``python -m rageval score ...`` etc.
too."""

import sys

from rageval.cli.main import main

sys.exit(main())
