"""``--shard K/N``: one of N disjoint parts of a run's instantiations, for N CI runners.

The unit is an instantiation as a spec declares it (its run-time dtype choices stay
together: they share one build), named by the spec's name and ``Instantiation.key``
(template arguments with their types, dtypes, PDL); a wrapper's manifest instantiation that
no spec builds (``kernel-check build``) is named by its label (``WRAPPER:SYMBOL``). Shard K
holds the instantiations whose name's SHA-256, read as a number, is K - 1 modulo N: the
same on every machine and in every Python process (no ``hash()``, whose salt changes per
process), and a name's shard depends on nothing else, so adding a spec or an instantiation
moves no other one. The price is balance: shards hold about, not exactly, 1/N each.
"""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..build import BuildTarget
from .spec import Instantiation, KernelSpec

_SHARD = re.compile(r"(\d+)/(\d+)")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, name: str) -> bool:
        digest = hashlib.sha256(name.encode("utf-8")).digest()
        return int.from_bytes(digest, "big") % self.count == self.index - 1


def parse_shard(value: str) -> Shard:
    """An argparse ``type``: ``K/N`` with 1 <= K <= N."""
    match = _SHARD.fullmatch(value.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"expected K/N (shard K of N, 1 <= K <= N), got {value!r}")
    index, count = int(match[1]), int(match[2])
    if not 1 <= index <= count:
        raise argparse.ArgumentTypeError(f"shard {value!r}: K must be between 1 and N (K/N, counted from 1)")
    return Shard(index, count)


def instantiation_name(spec: KernelSpec, inst: Instantiation) -> str:
    """What places a spec's instantiation in a shard."""
    return f"{spec.name} {inst.key}"


def shard_specs(specs: Sequence[KernelSpec], shard: Shard) -> list[KernelSpec]:
    """Each spec with only this shard's instantiations; specs left with none are dropped."""
    narrowed = (
        spec.narrowed({i.key for i in spec.instantiations if shard.holds(instantiation_name(spec, i))})
        for spec in specs
    )
    return [spec for spec in narrowed if spec.instantiations]


def shard_targets(targets: Sequence[BuildTarget], shard: Shard) -> list[BuildTarget]:
    """The wrapper instantiations (``WRAPPER:SYMBOL``) of this shard."""
    return [target for target in targets if shard.holds(target.label)]


def instantiation_count(specs: Sequence[KernelSpec]) -> int:
    return sum(len(spec.instantiations) for spec in specs)
