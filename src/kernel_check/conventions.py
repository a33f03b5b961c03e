"""Whether the checked tree has adopted the conventions that KC320, KC504 and KC505 enforce,
and which file establishes each.

Those rules state conventions of one code base (sglang's JIT kernels): kernel code inside
`namespace sglang`, registered CI tests outside the package, benchmarks through its `marker`
framework. On code written before them, or without them, every such finding is noise, so each
rule reports only where the tree shows the convention, as KC120 and KC151 ask the header
library what it offers before they recommend it:

- KC320: the header library the file is checked against opens `namespace sglang`, and it is
  the tree's own (found walking up from the file, or in `include-dirs`) or the file includes
  it; or the file itself opens `namespace sglang` (`HeaderLibrary.namespace_convention`).
- KC504: the registered-tests tree (`registered-tests-root`) exists.
- KC505: the benchmark framework's module (`benchmark-marker`) exists.

The paths of KC504 and KC505 are looked up in the checked file's directory and each directory
above it, the project root's among them, so a subtree of a checkout checked on its own (its
project root is the subtree) still finds them at the checkout's root.
The `conventions` key overrides the detection per code: "on", "off" or "auto" (the default).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .codes import BENCHMARK_BYPASSES_MARKER, OUTSIDE_NAMESPACE_SGLANG, REGISTERED_TEST_IN_PACKAGE

CONVENTION_CODES = (OUTSIDE_NAMESPACE_SGLANG, REGISTERED_TEST_IN_PACKAGE, BENCHMARK_BYPASSES_MARKER)
SETTINGS = ("auto", "on", "off")
FORCED = "`conventions` in the project configuration"  # what a message names when forced on


def setting(options: dict[str, Any], code: str) -> str:
    """`"auto"`, `"on"` or `"off"`: how the `conventions` key decides `code`."""
    return str(options["conventions"].get(code, "auto"))


def project_convention(code: str, path: str, root: str, options: dict[str, Any]) -> str:
    """What establishes the convention of KC504 or KC505 for the checked file `path`, as a
    message names it: the path of the registered-tests tree or of the benchmark module (in
    backquotes, relative to the project root `root` when inside it), `FORCED` when the
    configuration turns the convention on, "" when the tree has not adopted it."""
    chosen = setting(options, code)
    if chosen != "auto":
        return FORCED if chosen == "on" else ""
    start = Path(path).resolve().parent if path else Path(root)
    if code == REGISTERED_TEST_IN_PACKAGE:
        return _found(start, str(options["registered-tests-root"]), root, directory=True)
    return _found(start, str(options["benchmark-marker"]), root, directory=False)


def shown(path: str, root: str) -> str:
    """`path` relative to the project root when it lies inside it, else as it is."""
    if root:
        relative = os.path.relpath(path, root)
        if not relative.startswith(".."):
            return Path(relative).as_posix()
    return path


def _found(start: Path, relative: str, root: str, directory: bool) -> str:
    """`relative` under `start` or the nearest directory above it that holds it."""
    if not relative or start == Path():
        return ""
    for base in (start, *start.parents):
        candidate = base / relative
        if candidate.is_dir() if directory else candidate.is_file():
            return f"`{shown(str(candidate), root)}{'/' if directory else ''}`"
    return ""


def fingerprint(root: str, options: dict[str, Any]) -> dict[str, str]:
    """The detections from the project root, for the result cache's key: a registered-tests
    tree or a benchmark module that appears or goes at or above the root changes the findings
    of files that did not change."""
    return {
        code: project_convention(code, "", root, options)
        for code in (REGISTERED_TEST_IN_PACKAGE, BENCHMARK_BYPASSES_MARKER)
    }
