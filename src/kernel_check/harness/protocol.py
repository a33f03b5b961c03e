"""What a spec's child process (`child.py`) prints that its parent reads.

The parent's readers (`process.py` for events, `sanitize.py` and `environment.py` for the case
a compute-sanitizer report belongs to) import these from here rather than from the child, so
the child can use the parent's classifiers without an import circle.
"""

from __future__ import annotations

EVENT_PREFIX = "@@kernel-check "
# printed (as plain output) before each case of a sanitizer run: compute-sanitizer's reports
# that follow it belong to that case, so a finding names the shape and value profile
CASE_MARKER = "kernel-check case: "
