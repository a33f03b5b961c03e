"""``kernel_check.jit``: the former name of the JIT build helper ``kernel_check.runtime``.

Kept so that wrappers written as ``from kernel_check.jit import load_jit, ...`` keep working;
new code imports ``kernel_check.runtime``. The same public API, the same objects.
"""

from .runtime import *  # noqa: F403 - the public API, `runtime.__all__`
from .runtime import __all__ as __all__  # the same list (the alias marks a re-export)
