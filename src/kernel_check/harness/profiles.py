"""Adversarial value profiles: inputs where random normal values never go (no torch here).

Per input tensor, the harness runs the kernel on a few extra value profiles besides the
spec's ``init``: for floating inputs zeros, all-equal values (ties), a few huge
magnitudes, a few +-inf, a few NaN, subnormals; for index tensors (``init`` ``perm:``,
``randint:`` or ``cumsum:``) all-equal ids (duplicates), ids at the ends of the valid range, and ids
beyond it (negative and ``== n``). Both integer widths a launcher accepts are covered by
an instantiation whose ``dtypes`` lists both (every case runs per choice).

What a profile must satisfy is its contract, declared per tensor
(``Tensor(profiles={"nan": "match", "oob": "off"})``):

- ``match``: results equal the reference's on these values (the reference says what NaN
  in gives, which ids are skipped); without a reference it degrades to ``safe``;
- ``safe``: no comparison, but no fault, no out-of-bounds or uninitialized access (the
  profile runs under memcheck and initcheck too), every output written, runs bitwise
  equal, inputs unchanged, and after ``zeros`` or ``equal`` no NaN in an output that the
  ordinary inputs of the same sizes leave free of NaN (KD105); a host-side error from the
  launcher is an acceptable answer;
- ``reject``: the launcher must raise a host-side error (KD301);
- ``off``: the caller guarantees such values never reach the kernel; not run.

The defaults compare with the reference only where the values stay ordinary (zeros,
ties, in-range ids); every other profile is ``safe``, which no correct kernel fails, and
which reports a kernel that reads uninitialized memory, leaves outputs unwritten or
indexes out of bounds under such values, with the profile that exposed it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FLOAT_PROFILES = ("zeros", "equal", "huge", "inf", "nan", "subnormal")
INDEX_PROFILES = ("dup", "edge", "oob")
PROFILES = FLOAT_PROFILES + INDEX_PROFILES
# ``init`` presets whose values index a dimension (``randint:n``): the index profiles apply
INDEX_PRESETS = ("perm", "randint", "cumsum")
CONTRACTS = ("match", "safe", "reject", "off")
# profiles whose values stay ordinary: compared with the reference by default
_ORDINARY = {"zeros", "equal", "dup", "edge"}
# profiles of finite values no kernel needs to turn into NaN: under ``safe``, an output NaN
# that the ordinary inputs never give is KD105 (a missing guard: rsqrt(0), 0/0)
FINITE_PROFILES = ("zeros", "equal")
# dtypes without an infinity (e4m3fn saturates to NaN)
_NO_INF = {"float8_e4m3fn"}
# the tools that run profiles too (racecheck and synccheck see no value-dependent bug), and
# the profiles they run: those that steer addresses or data-dependent branches (the others
# change values, not which memory a kernel touches)
SANITIZER_TOOLS = ("memcheck", "initcheck")
SANITIZER_PROFILES = ("nan", *INDEX_PROFILES)


@dataclass(frozen=True)
class ValueProfile:
    """One tensor's values replaced by one profile, judged by one contract."""

    tensor: str
    name: str
    contract: str

    @property
    def label(self) -> str:
        return f"{self.tensor}={self.name} ({self.contract})"


def sanitized(profile: ValueProfile) -> bool:
    """Whether memcheck and initcheck run this profile (``reject`` launches nothing)."""
    return profile.name in SANITIZER_PROFILES and profile.contract != "reject"


def check_profile(profile: str, contract: str) -> str:
    """The problem with one ``profiles`` entry of a spec ("" when there is none)."""
    if profile not in PROFILES:
        return f"unknown value profile {profile!r} (one of {', '.join(PROFILES)})"
    if contract not in CONTRACTS:
        return f"profile {profile!r}: unknown contract {contract!r} (one of {', '.join(CONTRACTS)})"
    return ""


def index_bound(init: object) -> str | None:
    """The dimension an index tensor's ids stay below (``randint:n`` -> ``n``), else None."""
    if not isinstance(init, str):
        return None
    preset, _, dim = init.partition(":")
    return dim if preset in INDEX_PRESETS and dim else None


def applicable(init: object, dtype: str) -> tuple[str, ...]:
    """The profiles that make sense for a tensor of this ``init`` and dtype."""
    if index_bound(init) is not None:
        signed = dtype.startswith("int")
        return tuple(p for p in INDEX_PROFILES if signed or p != "oob")
    if not dtype.startswith(("float", "bfloat")):
        return ()
    return tuple(p for p in FLOAT_PROFILES if not (p == "inf" and dtype in _NO_INF))


def default_contract(profile: str, init: object, has_reference: bool) -> str:
    if profile == "dup" and isinstance(init, str) and init.startswith("perm"):
        return "off"  # the spec asked for distinct ids: duplicates break its own contract
    if profile in _ORDINARY and has_reference:
        return "match"
    return "safe"


def contract_of(declared: Mapping[str, str], profile: str, init: object, has_reference: bool) -> str:
    """The declared contract (``match`` without a reference degrades to ``safe``), else the default."""
    contract = declared.get(profile) or default_contract(profile, init, has_reference)
    return "safe" if contract == "match" and not has_reference else contract
