"""The `junit` format: JUnit XML for CI test-report viewers.

`testsuites` > one `testsuite` "kernel-check" > one failing `testcase` per finding, its file as the
classname; a clean run has one passing testcase so the report is never empty.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..finding import Finding
from .common import Context, position, rule_title
from .text import headline, note_line

SUITE = "kernel-check"

# characters XML 1.0 cannot carry at all, escaped or not (ANSI escapes in compiler output...)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _failure_text(finding: Finding, ctx: Context) -> str:
    lines = [headline(finding, ctx.path(finding.path))]
    lines += [note_line(r, ctx.path(r.location.path)) for r in finding.related]
    lines += finding.detail.rstrip().splitlines()
    return "\n".join(lines)


def _testcase(suite: ET.Element, finding: Finding, ctx: Context) -> None:
    path = ctx.path(finding.path)
    name = f"{rule_title(finding)} at {position(path, finding.location)}"
    case = ET.SubElement(suite, "testcase", name=_xml_text(name), classname=_xml_text(path))
    failure = ET.SubElement(case, "failure", message=_xml_text(finding.message), type=finding.code)
    failure.text = _xml_text(_failure_text(finding, ctx))


def render(findings: list[Finding], ctx: Context) -> str:
    tests, failures = str(max(len(findings), 1)), str(len(findings))
    counts = {"tests": tests, "failures": failures, "errors": "0"}
    root = ET.Element("testsuites", {"name": SUITE, **counts})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, **counts, "skipped": "0"})
    for finding in findings:
        _testcase(suite, finding, ctx)
    if not findings:
        ET.SubElement(suite, "testcase", name="no findings", classname=SUITE)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
