"""The checked file's cursors, read from libclang once and shared by every extraction pass.

The passes (declarations, launch sites, launcher, data-flow and integer facts) each walk
the same function bodies. Through the bindings, every `get_children()` is a C visit with a
Python callback and a new `Cursor` object per child, so five walks over fresh objects cost
five times the C calls of one; and every read of a cursor property (`spelling`, `extent`,
`referenced`...) passes the bindings' null-cursor guard before it looks at the answer they
keep on the object, which costs more than the lookup itself.

`share_reads` changes that, keeping every answer the bindings give:

* `Cursor.get_children` keeps its answer on the cursor object: a subtree is read from
  libclang once, and every later walk, in any pass, gets the same objects back, with what
  was already read of them; the read itself goes through one visitor callback made once
  (the bindings make a new C callback per call, behind the null-cursor guard);
* so that the preamble's check of a parse (`preamble._sees_outside`, which walks the
  file's cursors) and every pass walk the same objects, `TranslationUnit.cursor` answers
  the same root cursor object as long as one is alive (`parse.ParsedUnit.root` holds it
  for the file's pipeline). The translation unit keeps only a weak reference to it: the
  root references the unit (`_tu`), and a strong reference back would be a cycle that
  holds every parsed AST until a full collection. A pass that starts again from
  `tu.cursor` (a lambda's calls looked up in the whole file, once per parameter) used to
  get a fresh root and read the file's top level, headers included, from libclang again;
* the properties the bindings cache per object (and a cursor's `kind`, a source
  location's file, line, column and offset) return the kept answer without the guard (a
  kept answer exists only for a cursor the guard let through before), and without a
  Python call: the answer is stored as the object's own attribute;
* `SourceRange.start` / `.end` and `File.name` keep theirs too (each read is a C call
  and a new object or string otherwise).

A translation unit's AST never changes, so a kept answer is always the current one; it
lives as long as the object that keeps it (a file's cursors live as long as its
translation unit). `parse.cindex()` installs it when it loads the bindings.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from typing import Any

# Cursor properties whose getter caches its answer on the object (an AST node's spelling,
# extent, type... never change): answered from the object after the first read.
KEPT_CURSOR_PROPERTIES = (
    "kind",
    "spelling",
    "displayname",
    "mangled_name",
    "location",
    "extent",
    "type",
    "canonical",
    "result_type",
    "underlying_typedef_type",
    "enum_type",
    "hash",
    "semantic_parent",
    "lexical_parent",
    "referenced",
)
KEPT_LOCATION_PROPERTIES = ("file", "line", "column", "offset")
_INSTALLED = "_kernel_check_shares_reads"
ORIGINALS: dict[tuple[type, str], Any] = {}  # (class, name) -> the bindings' own (the tests compare)


def share_reads(module: Any) -> None:
    """Install the shared reads (see the module doc) on the bindings `module`. Idempotent."""
    if getattr(module.Cursor, _INSTALLED, False):
        return
    _keep_children(module)
    _keep_root(module)
    for name in KEPT_CURSOR_PROPERTIES:
        _keep_property(module.Cursor, name)
    for name in ("start", "end"):
        _keep_property(module.SourceRange, name)
    for name in KEPT_LOCATION_PROPERTIES:
        _keep_property(module.SourceLocation, name)
    _keep_property(module.File, "name")
    setattr(module.Cursor, _INSTALLED, True)


class _Kept:
    """A property read once per object: the first read goes to the bindings' getter (null
    guard included) and stores the answer in the object's `__dict__` under the same name.
    Being a non-data descriptor (no `__set__`), it is then shadowed by that entry: a later
    read is a plain attribute lookup, with no Python call at all."""

    def __init__(self, read: Any, name: str, doc: str | None) -> None:
        self.read = read
        self.name = name
        self.__doc__ = doc

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.read(instance)
        return value


def _keep_property(cls: type, name: str) -> None:
    """`cls.name` answered once per object (`_Kept`)."""
    original = getattr(cls, name, None)
    if not isinstance(original, property) or original.fget is None:
        return  # an unexpected bindings build: leave it as it is
    ORIGINALS[cls, name] = original
    setattr(cls, name, _Kept(original.fget, name, original.__doc__))


def _keep_children(module: Any) -> None:
    """`Cursor.get_children()` read once per object; each call iterates over the kept list.
    The first read visits the children as the bindings do (each child keeps a reference to
    the translation unit, so it is not freed before its cursors)."""
    cls = module.Cursor
    original = ORIGINALS[cls, "get_children"] = cls.get_children
    visit_children = module.conf.lib.clang_visitChildren

    def collect(child: Any, _parent: Any, found: list[Any]) -> int:
        found.append(child)
        return 1  # CXChildVisit_Continue

    callback = module.cursor_visit_callback(collect)  # one C callback for every read

    def get_children(self: Any) -> Iterator[Any]:
        known = self.__dict__
        kept = known.get("_kernel_check_children")
        if kept is None:
            if self.is_null():
                raise Exception("Tried calling method on a null-cursor.")  # as the bindings' guard
            kept = []
            visit_children(self, callback, kept)
            unit = known.get("_tu")
            for child in kept:
                child._tu = unit
            known["_kernel_check_children"] = kept
        return iter(kept)

    get_children.__doc__ = original.__doc__
    cls.get_children = get_children


_ROOT = "_kernel_check_root"


def _keep_root(module: Any) -> None:
    """`TranslationUnit.cursor` answers the root cursor object that is still alive, if any
    (a weak reference on the unit: see the module doc), else reads a new one."""
    cls = module.TranslationUnit
    original = getattr(cls, "cursor", None)
    if not isinstance(original, property) or original.fget is None:
        return  # an unexpected bindings build: leave it as it is
    ORIGINALS[cls, "cursor"] = original
    read = original.fget

    def cursor(self: Any) -> Any:
        known = self.__dict__
        kept = known.get(_ROOT)
        root = kept() if kept is not None else None
        if root is None:
            root = read(self)
            known[_ROOT] = weakref.ref(root)
        return root

    cls.cursor = property(cursor, doc=original.__doc__)
