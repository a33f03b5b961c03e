"""KC5xx plantings: wrapper, test and benchmark violations planted into real Python files."""

from __future__ import annotations

import re

from planting import Mutation, Planted

PY = (".py",)
_CACHE_ONCE = re.compile(r"^@cache_once[ \t]*$", re.M)
_MODULE_REGISTRATION = re.compile(r"^(register_\w+_ci\()", re.M)
_BENCHMARK_REGISTRATION = re.compile(r"^register_\w+_ci\([^)]*benchmark", re.M)


def _definition_after(text: str, offset: int) -> str:
    """The decorated definition that starts after `offset`: up to the next line that starts at
    column 0 with something other than a decorator or the `def` itself."""
    lines = text[offset:].split("\n")[1:]
    body = []
    for line in lines:
        if body and line and not line[0].isspace() and not line.startswith(")"):
            break
        body.append(line)
    return "\n".join(body)


def lru_cache_factory(text: str) -> Planted | None:
    """`@functools.cache` instead of `@cache_once` on a factory that calls `load_jit`."""
    factory = next((m for m in _CACHE_ONCE.finditer(text) if "load_jit(" in _definition_after(text, m.end())), None)
    if factory is None:
        return None
    line = text.count("\n", 0, factory.start()) + 1
    planted = Planted(text[: factory.start()] + "@functools.cache" + text[factory.end() :], line)
    if "import functools" in text:
        return planted
    # `import functools` on the decorator's own line would not parse: prepend it to the
    # first import instead, which keeps every later line where it was.
    first_import = re.search(r"^(import |from (?!__future__))", planted.text, re.M)
    if first_import is None:
        return None
    start = first_import.start()
    return Planted(planted.text[:start] + "import functools; " + planted.text[start:], planted.line)


def assert_in_entry_point(text: str) -> Planted | None:
    """An `assert` just before a wrapper's call of its JIT module's export."""
    match = re.search(r"^([ \t]+)[^\n#]*\b_?jit_\w*module\([^\n]*\)\.\w+\(", text, re.M)
    if match is None or "register_" in text:  # registered tests and benchmarks are not wrappers
        return None
    line = text.count("\n", 0, match.start()) + 1
    return Planted(text[: match.start()] + f"{match.group(1)}assert True, 'kc planted'\n" + text[match.start() :], line)


def non_literal_registration(text: str) -> Planted | None:
    """A computed `est_time` in a module-level registration."""
    match = re.search(r"^register_\w+_ci\(\s*est_time=(\d+)", text, re.M)
    if match is None:
        return None
    line = text.count("\n", 0, match.start(1)) + 1  # reported at the argument
    return Planted(text[: match.end(1)] + " * 2" + text[match.end(1) :], line)


def registration_in_package(text: str) -> Planted | None:
    """A CI registration appended to a module of the package."""
    if "load_jit(" not in text or "register_" in text or not text.endswith("\n"):
        return None  # a wrapper module: the package's own code, never a registered test
    planted = text + 'register_cuda_ci(est_time=1, suite="kc-planted")\n'
    return Planted(planted, planted.count("\n"))


def direct_do_bench(text: str) -> Planted | None:
    """A benchmark timing through `triton.testing.do_bench` directly."""
    if not _BENCHMARK_REGISTRATION.search(text) or not text.endswith("\n"):
        return None  # a registered benchmark
    planted = text + "import triton.testing\ntriton.testing.do_bench(lambda: None)\n"
    return Planted(planted, planted.count("\n"))


def registration_under_if(text: str) -> Planted | None:
    """Every module-level registration moved under `if True:`, where CI's collector misses it."""
    if not _MODULE_REGISTRATION.search(text):
        return None
    return Planted(_MODULE_REGISTRATION.sub(r"if True:  # kc planted\n    \1", text), 1)


MUTATIONS = [
    Mutation("KC501", "functools.cache on a load_jit factory", PY, lru_cache_factory),
    Mutation("KC502", "assert in a wrapper entry point", PY, assert_in_entry_point),
    Mutation("KC503", "computed est_time", PY, non_literal_registration),
    Mutation("KC504", "registration in the package", PY, registration_in_package),
    Mutation("KC505", "triton.testing.do_bench in a benchmark", PY, direct_do_bench),
    Mutation("KC506", "registration moved under if", PY, registration_under_if),
]
