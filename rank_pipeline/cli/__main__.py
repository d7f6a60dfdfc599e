"""``python -m rank_pipeline.cli``: the same as the ``rank-pipeline`` command."""

import sys

from rank_pipeline.cli.main import main

sys.exit(main())
