"""What a launcher that checks its tensors by hand says about them (no ``TensorMatcher``).

FlashInfer-style launchers verify each ``TensorView`` with macros and comparisons::

    CHECK_DIM(3, q);                                  // rank
    TVM_FFI_ICHECK_EQ(k.size(0), q.size(0));          // a shared dimension
    unsigned int batch_size = indptr.size(0) - 1;     // a named dimension
    TVM_FFI_ICHECK_EQ(lens.size(0), batch_size);
    TVM_FFI_ICHECK(out.size(1) == K / 2);             // a derived dimension
    TVM_FFI_ICHECK(K % kBlock == 0);                  // a divisibility requirement
    CHECK_INPUT_TYPE(ids, dl_int32);                  // a dtype
    DISPATCH_DLPACK_DTYPE_TO_CTYPE_FP16(q.dtype(), c_type, ...)  // a dtype family

These macros are defined in the kernel tree's own headers, which the static parse often does
not reach (an unexpanded macro is no AST), so they are read from the launcher's text: each
check's operands are C++ expressions over ``t.size(i)`` / ``t.shape()[i]``, locals, integer
literals and named constants, evaluated here with Python's ``ast`` after a light rewrite.
Dimensions that a check equates share one symbol; one pinned by a literal, a ``constexpr``
(``constants``) or a template parameter gets that value or name; one that equals an
expression of others is drafted as that expression (``"batch_size+1"``). The rank of a
tensor nothing checks the rank of is the highest dimension the launcher reads, plus one.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..includes import find_include, include_lines
from .draft_model import CPP_DTYPES
from .spec import dim_size

# DLPack dtype constants -> the harness's dtype names
DL_DTYPES = {
    "dl_float16": "float16",
    "dl_bfloat16": "bfloat16",
    "dl_float32": "float32",
    "dl_float64": "float64",
    "dl_float8_e4m3fn": "float8_e4m3fn",
    "dl_float8_e5m2": "float8_e5m2",
    "dl_int8": "int8",
    "dl_int16": "int16",
    "dl_int32": "int32",
    "dl_int64": "int64",
    "dl_uint8": "uint8",
    "dl_bool": "bool",
}
# a dispatch macro's name -> the dtypes its cases take (the first is drafted): each family its
# name spells, in this order (``..._FP16_FP8`` takes both), else the generic ``..._DTYPE...``
# (FlashInfer's DISPATCH_DLPACK_*, sglang's and PyTorch's DISPATCH_*_TYPES)
_DISPATCH_FAMILIES = (
    ("IDTYPE", ("int32", "int64")),
    ("FP32_FP16", ("float32", "float16", "bfloat16")),
    ("FP16", ("float16", "bfloat16")),
    ("FP8", ("float8_e4m3fn", "float8_e5m2")),
)
_DISPATCH_GENERIC = ("DTYPE", ("float16", "bfloat16", "float32"))

_EQUALITY_MACRO = re.compile(r"\b(\w*CHECK_EQ)\s*\(")
# a check of a condition: TVM_FFI_ICHECK, TORCH_CHECK, RuntimeCheck, a tree's own *_CHECK, assert
_CONDITION_MACRO = re.compile(r"\b(\w*(?:CHECK|Check)|assert)\s*\(")
# ``t.size(i)``, ``t.stride(i)``, ``t.shape()[i]``, ``t.sizes()[i]``, ``t.strides()[i]``
_DIM_ACCESS = re.compile(
    r"\b(\w+)\s*(?:\.|->)\s*(?:size|stride|(?:shape|sizes|strides)\s*\(\s*\)\s*\[)"
    r"\s*\(?\s*(-?\d+)\s*[)\]]"
)
_SIZE_ACCESS = re.compile(
    r"\b(\w+)\s*(?:\.|->)\s*(?:size\s*\(\s*(-?\d+)\s*\)|(?:shape|sizes)\s*\(\s*\)\s*\[\s*(-?\d+)\s*\])"
)
# ``static_cast<const T*>(x.data_ptr())``: the element type the launcher reads x as
_CAST = re.compile(
    r"\b(?:static_cast|reinterpret_cast)\s*<\s*(const\s+)?([\w:]+)\s*(const\s*)?\*\s*>"
    r"\s*\(\s*(\w+)\s*\.\s*data_ptr\s*\(\s*\)\s*\)"
)
_C_CAST = re.compile(
    r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?(?:int|long|long long|u?int64_t|u?int32_t|size_t)\s*\)"
)
_STATIC_CAST = re.compile(r"\bstatic_cast\s*<[^<>]*>")
_ALIAS = re.compile(r"(?:^|(?<=[;{}]))\s*(?:const\s+)?(?:[\w:]+\s+)*(\w+)\s*=\s*([^;={}][^;{}]*);")
_CONSTANT = re.compile(
    r"\bconstexpr\s+(?:static\s+)?(?:[\w:]+\s+)+(\w+)\s*=\s*(\d+)\s*;|#\s*define\s+(\w+)\s+\(?(\d+)\)?\s*$", re.M
)
_SHAPE_MACROS = re.compile(r"\b(CHECK_DIM|CHECK_SHAPE|CHECK_INPUT_TYPE|CHECK_INPUT_AND_TYPE|CHECK_SAME_DTYPE)\s*\(")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_NODE = "N__"  # an ``x.size(i)`` rewritten as a name: N__x__i (``m1`` for -1)
_MAX_DEPTH = 8


def dispatch_family(macro: str) -> tuple[str, ...]:
    """The dtypes a dispatch macro's cases take, by its name (``()``: not a dtype dispatch)."""
    found: list[str] = []
    for key, types in _DISPATCH_FAMILIES:
        if key in macro:
            found += types
            macro = macro.replace(key, "")
    if not found and _DISPATCH_GENERIC[0] in macro:
        found += _DISPATCH_GENERIC[1]
    return tuple(dict.fromkeys(found))


def clean(text: str) -> str:
    """Comments and string literals blanked out (a message's ``==`` is no comparison)."""
    return _STRING.sub('""', _COMMENT.sub(" ", text))


def constants_of(source: Path, include_dirs: tuple[Path, ...]) -> dict[str, int]:
    """Integer ``constexpr`` globals and ``#define``s of ``source`` and of the headers it
    includes (beside it or in ``include_dirs``, one level): what pins a checked dimension."""
    found: dict[str, int] = {}
    files = [source]
    for header, _quoted in include_lines(source.read_bytes()):
        included = find_include(header, True, source, include_dirs)  # beside it first, however spelled
        if included is not None:
            files.append(included)
    for path in files:
        for match in _CONSTANT.finditer(clean(path.read_text(encoding="utf-8", errors="replace"))):
            name, value = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
            found.setdefault(name, int(value))
    return found


@dataclass
class HandChecks:
    """What the checks say about each tensor; ``shape`` gives the drafted dimensions."""

    ranks: dict[str, int] = field(default_factory=dict)
    dtypes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the first is drafted
    divisible: dict[str, int] = field(default_factory=dict)  # axis -> a multiple it must be
    shapes: dict[str, tuple[str | int, ...]] = field(default_factory=dict)
    casts: dict[str, str] = field(default_factory=dict)  # tensor -> the C++ type its data is cast to
    mutable: set[str] = field(default_factory=set)  # tensors whose data is cast to a non-const pointer


def call_arguments(text: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments of the call whose ``(`` is just before ``start``."""
    depth, parts, current = 1, [], start
    for index in range(start, len(text)):
        char = text[index]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                parts.append(text[current:index])
                return [p.strip() for p in parts], index
        elif char == "," and depth == 1:
            parts.append(text[current:index])
            current = index + 1
    return [], len(text)


_FUNCTION_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", re.M)
_PASTE = re.compile(r"\s*##\s*")


def expanded_invocation(text: str, start: int) -> str | None:
    """The text a function-like macro invoked at ``start`` expands to, with its arguments
    put in (``##`` pasted, ``#x`` quoted; macros inside are left as written): what a
    function the macro defines says, for a launcher whose code is all in one ``FFI_OP(...)``
    line. None when ``start`` holds no invocation of a macro ``text`` defines."""
    call = re.compile(r"(\w+)\s*\(").match(text, start)
    if call is None:
        return None
    definition = next((d for d in _FUNCTION_MACRO.finditer(text) if d.group(1) == call.group(1)), None)
    if definition is None:
        return None
    args, _ = call_arguments(text, call.end())
    params = [p.strip() for p in definition.group(2).split(",") if p.strip()]
    values = dict(zip(params, args))
    if params and params[-1] == "...":
        values["__VA_ARGS__"] = ", ".join(args[len(params) - 1 :])
    body = definition.group(3).replace("\\\n", "\n")

    def put(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in values:
            return match.group(0)
        return f'"{values[name]}"' if match.group(1) else values[name]

    return _PASTE.sub("", re.sub(r"(?<!#)(#\s*)?\b(\w+)\b", put, body))


def _calls(text: str, pattern: re.Pattern[str]) -> Iterator[tuple[str, list[str]]]:
    for match in pattern.finditer(text):
        args, _ = call_arguments(text, match.end())
        if args:
            yield match.group(1), args


class _Reader:
    def __init__(self, tensors: list[str], constants: Mapping[str, int], params: set[str]) -> None:
        self.tensors = list(tensors)
        self.constants = constants
        self.params = params
        self.parent: dict[str, str] = {}
        self.pinned: dict[str, str | int] = {}  # class root -> a literal, constant or parameter
        self.derived: dict[str, ast.expr] = {}  # atom -> an expression over other atoms
        self.aliases: list[str] = []  # locals naming a dimension, in the order written
        self.divisors: list[tuple[str, int]] = []  # (atom, what it must be a multiple of)
        self.same_dtype: list[tuple[str, str]] = []
        self.same_shape: list[tuple[str, str]] = []
        self.result = HandChecks()

    # -- atoms: ``N__t__i`` for a tensor's dimension, a local's name for a local --
    def find(self, atom: str) -> str:
        while self.parent.get(atom, atom) != atom:
            atom = self.parent[atom]
        return atom

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            if rb in self.pinned:
                self.pinned.setdefault(ra, self.pinned.pop(rb))

    def expression(self, text: str) -> ast.expr | None:
        """A dimension expression as a Python tree over atoms, or None when it is none."""
        text = _STATIC_CAST.sub("", _C_CAST.sub("", text))

        def node(match: re.Match[str]) -> str:
            index = match.group(2) or match.group(3)
            return f"{_NODE}{match.group(1)}__{index.replace('-', 'm')}" if match.group(1) in self.tensors else "_"

        text = _SIZE_ACCESS.sub(node, text).replace("/", "//")
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError:
            return None
        for part in ast.walk(tree):
            if isinstance(part, ast.Name) and part.id == "_":
                return None
            if not isinstance(
                part, (ast.Name, ast.Constant, ast.BinOp, ast.Load, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)
            ):
                return None
        return tree

    def is_atom(self, tree: ast.expr) -> bool:
        return isinstance(tree, ast.Name) and (tree.id.startswith(_NODE) or tree.id in self.aliases)

    def pin_value(self, tree: ast.expr) -> str | int | None:
        if isinstance(tree, ast.Constant) and isinstance(tree.value, int) and tree.value > 0:
            return tree.value
        if isinstance(tree, ast.Name) and tree.id in self.params:
            return tree.id
        if isinstance(tree, ast.Name) and tree.id in self.constants:
            return self.constants[tree.id]
        return None

    def equate(self, left: ast.expr, right: ast.expr) -> None:
        for a, b in ((left, right), (right, left)):
            if not self.is_atom(a):
                continue
            assert isinstance(a, ast.Name)
            if self.is_atom(b):
                assert isinstance(b, ast.Name)
                self.union(a.id, b.id)
                return
            value = self.pin_value(b)
            if value is not None:
                self.pinned.setdefault(self.find(a.id), value)
                return
            names = self._names(b)
            known = all(self.is_atom(ast.Name(n)) or n in self.params or n in self.constants for n in names)
            if isinstance(b, ast.BinOp) and names and known:
                self.derived.setdefault(a.id, b)
                return

    def atoms(self, tree: ast.expr) -> list[str]:
        return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and self.is_atom(n)]

    def define(self, name: str, tree: ast.expr) -> None:
        """A local initialized from the tensors' dimensions (the first assignment counts)."""
        if name in self.aliases or not any(n.startswith(_NODE) or n in self.aliases for n in self._names(tree)):
            return
        self.aliases.append(name)
        if self.is_atom(tree):
            assert isinstance(tree, ast.Name)
            self.union(tree.id, name)
            return
        # ``n = t.size(0) - 1`` names n; t.size(0) is then ``n + 1``
        if (
            isinstance(tree, ast.BinOp)
            and isinstance(tree.op, (ast.Add, ast.Sub))
            and isinstance(tree.left, ast.Name)
            and self.is_atom(tree.left)
            and isinstance(tree.right, ast.Constant)
            and isinstance(tree.right.value, int)
        ):
            inverse = ast.Sub() if isinstance(tree.op, ast.Add) else ast.Add()
            self.derived.setdefault(tree.left.id, ast.BinOp(ast.Name(name), inverse, tree.right))
            return
        self.derived.setdefault(name, tree)

    @staticmethod
    def _names(tree: ast.expr) -> list[str]:
        return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]

    def condition(self, text: str) -> None:
        for clause in text.split("&&"):
            clause = _unwrap(clause)
            sides = clause.split("==")
            if len(sides) == 2:
                self.compare(_unwrap(sides[0]), _unwrap(sides[1]))

    def compare(self, a: str, b: str) -> None:
        if ".dtype()" in a or ".dtype()" in b:
            self.dtype_check(a, b)
            return
        if re.search(r"\.n?dim\s*\(", f"{a} {b}"):
            self.rank_check(a, b)
            return
        modulo = re.fullmatch(r"(.+?)\s*%\s*(\w+)", a)
        if modulo and b == "0":  # ``K % kBlock == 0``
            self.divides(modulo.group(1), modulo.group(2))
            return
        left, right = self.expression(a), self.expression(b)
        if left is not None and right is not None:
            self.equate(left, right)

    def divides(self, dim: str, by: str) -> None:
        tree = self.expression(dim)
        value = int(by) if by.isdigit() else self.constants.get(by)
        if tree is not None and self.is_atom(tree) and value:
            assert isinstance(tree, ast.Name)
            self.divisors.append((tree.id, value))

    def rank_check(self, a: str, b: str) -> None:
        for left, right in ((a, b), (b, a)):
            found = re.fullmatch(r"(\w+)\s*\.\s*n?dim\s*\(\s*\)", left.strip())
            if found and right.strip().isdigit() and found.group(1) in self.tensors:
                self.result.ranks.setdefault(found.group(1), int(right))

    def dtype_check(self, a: str, b: str) -> None:
        tensors = [m.group(1) for m in re.finditer(r"(\w+)\s*\.\s*dtype\s*\(\s*\)", f"{a} {b}")]
        named = [DL_DTYPES[n] for n in re.findall(r"\bdl_\w+", f"{a} {b}") if n in DL_DTYPES]
        if len(tensors) == 1 and named:
            self.result.dtypes.setdefault(tensors[0], tuple(named))
        elif len(tensors) == 2:
            self.same_dtype.append((tensors[0], tensors[1]))

    # -- the whole body --
    def read(self, body: str) -> HandChecks:
        for match in _ALIAS.finditer(body):
            tree = self.expression(match.group(2))
            if tree is not None:
                self.define(match.group(1), tree)
        for name, args in _calls(body, _SHAPE_MACROS):
            self.macro(name, args)
        for _, args in _calls(body, _EQUALITY_MACRO):
            if len(args) >= 2:
                self.compare(args[0], args[1])
        for _, args in _calls(body, _CONDITION_MACRO):
            self.condition(args[0])
        self.casts(body)
        return self.finish(body)

    def macro(self, name: str, args: list[str]) -> None:
        if name == "CHECK_DIM" and len(args) == 2 and args[0].isdigit() and args[1] in self.tensors:
            self.result.ranks.setdefault(args[1], int(args[0]))
        elif name == "CHECK_SHAPE" and len(args) == 2:
            self.same_shape.append((args[0], args[1]))
        elif name in ("CHECK_INPUT_TYPE", "CHECK_INPUT_AND_TYPE") and len(args) == 2 and args[1] in DL_DTYPES:
            self.result.dtypes.setdefault(args[0], (DL_DTYPES[args[1]],))
        elif name == "CHECK_SAME_DTYPE" and len(args) == 2:
            self.same_dtype.append((args[0], args[1]))

    def casts(self, body: str) -> None:
        """Dtypes from the dispatch on a tensor's dtype and from the casts of its data pointer."""
        dispatched: dict[str, tuple[str, ...]] = {}
        for match in re.finditer(r"\b(DISPATCH_\w+)\s*\(\s*(\w+)\s*\.\s*dtype\s*\(\s*\)\s*,\s*(\w+)", body):
            family = dispatch_family(match.group(1))
            if family:
                dispatched[match.group(3)] = family
                self.result.dtypes.setdefault(match.group(2), family)
        for match in _CAST.finditer(body):
            ctype, tensor = match.group(2).split("::")[-1], match.group(4)
            self.result.casts.setdefault(tensor, ctype)
            if not (match.group(1) or match.group(3)):
                self.result.mutable.add(tensor)
            types = dispatched.get(ctype) or ((CPP_DTYPES[ctype],) if ctype in CPP_DTYPES else None)
            if types and tensor in self.tensors:
                self.result.dtypes.setdefault(tensor, types)

    def finish(self, body: str) -> HandChecks:
        for a, b in self.same_dtype:
            if a in self.result.dtypes or b in self.result.dtypes:
                types = self.result.dtypes.get(a) or self.result.dtypes[b]
                self.result.dtypes.setdefault(a, types)
                self.result.dtypes.setdefault(b, types)
        used: dict[str, set[int]] = {}
        for match in _DIM_ACCESS.finditer(body):
            used.setdefault(match.group(1), set()).add(int(match.group(2)))
        for _ in range(2):  # a CHECK_SHAPE partner gives its rank
            for a, b in self.same_shape:
                if a in self.result.ranks or b in self.result.ranks:
                    rank = self.result.ranks.get(a) or self.result.ranks[b]
                    self.result.ranks.setdefault(a, rank)
                    self.result.ranks.setdefault(b, rank)
        for tensor in self.tensors:
            if tensor not in self.result.ranks and used.get(tensor):
                self.result.ranks[tensor] = max(max(used[tensor]) + 1, max(-i for i in used[tensor]))
        for a, b in self.same_shape:
            for index in range(self.result.ranks.get(a, 0)):
                self.union(self.node(a, index), self.node(b, index))
        nodes = {tensor: [self.node(tensor, i) for i in range(rank)] for tensor, rank in self.result.ranks.items()}
        for tensor, atoms in nodes.items():  # every negative spelling folded in first
            self.result.shapes[tensor] = tuple(self.resolve(atom, 0) for atom in atoms)
        for atom, value in self.divisors:
            axis, multiple = _multiple_of(self.resolve(atom, 0), value)
            if axis:
                self.result.divisible[axis] = multiple
        return self.result

    def node(self, tensor: str, index: int) -> str:
        """The atom of a dimension, its negative spelling folded in (``size(-1)`` is ``size(rank-1)``)."""
        atom = f"{_NODE}{tensor}__{index}"
        self.union(atom, f"{_NODE}{tensor}__m{self.result.ranks[tensor] - index}")
        return atom

    def name_of(self, root: str) -> str:
        """A local that names the dimension, else ``<tensor>_<index>`` of the first tensor having it."""
        members = [a for a in self.aliases if self.find(a) == root]
        if members:
            return members[0]
        for tensor in self.tensors:
            for index in range(self.result.ranks.get(tensor, 0)):
                if self.find(f"{_NODE}{tensor}__{index}") == root:
                    return f"{tensor}_{index}"
        return root

    def resolve(self, atom: str, depth: int) -> str | int:
        """A dimension as the spec writes it: a fixed size, a parameter, an axis, an expression."""
        root = self.find(atom)
        if root in self.pinned:
            return self.pinned[root]
        tree = next(
            (self.derived[a] for a in [atom, root, *self.derived] if a in self.derived and self.find(a) == root), None
        )
        if tree is not None and depth < _MAX_DEPTH and root not in {self.find(a) for a in self.atoms(tree)}:
            text = ast.unparse(_Substitute(self, depth).visit(_copy(tree))).replace(" ", "")
            return _folded(text)
        return self.name_of(root)


def _folded(text: str) -> str | int:
    """An expression of constants only is its value (``128+64`` -> 192)."""
    tree = ast.parse(text, mode="eval").body
    if any(isinstance(n, ast.Name) for n in ast.walk(tree)):
        return text
    return dim_size(text, {})


def _multiple_of(dim: str | int, value: int) -> tuple[str, int]:
    """The axis and the multiple it must be for ``dim % value == 0``: ``k`` -> (k, value);
    ``k*2`` (``K = x.size(1) * 2``) -> (k, value / gcd(value, 2)); else ("", 0)."""
    if not isinstance(dim, str):
        return "", 0
    if dim.isidentifier():
        return dim, value
    found = re.fullmatch(r"(\w+)\*(\d+)|(\d+)\*(\w+)", dim)
    if found is None:
        return "", 0
    axis = found.group(1) or found.group(4)
    factor = int(found.group(2) or found.group(3))
    return (axis, value // math.gcd(value, factor)) if axis.isidentifier() else ("", 0)


def _unwrap(text: str) -> str:
    """``(a == b)`` -> ``a == b``: parentheses around the whole text removed, others kept."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and call_arguments(text, 1)[1] == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _else_branches_blanked(body: str) -> str:
    """The first branch of each ``if``/``else if``/``else`` kept: a local set per branch (a
    layout switch, a rank switch) is read as the first branch sets it, and the checks of the
    other branches are not mixed in."""
    brackets = body.replace("{", "(").replace("}", ")")  # one kind of bracket for _arguments
    out, start = [], 0
    for match in re.finditer(r"\belse\b\s*", body):
        if match.start() < start:
            continue
        position = match.end()
        condition = re.match(r"if\s*\(", body[position:])
        if condition:  # ``else if (...)``: past its condition
            _, position = call_arguments(brackets, position + condition.end())
            position = len(body) - len(body[position + 1 :].lstrip())
        if not body.startswith("{", position):
            continue
        _, close = call_arguments(brackets, position + 1)
        out.append(body[start : match.start()])
        start = close + 1
    return "".join(out) + body[start:]


def _copy(tree: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(tree), mode="eval").body


class _Substitute(ast.NodeTransformer):
    """Each atom of a derived dimension replaced by how the spec writes it."""

    def __init__(self, reader: _Reader, depth: int) -> None:
        self.reader = reader
        self.depth = depth

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.reader.constants:
            return ast.Constant(self.reader.constants[node.id])
        if not self.reader.is_atom(node):
            return node
        value = self.reader.resolve(node.id, self.depth + 1)
        return ast.Constant(value) if isinstance(value, int) else ast.parse(f"({value})", mode="eval").body


def read_hand_checks(body: str, tensors: list[str], constants: Mapping[str, int], params: set[str]) -> HandChecks:
    """What the launcher body ``body`` checks about ``tensors`` (see the module doc)."""
    reader = _Reader(tensors, constants, params)
    return reader.read(_else_branches_blanked(clean(body)))
