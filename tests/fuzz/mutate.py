"""Mutation operators: bytes in, bytes out, every choice drawn from one `random.Random`.

Each operator is a plain function `op(data, rng, ctx) -> bytes`; `ctx` names the file and
lets an operator add companion files to the case tree (include cycles). `SIZE` scales the
big ones: the quick profile keeps huge lines and deep nesting small enough to parse fast.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

_TOKEN_RE = re.compile(
    rb"/\*.*?(?:\*/|\Z)|//[^\n]*|#[^\n]*|\"(?:\\.|[^\"\\\n])*\"?|'(?:\\.|[^'\\\n])*'?"
    rb"|[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\s+|.",
    re.DOTALL,
)
_INCLUDE_LINE_RE = re.compile(rb"^[ \t]*#[ \t]*(?:include|import)\b[^\n]*\n?", re.MULTILINE)


@dataclass
class Context:
    name: str  # the file's base name
    relpath: str  # its path inside the case tree
    language: str  # "cpp" or "python"
    size: float = 1.0  # 1.0: long profile sizes; the quick profile uses less
    extra_files: dict[str, bytes] = field(default_factory=dict)  # relpath -> bytes, added by operators
    body_only: bool = False  # keep the include block intact (the preamble then still applies)


def tokens(data: bytes) -> list[bytes]:
    return _TOKEN_RE.findall(data)


def _body_start(data: bytes, ctx: Context) -> int:
    """Offset after the last `#include` line when `ctx.body_only`, else 0."""
    if not ctx.body_only:
        return 0
    last = 0
    for match in _INCLUDE_LINE_RE.finditer(data):
        last = match.end()
    return last


def _split(data: bytes, ctx: Context) -> tuple[bytes, bytes]:
    cut = _body_start(data, ctx)
    return data[:cut], data[cut:]


def _line_starts(data: bytes) -> list[int]:
    return [0] + [m.end() for m in re.finditer(rb"\n", data)]


def _insert_at_line(data: bytes, rng: random.Random, ctx: Context, text: bytes) -> bytes:
    head, body = _split(data, ctx)
    starts = _line_starts(body)
    at = rng.choice(starts)
    return head + body[:at] + text + body[at:]


def _n(rng: random.Random, ctx: Context, low: int, high: int) -> int:
    """A size between `low` and `high` (log-uniform), scaled by the profile."""
    high = max(low, int(high * ctx.size))
    value = round(low * (high / low) ** rng.random()) if low > 0 else rng.randint(0, high)
    return max(low, min(high, value))


# -- token level ---------------------------------------------------------------------------
def _token_edit(data: bytes, rng: random.Random, ctx: Context, edit: Callable) -> bytes:
    head, body = _split(data, ctx)
    toks = tokens(body)
    meaningful = [i for i, t in enumerate(toks) if not t.isspace()]
    if not meaningful:
        return data + b"}"
    return head + b"".join(edit(toks, meaningful))


def delete_tokens(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    def edit(toks, meaningful):
        for _ in range(rng.choice((1, 1, 1, 2, 3, 8))):
            index = rng.choice(meaningful)
            toks[index] = b""
        return toks

    return _token_edit(data, rng, ctx, edit)


def duplicate_tokens(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    def edit(toks, meaningful):
        start = rng.choice(meaningful)
        end = min(len(toks), start + rng.choice((1, 1, 2, 5, 12, 40)))
        piece = b"".join(toks[start:end])
        toks[start] = piece * rng.choice((1, 1, 2, 9)) + toks[start]
        return toks

    return _token_edit(data, rng, ctx, edit)


def swap_tokens(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    def edit(toks, meaningful):
        a, b = rng.choice(meaningful), rng.choice(meaningful)
        toks[a], toks[b] = toks[b], toks[a]
        return toks

    return _token_edit(data, rng, ctx, edit)


def replace_identifier(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    """Rename every occurrence of one identifier to another one of the file's words."""
    words = sorted(set(re.findall(rb"\b[A-Za-z_][A-Za-z0-9_]*\b", data[_body_start(data, ctx) :])))
    if len(words) < 2:
        return data
    old, new = (
        rng.choice(words),
        rng.choice(
            words + [b"__global__", b"template", b"operator", b"auto", b"self", b"lambda", b"None", b"__restrict__"]
        ),
    )
    head, body = _split(data, ctx)
    return head + re.sub(rb"\b" + re.escape(old) + rb"\b", new, body)


# -- bytes ---------------------------------------------------------------------------------
def truncate(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    start = _body_start(data, ctx)
    if len(data) <= start:
        return data[: len(data) // 2]
    return data[: rng.randint(start, len(data))]


def random_bytes(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    head, body = _split(data, ctx)
    count = rng.choice((1, 4, 16, 64, 256))
    alphabet = range(256) if rng.random() < 0.1 else range(1, 256)
    blob = bytes(rng.choice(alphabet) for _ in range(count))
    at = rng.randint(0, len(body))
    return head + body[:at] + blob + body[at:]


def flip_bits(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    head, body = _split(data, ctx)
    if not body:
        return data
    buf = bytearray(body)
    for _ in range(rng.choice((1, 2, 8))):
        index = rng.randrange(len(buf))
        buf[index] ^= 1 << rng.randrange(8)
        if buf[index] == 0:
            buf[index] = 0x20
    return head + bytes(buf)


_BAD_UTF8 = (
    b"\xff",
    b"\xfe\xfe",
    b"\xc3",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
    b"\x80\x80\x80",
    b"\xf0\x9f\x98",
    b"caf\xe9",
    b"\xef\xbb\xbf",
)
_ODD_UNICODE = (
    "\u202e",
    "\u2066",
    "\u200b",
    "\u200d",
    "\ufeff",
    "\u00a0",
    "\u2028",
    "\u0085",
    "\U0001f600",
    "λ",
    "名前",
    "e\u0301",
    "\u037e",
)


def non_utf8(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    choice = rng.random()
    if choice < 0.15:  # the whole file in another encoding
        text = data.decode("utf-8", errors="replace")
        encoding = rng.choice(("utf-16", "utf-16-le", "latin-1", "cp1252", "utf-32"))
        return text.encode(encoding, errors="replace")
    if choice < 0.25:  # a BOM, maybe twice
        return b"\xef\xbb\xbf" * rng.choice((1, 2)) + data
    head, body = _split(data, ctx)
    pieces = _BAD_UTF8 if rng.random() < 0.6 else tuple(u.encode() for u in _ODD_UNICODE)
    out = body
    for _ in range(rng.choice((1, 2, 5))):
        spot = rng.choice(("comment", "string", "ident", "anywhere"))
        blob = rng.choice(pieces)
        if spot == "comment":
            insert = (b"# " if ctx.language == "python" else b"// ") + blob + b"\n"
            starts = _line_starts(out)
            at = rng.choice(starts)
        elif spot == "string":
            insert = b'"' + blob + b'"'
            at = rng.randint(0, len(out))
        else:
            insert = blob
            at = rng.randint(0, len(out))
        out = out[:at] + insert + out[at:]
    return head + out


def line_endings(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    choice = rng.choice(("crlf", "cr", "mixed", "none", "formfeed", "tabs", "trailing-backslash"))
    if choice == "crlf":
        return data.replace(b"\n", b"\r\n")
    if choice == "cr":
        return data.replace(b"\n", b"\r")
    if choice == "mixed":
        return b"".join(line + rng.choice((b"\n", b"\r\n", b"\r")) for line in data.split(b"\n"))
    if choice == "none":
        return data.rstrip(b"\n")
    if choice == "formfeed":
        return data.replace(b"\n\n", b"\n\x0c\n").replace(b"  ", b"\t ", 3)
    if choice == "tabs":
        return data.replace(b"    ", b"\t")
    return _insert_at_line(data, rng, ctx, b"int spliced_line = 1; \\\n")


# -- structure -----------------------------------------------------------------------------
_OPENERS = b"{([<"
_CLOSERS = b"})]>"


def unbalance(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    head, body = _split(data, ctx)
    if rng.random() < 0.5 or not body:
        char = bytes([rng.choice(_OPENERS + _CLOSERS)]) * rng.choice((1, 1, 2, 7))
        at = rng.randint(0, len(body))
        return head + body[:at] + char + body[at:]
    positions = [i for i, c in enumerate(body) if c in _OPENERS + _CLOSERS]
    if not positions:
        return head + body + b"{"
    at = rng.choice(positions)
    return head + body[:at] + body[at + 1 :]


_TEMPLATE_SOUP = (
    b"template <typename T, ",
    b"template <typename T> struct Rec : Rec<T*> {}; Rec<int> rec_instance;\n",
    b"template <int N> struct Deep { static constexpr int v = Deep<N + 1>::v; }; int deep_v = Deep<0>::v;\n",
    b"template <template <typename> class C> struct TT {};\n",
    b"typename ::template ",
    b"template <> ",
    b"template <typename... Ts> __global__ void vk(Ts... xs) {}\n"
    b"void vk_launch(cudaStream_t s) { vk<int, float, Ts...><<<1, 1, 0, s>>>(); }\n",
    b"std::vector<std::vector<int>>> bad_close;\n",
    b"auto lam = []<typename T>(T t) { return t; };\n",
    b"template <typename T> concept Small = sizeof(T) < 4; template <Small T> void sm(T);\n",
    b"template <class T> using Alias = typename T::template rebind<int>::other;\n",
    b"<<<",
    b">>>",
    b"template <typename T> __global__ void tk(T* p) { p[0] = T{}; }\n"
    b"void tl(float* p) { tk<<<1, 1>>>(p); tk<float><<<dim3(1, 1), 32>>>(p); }\n",
)


def template_soup(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    if ctx.language == "python":
        return unbalance(data, rng, ctx)
    return _insert_at_line(data, rng, ctx, rng.choice(_TEMPLATE_SOUP))


def huge_line(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    n = _n(rng, ctx, 1_000, 1_500_000)
    python = ctx.language == "python"
    kind = rng.choice(("comment", "string", "identifier", "expression", "whitespace", "macro", "calls"))
    if kind == "comment":
        line = (b"# " if python else b"// ") + b"x" * n
    elif kind == "string":
        line = (b's = "' if python else b'const char* s = "') + b"a" * n + (b'"' if python else b'";')
    elif kind == "identifier":
        line = b"v" + b"_" * n + b" = 1" if python else b"int v" + b"_" * n + b" = 1;"
    elif kind == "expression":
        terms = max(1, n // 2)
        line = (b"total = " if python else b"int total = ") + b"+".join([b"1"] * terms) + (b"" if python else b";")
    elif kind == "whitespace":
        line = b" " * n + (b"pass" if python else b";")
    elif kind == "macro" and not python:
        line = b"#define LONG_MACRO " + b"x+" * (n // 2) + b"x"
    else:
        count = max(1, n // 12)
        line = (
            b"x = " + b"f(" * min(count, 300) + b")" * min(count, 300)
            if python
            else b"void calls() { " + b"f();" * count + b" }"
        )
    return _insert_at_line(data, rng, ctx, line + b"\n")


def deep_nesting(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    depth = _n(rng, ctx, 20, 5_000)
    if ctx.language == "python":
        kind = rng.choice(("parens", "lists", "calls", "indent", "lambda", "attr", "subscript"))
        if kind == "parens":
            text = b"x = " + b"(" * depth + b"1" + b")" * depth + b"\n"
        elif kind == "lists":
            text = b"x = " + b"[" * depth + b"]" * depth + b"\n"
        elif kind == "calls":
            text = b"x = " + b"f(" * depth + b")" * depth + b"\n"
        elif kind == "indent":
            depth = min(depth, 400)
            text = b"".join(b"    " * i + b"if x:\n" for i in range(depth)) + b"    " * depth + b"pass\n"
        elif kind == "lambda":
            text = b"x = " + b"lambda: " * depth + b"0\n"
        elif kind == "attr":
            text = b"x = a" + b".b" * depth * 4 + b"\n"
        else:
            text = b"x = a" + b"[0]" * depth + b"\n"
        return _insert_at_line(data, rng, ctx, text)
    kind = rng.choice(
        ("braces", "parens", "templates", "namespaces", "lambdas", "if-blocks", "ternary", "casts", "brackets")
    )
    if kind == "braces":
        text = b"void nest_fn() " + b"{" * depth + b"}" * depth + b"\n"
    elif kind == "parens":
        text = b"int nest_v = " + b"(" * depth + b"1" + b")" * depth + b";\n"
    elif kind == "templates":
        text = b"template <typename T> struct W {};\nusing nest_t = " + b"W<" * depth + b"int" + b">" * depth + b";\n"
    elif kind == "namespaces":
        text = b"".join(b"namespace n%d { " % i for i in range(depth)) + b"int x;" + b" }" * depth + b"\n"
    elif kind == "lambdas":
        text = b"auto nest_l = " + b"[] { return " * depth + b"0;" + b" }()" * depth + b";\n"
        text = text.replace(b"}()", b"; }()")
    elif kind == "if-blocks":
        text = b"#if 1\n" * depth + b"int pp_nested;\n" + b"#endif\n" * depth
    elif kind == "ternary":
        text = b"int nest_t = " + b"1 ? " * depth + b"0" + b" : 1" * depth + b";\n"
    elif kind == "casts":
        text = b"int nest_c = " + b"static_cast<int>(" * depth + b"0" + b")" * depth + b";\n"
    else:
        text = b"int nest_a" + b"[1]" * depth + b";\n"
    return _insert_at_line(data, rng, ctx, text)


_MACROS = (
    b"#define __global__\n",
    b"#define const\n",
    b"#define if while\n",
    b"#define __restrict__ restrict\n",
    b"#define SGL_DEVICE __host__\n",
    b"#define LaunchKernel(...)\n",
    b"#define CAT(a, b) a##b\nint CAT(x, y);\n",
    b"#define STR(x) #x\nconst char* str_v = STR(}{);\n",
    b"#undef __restrict__\n",
    b"#pragma once\n",
    b'#pragma clang diagnostic ignored "-Weverything"\n',
    b'#line 1 "elsewhere.cu"\n',
    b"#line 4294967295\n",
    b"#line 0\n",
    b"#error fuzz error directive\n",
    b"#warning fuzz warning directive\n",
    b"#include_next <cstdint>\n",
    b"#if 0\n",
    b"#endif\n",
    b"#else\n",
    b"#elif\n",
    b'_Pragma("once")\n',
    b"#define VA(...) __VA_OPT__(x) __VA_ARGS__\nint VA(v) = 0;\n",
    b"#define EMPTY\nEMPTY EMPTY EMPTY\n",
    b"#define REC REC\nint REC;\n",
    b"#define A_M B_M\n#define B_M A_M\nint A_M;\n",
    b"#ifdef __CUDA_ARCH__\n",
    b"#define SGL_CUDA_ARCH 0\n",
    b"#define threadIdx blockIdx\n",
    b"#define __syncthreads() __syncthreads(); __syncthreads()\n",
    b"#define asm(...)\n",
    b"#define F(x) x x x x x x x x\n#define G(x) F(F(F(x)))\nint G(g_sym);\n",
    b"#define kernel-check\n",
    b"#pragma unroll 0x7fffffff\n",
    b"#define O(\n",
    b"#undef\n",
    b"#\n",
    b"#include\n",
    b'#include ""\n',
    b"#include <>\n",
    b'#include "does/not/exist.cuh"\n',
    b"#include <sgl_kernel/does_not_exist.cuh>\n",
    b"#if defined(\n",
    b"#if 1/0\n#endif\n",
    b"#define SGL_DEVICE\n",
    b"#define TVM_FFI_ICHECK(x)\n",
)


def macro_soup(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    if ctx.language == "python":  # in Python, directives are comments: use them as such
        return _insert_at_line(data, rng, ctx, b"# " + rng.choice(_MACROS))
    out = data
    for _ in range(rng.choice((1, 2, 3, 6))):
        out = _insert_at_line(out, rng, ctx, rng.choice(_MACROS))
    return out


def self_include(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    if ctx.language == "python":
        module = ctx.name.rsplit(".", 1)[0]
        return _insert_at_line(
            data, rng, ctx, rng.choice((b"import %s\n", b"from %s import *\n", b"from . import %s\n")) % module.encode()
        )
    spelling = rng.choice(
        (
            b'#include "%s"\n' % ctx.name.encode(),
            b"#include __FILE__\n",
            b'#include "./%s"\n' % ctx.name.encode(),
            b"#include <%s>\n" % ctx.name.encode(),
        )
    )
    out = data
    if rng.random() < 0.5:
        out = out.replace(b"#pragma once", b"")
    if ctx.body_only:
        return _insert_at_line(out, rng, ctx, spelling)
    return spelling + out if rng.random() < 0.5 else _insert_at_line(out, rng, ctx, spelling)


def include_cycle(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    """`a.h` includes `b.h`, which includes `a.h` (and maybe the file itself)."""
    if ctx.language == "python":
        return self_include(data, rng, ctx)
    directory = ctx.relpath.rsplit("/", 1)[0] + "/" if "/" in ctx.relpath else ""
    guard = rng.random() < 0.5
    a = (b"#pragma once\n" if guard else b"") + b'#include "kc_cycle_b.h"\nstruct CycleA { int a; };\n'
    b = (b"#pragma once\n" if guard else b"") + b'#include "kc_cycle_a.h"\n'
    if rng.random() < 0.5:
        b += b'#include "%s"\n' % ctx.name.encode()
    b += b"struct CycleB { CycleA* a; };\n"
    ctx.extra_files[directory + "kc_cycle_a.h"] = a
    ctx.extra_files[directory + "kc_cycle_b.h"] = b
    return _insert_at_line(data, rng, ctx, b'#include "kc_cycle_a.h"\n')


def suppression_soup(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    lead = b"#" if ctx.language == "python" else rng.choice((b"//", b"/*"))
    body = rng.choice(
        (
            b"ignore[KC101]",
            b"ignore[KC101, KC9999, , kc130]",
            b"ignore-file[KC301]",
            b"ignore[",
            b"ignore[]",
            b"ignore-file[*]",
            b"ignore[KD001]",
            b"ignore[KC000]",
            b"ignore[KC001,KC001]",
            b"ignore[" + b"KC101," * 200 + b"]",
            b"ignore-file[KC501]",
        )
    )
    text = lead + b" kernel-check: " + body + (b" */" if lead == b"/*" else b"") + b"\n"
    return _insert_at_line(data, rng, ctx, text)


def unterminated(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    if ctx.language == "python":
        piece = rng.choice((b'"""', b"'''", b'"', b"f'{", b'f"{x!r:{w}', b"\\\n", b"(", b"b'\\x"))
    else:
        piece = rng.choice(
            (
                b"/*",
                b"*/",
                b'"',
                b"'",
                b'R"(',
                b'R"delim(',
                b"\\\n",
                b"??=",
                b"<:",
                b"%>",
                b"u8'",
                b"0x",
                b"1e+",
                b"'\\u",
            )
        )
    head, body = _split(data, ctx)
    at = rng.randint(0, len(body))
    return head + body[:at] + piece + body[at:]


_PY_SOUP = (
    b"@functools.lru_cache\n",
    b"@lru_cache(maxsize=None)\n",
    b"@cache_once\n",
    b"@torch.compile\n",
    b"register_cuda_ci(est_time=f'{x}', suite=SUITE)\n",
    b"register_cuda_ci(*args, **kwargs)\n",
    b"register_amd_ci()\n",
    b"reg = register_cuda_ci\nreg(est_time=1, suite='s')\n",
    b"load_jit(*[], **{})\n",
    b"match x:\n    case {'a': [1, *rest]} if rest:\n        pass\n",
    b"async def f():\n    async with a as b:\n        await c\n",
    b"x = [y async for y in z]\n",
    b"def g[T](x: T) -> T: ...\n",
    b"type X = int\n",
    b"x: 'Annotated[int, lambda: 0]' = 0\n",
    b"if (n := len(a)) > 10: pass\n",
    b"print(f'{f\"{f'{1}'}\"}')\n",
    b"global x\n",
    b"nonlocal x\n",
    b"del x[::-1], (y.z)\n",
    b"raise\n",
    b"return\n",
    b"yield\n",
    b"await x\n",
    b"class C(metaclass=M, **kw): pass\n",
    b"try:\n    pass\nexcept* ValueError:\n    pass\n",
    b"import torch as torch, functools.lru_cache\n",
    b"from __future__ import braces\n",
    b"__import__('os').system('touch /tmp/kc-fuzz-marker')\n",
    b"if x.shape != y.shape or not x.is_cuda: raise ValueError()\n",
    b"assert x.dtype in (a, b), f'{x}'\n",
    b"lambda: (yield)\n",
    b"x = 1 if 2 else 3 if 4 else 5\n",
    b"with (a as b, c as d): pass\n",
)


def python_soup(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    if ctx.language != "python":
        return template_soup(data, rng, ctx)
    out = data
    for _ in range(rng.choice((1, 2, 4))):
        piece = rng.choice(_PY_SOUP)
        if rng.random() < 0.3:  # indented into some block
            piece = b"".join(b"    " + line + b"\n" for line in piece.splitlines())
        out = _insert_at_line(out, rng, ctx, piece)
    return out


def indentation(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    lines = data.split(b"\n")
    if not lines:
        return data
    for _ in range(rng.choice((1, 2, 5))):
        index = rng.randrange(len(lines))
        choice = rng.random()
        if choice < 0.3:
            lines[index] = lines[index].lstrip()
        elif choice < 0.6:
            lines[index] = b"\t" + lines[index]
        elif choice < 0.8:
            lines[index] = b" " * rng.choice((1, 3, 5, 80)) + lines[index]
        else:
            lines[index] = lines[index].replace(b"    ", b"\t", 1)
    return b"\n".join(lines)


def splice(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    """Crossover: a chunk of another seed of the same language, inserted somewhere."""
    from .corpus import seeds

    donors = [s for s in seeds() if s.language == ctx.language and s.data]
    if not donors:
        return data
    donor = rng.choice(donors).data
    start = rng.randrange(len(donor))
    chunk = donor[start : start + rng.choice((16, 64, 256, 2048))]
    head, body = _split(data, ctx)
    at = rng.randint(0, len(body))
    return head + body[:at] + chunk + body[at:]


def comment_out(data: bytes, rng: random.Random, ctx: Context) -> bytes:
    head, body = _split(data, ctx)
    lines = body.split(b"\n")
    if len(lines) < 2:
        return data
    start = rng.randrange(len(lines))
    end = min(len(lines), start + rng.choice((1, 3, 10, 100)))
    lead = b"# " if ctx.language == "python" else b"// "
    for i in range(start, end):
        lines[i] = lead + lines[i]
    return head + b"\n".join(lines)


OPERATORS: dict[str, Callable[[bytes, random.Random, Context], bytes]] = {
    "delete-tokens": delete_tokens,
    "duplicate-tokens": duplicate_tokens,
    "swap-tokens": swap_tokens,
    "replace-identifier": replace_identifier,
    "truncate": truncate,
    "random-bytes": random_bytes,
    "flip-bits": flip_bits,
    "non-utf8": non_utf8,
    "line-endings": line_endings,
    "unbalance": unbalance,
    "template-soup": template_soup,
    "huge-line": huge_line,
    "deep-nesting": deep_nesting,
    "macro-soup": macro_soup,
    "self-include": self_include,
    "include-cycle": include_cycle,
    "suppression-soup": suppression_soup,
    "unterminated": unterminated,
    "python-soup": python_soup,
    "indentation": indentation,
    "splice": splice,
    "comment-out": comment_out,
}


def mutate(data: bytes, names: list[str], rng: random.Random, ctx: Context) -> bytes:
    for name in names:
        data = OPERATORS[name](data, rng, ctx)
    return data
