"""`python -m kernel_check` runs the command line."""

import os
import sys

# `python -m` puts the working directory first on sys.path; inside a checked tree that
# would import the tree's own modules (a `tomllib` module, a `clang/` package) -- never run its code.
if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from .cli import main

sys.exit(main())
