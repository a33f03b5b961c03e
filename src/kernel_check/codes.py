"""The code table: every code kernel-check reports, defined once.

A code's identity lives here and nowhere else: its name, the stage that produces it
(`Language`: a C++/CUDA or Python rule, the build, the dynamic harness, or the run itself),
its default severity (config `severity` may remap it) and its one-line summary. Each
definition also gives the code a constant, so that the stages that produce findings
(`build.py`, the harness, the filter) name codes as `codes.RESULT_MISMATCH`, never as a
string literal. A rule module in `src/kernel_check/rules/` adds its check (`@rule(code)`) and its doc page
(the module docstring) to the code; `registry.py` joins the two.

A new code: one `_define(...)` line below, in code order (`scripts/new_rule.py` writes it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .finding import Severity


class Language(enum.Enum):
    """Which stage produces a code's findings."""

    CPP = "cpp"
    PYTHON = "python"
    BUILD = "build"
    DYNAMIC = "dynamic"
    META = "meta"


STATIC = frozenset({Language.CPP, Language.PYTHON, Language.META})  # the stages `kernel-check [PATH]` runs


@dataclass(frozen=True)
class Code:
    """One code's identity (its check and doc page are the rule module's)."""

    code: str
    name: str
    severity: Severity
    language: Language
    summary: str
    fixable: bool = False

    @property
    def family(self) -> str:
        """The code's group in the catalog, e.g. `KC2xx` (PDL) or `KD2xx` (the sanitizers)."""
        return f"{self.code[:3]}xx"


TABLE: dict[str, Code] = {}


def _define(
    code: str, name: str, severity: Severity, language: Language, summary: str, *, fixable: bool = False
) -> str:
    if code in TABLE:
        raise RuntimeError(f"code {code} defined twice ({TABLE[code].name}, {name})")
    TABLE[code] = Code(code, name, severity, language, summary, fixable)
    return code


def lookup(code: str) -> Code | None:
    return TABLE.get(code.upper())


# Meta: findings about the run itself (a file that could not be parsed, a stale suppression).
PARSE_ERROR = _define(
    "KC000",
    "parse-error",
    Severity.ERROR,
    Language.META,
    "file could not be parsed; rules skipped what clang could not type",
)
UNUSED_SUPPRESSION = _define(
    "KC001", "unused-suppression", Severity.WARNING, Language.META, "suppression comment matches no finding"
)

# C++/CUDA: launchers, tensors, integers, alignment, launches.
RESTRICT_READONLY_POINTER = _define(
    "KC101",
    "restrict-readonly-pointer",
    Severity.ERROR,
    Language.CPP,
    "read-only kernel pointer lacks __restrict__",
    fixable=True,
)
READONLY_POINTER_NOT_CONST = _define(
    "KC102",
    "readonly-pointer-not-const",
    Severity.ERROR,
    Language.CPP,
    "kernel pointer parameter is never written but is not pointer-to-const",
)
FIXED_WIDTH_INTEGER = _define(
    "KC110",
    "fixed-width-integer",
    Severity.WARNING,
    Language.CPP,
    "`int`/`long`/`unsigned` where a fixed-width integer type belongs",
)
IMPLICIT_NARROWING_OF_SIZE = _define(
    "KC111",
    "implicit-narrowing-of-size",
    Severity.WARNING,
    Language.CPP,
    "64-bit shape/stride implicitly narrowed to a 32-bit type",
)
INDEX_OVERFLOW_32BIT = _define(
    "KC112",
    "index-overflow-32bit",
    Severity.WARNING,
    Language.CPP,
    "flat global index multiplied in 32 bits in a kernel with 64-bit sizes",
)
VECTOR_ALIGNMENT_UNCHECKED = _define(
    "KC120",
    "vector-alignment-unchecked",
    Severity.ERROR,
    Language.CPP,
    "tensor feeding a vectorized kernel access is verified without ensure_alignment",
)
ALIGNMENT_WIDTH_MISMATCH = _define(
    "KC121",
    "alignment-width-mismatch",
    Severity.ERROR,
    Language.CPP,
    "ensure_alignment(w) is not a power of two or is below the kernel's vector width",
)
RAW_KERNEL_LAUNCH = _define(
    "KC130", "raw-kernel-launch", Severity.ERROR, Language.CPP, "<<<...>>> launch instead of host::LaunchKernel"
)
UNCHECKED_CUDA_CALL = _define(
    "KC131",
    "unchecked-cuda-call",
    Severity.WARNING,
    Language.CPP,
    "cudaError_t result of a CUDA runtime call is discarded",
)
MANUAL_TENSOR_CHECK = _define(
    "KC140",
    "manual-tensor-check",
    Severity.WARNING,
    Language.CPP,
    "launcher checks a TensorView by hand instead of through TensorMatcher",
)
UNVERIFIED_TENSOR = _define(
    "KC141",
    "unverified-tensor",
    Severity.ERROR,
    Language.CPP,
    "TensorView parameter's data_ptr() used before any TensorMatcher verify",
)
RUNTIME_ARCH_QUERY = _define(
    "KC150",
    "runtime-arch-query",
    Severity.ERROR,
    Language.CPP,
    "GPU architecture queried at run time instead of SGL_CUDA_ARCH",
)
LANE_ID_MODULO = _define(
    "KC151",
    "lane-id-modulo",
    Severity.WARNING,
    Language.CPP,
    "`threadIdx.x % 32` feeding an address instead of get_lane_id()",
)
PREFER_STREAM_CHECK = _define(
    "KC160",
    "prefer-stream-check",
    Severity.INFO,
    Language.CPP,
    "RuntimeCheck/RuntimeDeviceCheck where CHECK_HOST/CHECK_CUDA fits",
)
BARRIER_IN_DIVERGENT_BRANCH = _define(
    "KC170",
    "barrier-in-divergent-branch",
    Severity.ERROR,
    Language.CPP,
    "`__syncthreads()` or a `cta::` reduction under a thread-dependent branch",
)

# C++/CUDA: what the kernel's accesses can reach, proven by the solver (solver.py).
UNBOUNDED_LOADED_INDEX = _define(
    "KC401",
    "unbounded-loaded-index",
    Severity.ERROR,
    Language.CPP,
    "an index read from a tensor reaches another tensor's offset with no bound on one side",
)
SHARED_WRITE_RACE = _define(
    "KC402",
    "shared-write-race",
    Severity.ERROR,
    Language.CPP,
    "two threads of a block write the same shared-memory element with no barrier between",
)
UNINITIALISED_SHARED_READ = _define(
    "KC403",
    "uninitialised-shared-read",
    Severity.ERROR,
    Language.CPP,
    "a shared-memory read of an element no thread of the block wrote before it",
)
SHARED_READ_WRITE_RACE = _define(
    "KC404",
    "shared-read-write-race",
    Severity.ERROR,
    Language.CPP,
    "one thread of a block reads a shared-memory element another writes with no barrier between",
)
UNGUARDED_NARROWING_CONVERSION = _define(
    "KC405",
    "unguarded-narrowing-conversion",
    Severity.ERROR,
    Language.CPP,
    "a tensor's value reaches an unsaturated conversion to fp8 or an integer with no clamp or guard",
)
ACCESS_PAST_TENSOR_EXTENT = _define(
    "KC406",
    "access-past-tensor-extent",
    Severity.ERROR,
    Language.CPP,
    "a global access the kernel's launch lets reach past its tensor's dims and strides",
)
INDEX_IGNORES_ALLOWED_STRIDE = _define(
    "KC407",
    "index-ignores-allowed-stride",
    Severity.ERROR,
    Language.CPP,
    "a global access lands between a tensor's elements for a stride its matcher allows (a padded view)",
)
VECTOR_ACCESS_MISALIGNED_FOR_ALLOWED_SHAPE = _define(
    "KC408",
    "vector-access-misaligned-for-allowed-shape",
    Severity.ERROR,
    Language.CPP,
    "a vector access is misaligned for a stride or size the launcher lets through, its base aligned",
)

# C++/CUDA: programmatic dependent launch (PDL).
READ_BEFORE_PDL_WAIT = _define(
    "KC201", "read-before-pdl-wait", Severity.ERROR, Language.CPP, "upstream read can execute before PDLWaitPrimary"
)
PDL_WAIT_GAINS_NOTHING = _define(
    "KC202",
    "pdl-wait-gains-nothing",
    Severity.INFO,
    Language.CPP,
    "PDLWaitPrimary is the first statement of the kernel",
)
PDL_LAUNCH_WITHOUT_WAIT = _define(
    "KC203",
    "pdl-launch-without-wait",
    Severity.ERROR,
    Language.CPP,
    "PDL launch of a kernel that never waits (or waits on another flag)",
)
PDL_WAIT_WITHOUT_LAUNCH = _define(
    "KC204",
    "pdl-wait-without-launch",
    Severity.INFO,
    Language.CPP,
    "kernel waits for a PDL primary but no launcher enables PDL",
)
PDL_ASM_MISSING_MEMORY_CLOBBER = _define(
    "KC205",
    "pdl-asm-missing-memory-clobber",
    Severity.ERROR,
    Language.CPP,
    'griddepcontrol.wait asm without a "memory" clobber',
)

# C++/CUDA: documentation, namespaces, source text.
DOXYGEN_MISSING = _define(
    "KC301",
    "doxygen-missing",
    Severity.WARNING,
    Language.CPP,
    "exported kernel/launcher/device function/struct without a Doxygen \\brief",
)
DOXYGEN_PARAM_MISMATCH = _define(
    "KC302",
    "doxygen-param-mismatch",
    Severity.WARNING,
    Language.CPP,
    "Doxygen \\param/\\tparam out of step with the declaration",
)
NON_ASCII_SOURCE = _define(
    "KC310", "non-ascii-source", Severity.ERROR, Language.CPP, "non-ASCII byte in a C++/CUDA source", fixable=True
)
OUTSIDE_NAMESPACE_SGLANG = _define(
    "KC320",
    "outside-namespace-sglang",
    Severity.WARNING,
    Language.CPP,
    "declaration at global namespace scope instead of inside namespace sglang",
)
DETAILS_NAMESPACE_LEAK = _define(
    "KC321",
    "details-namespace-leak",
    Severity.ERROR,
    Language.CPP,
    "another module's `details::` named, or `using namespace details`",
)
PREFER_SGL_DEVICE = _define(
    "KC330",
    "prefer-sgl-device",
    Severity.INFO,
    Language.CPP,
    "`__device__ __forceinline__` spelled out instead of SGL_DEVICE",
    fixable=True,
)

# Python: wrappers, tests and benchmarks.
LRU_CACHE_ON_JIT_FACTORY = _define(
    "KC501",
    "lru-cache-on-jit-factory",
    Severity.ERROR,
    Language.PYTHON,
    "`functools` cache on a function that calls `load_jit` (use `cache_once`)",
)
PER_CALL_VALIDATION = _define(
    "KC502",
    "per-call-validation",
    Severity.WARNING,
    Language.PYTHON,
    "kernel entry point validates its inputs on every call",
)
CI_REGISTRATION_NOT_LITERAL = _define(
    "KC503",
    "ci-registration-not-literal",
    Severity.ERROR,
    Language.PYTHON,
    "CI registration that the AST collector cannot read",
)
REGISTERED_TEST_IN_PACKAGE = _define(
    "KC504",
    "registered-test-in-package",
    Severity.ERROR,
    Language.PYTHON,
    "`register_*_ci(...)` in a file under the package source root",
)
BENCHMARK_BYPASSES_MARKER = _define(
    "KC505",
    "benchmark-bypasses-marker",
    Severity.WARNING,
    Language.PYTHON,
    "benchmark calls `triton.testing` directly instead of the `marker` framework",
)
TEST_WITHOUT_CI_REGISTRATION = _define(
    "KC506",
    "test-without-ci-registration",
    Severity.ERROR,
    Language.PYTHON,
    "registered test or benchmark without a module-level `register_*_ci(...)`",
)

# Build: `kernel-check build` (nvcc and ptxas over every declared instantiation).
COMPILE_ERROR = _define(
    "KC600",
    "compile-error",
    Severity.ERROR,
    Language.BUILD,
    "an instantiation named by a spec or wrapper fails to compile",
)
REGISTER_BUDGET = _define(
    "KC601",
    "register-budget",
    Severity.WARNING,
    Language.BUILD,
    "a kernel uses more registers per thread than its budget",
)
REGISTER_SPILL = _define(
    "KC602", "register-spill", Severity.WARNING, Language.BUILD, "ptxas reports spill stores or loads for a kernel"
)

# Dynamic (`kernel-check test`): the kernel did not finish.
KERNEL_FAULT = _define(
    "KD001",
    "kernel-fault",
    Severity.ERROR,
    Language.DYNAMIC,
    "the kernel faulted (illegal address, misaligned address, trap) on a valid input",
)
KERNEL_HANG = _define(
    "KD002",
    "kernel-hang",
    Severity.ERROR,
    Language.DYNAMIC,
    "the kernel made no progress within the timeout and was killed",
)

# Dynamic: results.
RESULT_MISMATCH = _define(
    "KD101", "result-mismatch", Severity.ERROR, Language.DYNAMIC, "output differs from the reference beyond tolerance"
)
OUTPUT_NOT_WRITTEN = _define(
    "KD102", "output-not-written", Severity.ERROR, Language.DYNAMIC, "an output element still holds the poison value"
)
NONDETERMINISTIC = _define(
    "KD103", "nondeterministic", Severity.ERROR, Language.DYNAMIC, "two runs on identical inputs differ bitwise"
)
INPUT_MODIFIED = _define(
    "KD104",
    "input-modified",
    Severity.ERROR,
    Language.DYNAMIC,
    "a tensor not declared in-place or output changed during the call",
)
NAN_FROM_FINITE = _define(
    "KD105",
    "nan-from-finite-input",
    Severity.ERROR,
    Language.DYNAMIC,
    "an output holds NaN on finite inputs (all zeros, all equal) where ordinary inputs give none",
)

# Dynamic: compute-sanitizer.
MEMCHECK = _define(
    "KD201",
    "memcheck",
    Severity.ERROR,
    Language.DYNAMIC,
    "compute-sanitizer memcheck reports an invalid or misaligned access",
)
RACECHECK = _define("KD202", "racecheck", Severity.ERROR, Language.DYNAMIC, "racecheck reports a shared-memory hazard")
INITCHECK = _define(
    "KD203", "initcheck", Severity.ERROR, Language.DYNAMIC, "initcheck reports a read of uninitialized global memory"
)
SYNCCHECK = _define("KD204", "synccheck", Severity.ERROR, Language.DYNAMIC, "synccheck reports an invalid barrier use")

# Dynamic: bad inputs.
BAD_INPUT_NOT_REJECTED = _define(
    "KD301",
    "bad-input-not-rejected",
    Severity.ERROR,
    Language.DYNAMIC,
    "a bad input is not rejected with a clear host-side error",
)

# Dynamic: launch context (PDL, stream, CUDA graph).
PDL_STALE_READ = _define(
    "KD401",
    "pdl-stale-read",
    Severity.ERROR,
    Language.DYNAMIC,
    "with PDL, a result differs when the producer writes the inputs late",
)
WRONG_STREAM = _define(
    "KD402", "wrong-stream", Severity.ERROR, Language.DYNAMIC, "the kernel does not run on the caller's current stream"
)
CUDA_GRAPH = _define(
    "KD403",
    "cuda-graph",
    Severity.ERROR,
    Language.DYNAMIC,
    "the call cannot be captured in a CUDA graph, or a replay differs from eager",
)

# Dynamic: performance.
BANDWIDTH_BELOW_FLOOR = _define(
    "KD501",
    "bandwidth-below-floor",
    Severity.INFO,
    Language.DYNAMIC,
    "a memory-bound kernel reaches less than the floor of the copy bandwidth",
)
