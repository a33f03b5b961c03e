"""The `sarif` format: one SARIF 2.1.0 log with a single run, for code scanning.

Columns are reported as given with `columnKind: unicodeCodePoints` (SARIF 3.14.27 requires the
property). Fix edits are byte ranges; SARIF prefers text replacements (3.57), so each becomes a
`charOffset`/`charLength` region with `insertedContent.text` when the file is valid UTF-8 up to the
edit, and a binary region (`byteOffset`/`byteLength`, `insertedContent.binary`) otherwise.
`partialFingerprints` hash the path, the code and the whitespace-normalized source line (plus an
occurrence count), not the line number, so a result keeps its identity when lines move. A
static finding's witness (`finding.Counterexample`) is the result's `properties.witness`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .. import __version__
from ..finding import Finding, Location, Related, Severity, TextEdit
from ..paths import root_relative
from ..registry import RuleMeta
from .common import PROJECT_URL, Context, rule_meta

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "kernelCheckLineHash/v1"
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}

JSON = dict[str, Any]


def rule_help_uri(code: str) -> str:
    return f"{PROJECT_URL}/blob/main/docs/rules/{code}.md"


def _rule(meta: RuleMeta) -> JSON:
    descriptor: JSON = {
        "id": meta.code,
        "name": meta.name,
        "shortDescription": {"text": meta.summary or meta.name},
    }
    if meta.doc:
        descriptor["fullDescription"] = {"text": meta.doc, "markdown": meta.doc}
        descriptor["help"] = {"text": meta.doc, "markdown": meta.doc}
    descriptor["defaultConfiguration"] = {"level": LEVEL[meta.severity]}
    descriptor["helpUri"] = rule_help_uri(meta.code)
    return descriptor


def _file_uri(path: str | Path) -> str:
    return Path(os.path.abspath(path)).as_uri()


def _artifact(path: str, ctx: Context) -> JSON:
    """A repo-relative URI against %SRCROOT%, or an absolute file URI outside the root."""
    relative = root_relative(path, ctx.root)
    if relative is None:
        return {"uri": _file_uri(path)}
    return {"uri": quote(relative), "uriBaseId": SRCROOT}


def _region(location: Location) -> JSON:
    """startLine/startColumn, plus the end where it is known and not before the start."""
    region: JSON = {"startLine": location.line, "startColumn": max(location.column, 1)}
    end = (location.end_line or location.line, location.end_column or 1)
    if end < (location.line, location.column):
        return region
    if location.end_line is not None:
        region["endLine"] = location.end_line
    if location.end_column is not None:
        region["endColumn"] = end[1]
    return region


def _physical(location: Location, ctx: Context) -> JSON:
    physical: JSON = {"artifactLocation": _artifact(location.path, ctx)}
    if location.line >= 1:
        physical["region"] = _region(location)
    return physical


def _replacement(edit: TextEdit, path: str, ctx: Context) -> JSON:
    """A text replacement where the edit's bytes map to characters, else a binary one."""
    start, end = ctx.sources.char_offset(path, edit.start), ctx.sources.char_offset(path, edit.end)
    if start is not None and end is not None and start <= end:
        region: JSON = {"charOffset": start, "charLength": end - start}
        content: JSON = {"text": edit.replacement}
    else:
        region = {"byteOffset": edit.start, "byteLength": edit.end - edit.start}
        content = {"binary": base64.b64encode(edit.replacement.encode()).decode("ascii")}
    replacement: JSON = {"deletedRegion": region}
    if edit.replacement:
        replacement["insertedContent"] = content
    return replacement


def _fixes(finding: Finding, ctx: Context) -> list[JSON]:
    if finding.fix is None or not finding.fix.edits:
        return []
    change = {
        "artifactLocation": _artifact(finding.path, ctx),
        "replacements": [_replacement(e, finding.path, ctx) for e in finding.fix.edits],
    }
    return [{"description": {"text": finding.fix.description}, "artifactChanges": [change]}]


def _fingerprints(findings: list[Finding], ctx: Context) -> list[str]:
    """`hash:n` per finding: n counts identical (path, code, line text) triples in order."""
    seen: Counter[str] = Counter()
    prints = []
    for finding in findings:
        text = " ".join(ctx.sources.line_of(finding).split())
        key = "\0".join((ctx.path(finding.path), finding.code, text))
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        seen[digest] += 1
        prints.append(f"{digest}:{seen[digest]}")
    return prints


def _related(index: int, related: Related, ctx: Context) -> JSON:
    return {
        "id": index,
        "physicalLocation": _physical(related.location, ctx),
        "message": {"text": related.message},
    }


def _result(finding: Finding, rule_index: int, fingerprint: str, ctx: Context) -> JSON:
    result: JSON = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": _physical(finding.location, ctx)}],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
    }
    if finding.related:
        result["relatedLocations"] = [_related(i, r, ctx) for i, r in enumerate(finding.related)]
    if fixes := _fixes(finding, ctx):
        result["fixes"] = fixes
    properties: JSON = {}
    if finding.detail:
        properties["detail"] = finding.detail
    if finding.witness is not None:
        properties["witness"] = finding.witness.as_json()
    if properties:
        result["properties"] = properties
    return result


def render(findings: list[Finding], ctx: Context) -> str:
    first_of_code: dict[str, Finding] = {}
    for finding in findings:
        first_of_code.setdefault(finding.code, finding)
    codes = sorted(first_of_code)
    index = {code: i for i, code in enumerate(codes)}
    fingerprints = _fingerprints(findings, ctx)
    driver = {
        "name": "kernel-check",
        "version": __version__,
        "informationUri": PROJECT_URL,
        "rules": [_rule(rule_meta(first_of_code[code])) for code in codes],
    }
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {SRCROOT: {"uri": _file_uri(ctx.root).rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index[f.code], fp, ctx) for f, fp in zip(findings, fingerprints, strict=True)],
    }
    log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False)
