"""Witnesses tied to a kernel's contract: the launcher's `LaunchContract`s (clang/symbolic.py)
bind a kernel's symbols (its scalar arguments and params fields, the grid and block
dimensions) to terms over the launcher's symbolic sizes, and the solver looks for the
smallest sizes under which a condition holds (KC112, KC401).

"Smallest": the least common bound on every size (and launcher scalar) for which the
condition still holds, found by bisection with plain checks (an `Optimize` over these
nonlinear terms does not finish within the budget), then each size in turn made as small
as it can be with the ones before it fixed; every launcher input at least 0 where that still
holds (a scalar's magnitude alone would let a witness name `page_size = -513`), an id read
from memory of either sign (KC401's -1 below a tensor, not a launcher's `offset = -1`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from . import solver
from .clang.symbolic import const_term, mentions, symbol_names
from .finding import Counterexample
from .model import (
    ConstExpr,
    Function,
    LaunchContract,
    LaunchedKernel,
    LaunchTensorArgument,
    Symbol,
    SymbolicAccess,
    SymbolKind,
    TemplateCheck,
    Term,
    apply_const_op,
)
from .semantic import SemanticModel
from .solver import Answer, Budget, Outcome

# what a witness chooses: the launcher's inputs (its sizes, scalars, the bytes of its `T` and
# what its launching lambda's calls pass)
_FREE = (SymbolKind.DIM, SymbolKind.SCALAR, SymbolKind.ELEMENT_SIZE, SymbolKind.PASSED, SymbolKind.TEMPLATE)
_DIMENSION_SYMBOLS = frozenset({"blockDim", "gridDim"})
_DTYPE_BYTES = (1, 2, 4, 8)  # the element sizes of the dtypes a matcher accepts
_HOST = "host:"  # a launcher symbol's prefix, apart from the kernel's own names
_SPELLED = ("+", "-", "*", "/", "%")  # the operators a dim's value is spelled with
# kernel symbols the contract does not give: the launch constraints bound the indices and the
# calls' results the block shares, the caller's query the values read from memory, the loop
# counters and whether a pointer is null
_CALLER_BOUND = (
    SymbolKind.THREAD,
    SymbolKind.BLOCK,
    SymbolKind.LOAD,
    SymbolKind.LOOP,
    SymbolKind.ADDRESS,
    SymbolKind.UNIFORM,
)


@dataclass(frozen=True)
class Binding:
    """One launch's contract with the kernel's symbols bound to it."""

    # which it is: a launch's own, or a caller's of a launch in a helper it calls (the
    # launcher a witness names, the tensors it lays out)
    contract: LaunchContract
    constraints: tuple[Term, ...]
    inputs: tuple[Symbol, ...]  # the launcher's sizes and scalars, renamed apart
    given: frozenset[str]  # those the values given to the kernel's symbols name
    # the launcher's integers hold their values (`LaunchContract.fits`), and so do the
    # kernel's arguments in their types: what a witness holds, and a proof does not assume
    fits: tuple[Term, ...]
    # what the launch gives each of the kernel's `sizeof(T)` symbols (`SymbolKind.ELEMENT_SIZE`):
    # a constant, the launcher's own type parameter's `sizeof`, or None where it is not known
    element_sizes: tuple[tuple[str, Term | None], ...] = ()
    # the launcher's calls whose results its walk does not follow (`UpPowerOfTwo(n)`) were
    # taken as any value of their types: a proof over it covers the launch, a witness would
    # name a value the call may never return
    proof_only: bool = False

    def shown(self, *terms: Term) -> tuple[Symbol, ...]:
        """The inputs a witness names: those the kernel's values (or `terms`) depend on."""
        named = self.given.union(*(symbol_names(t) for t in terms))
        return tuple(s for s in self.inputs if s.name in named)


@dataclass(frozen=True)
class Witness:
    answer: Answer
    inputs: tuple[Symbol, ...]
    # the contract that gave the inputs (`Binding.contract`); None where no launch's did
    contract: LaunchContract | None = None

    def shape(self) -> str:
        """`N = 4096, D = 128`: each input with its value."""
        return ", ".join(f"{s.text} = {self.answer.model.get(s.name, 0)}" for s in self.inputs)


def counterexample(
    model: SemanticModel,
    kernel: Function,
    answer: Answer,
    symbols: Iterable[Symbol],
    found: Witness | None = None,
    *,
    values: Iterable[tuple[str, int]] = (),
    fill: Iterable[tuple[str, str]] = (),
) -> Counterexample:
    """A finding's witness as data (`finding.Counterexample`): the kernel, the thread and
    block `answer` chose among `symbols`, and where `found` came from a launch's contract,
    that launcher, its sizes and the shapes they give each tensor it verifies."""
    model_values = answer.model
    listed = list(symbols)
    launcher = ""
    sizes: tuple[tuple[str, int], ...] = ()
    shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    strides: tuple[tuple[str, tuple[int, ...]], ...] = ()
    if found is not None and found.contract is not None:
        launcher = launcher_of(model, found.contract)
        sizes = tuple((s.text, model_values[s.name]) for s in found.inputs if s.name in model_values)
        shapes, strides = _layouts(found.contract, model_values, {s.name for s in found.inputs})
    return Counterexample(
        kernel=kernel.name,
        launcher=launcher,
        sizes=sizes,
        shapes=shapes,
        strides=strides,
        values=tuple(values),
        fill=tuple(fill),
        thread=_triple(listed, model_values, SymbolKind.THREAD),
        block=_triple(listed, model_values, SymbolKind.BLOCK),
        block_dim=_axes(model_values, "blockDim"),
    )


_Sized = tuple[tuple[str, tuple[int, ...]], ...]


def _layouts(contract: LaunchContract, values: Mapping[str, int], shown: set[str]) -> tuple[_Sized, _Sized]:
    """Each tensor the contract's matchers verify, with its dims at `values` (those whose
    every dim the witness decides); and the strides of those the witness lays out otherwise
    than contiguously, where the inputs it names (`shown`) decide each and each is positive
    (a padded row: the case must make that view; a stride the solver set for no reason of
    the finding's is left to the case's contiguous layout)."""
    host = _host_names(contract)
    named = {name: value for name, value in values.items() if name in shown}

    def at(terms: tuple[Term, ...], given: Mapping[str, int]) -> tuple[int, ...] | None:
        evaluated = [evaluate(solver.renamed(t, host), given) for t in terms]
        return tuple(int(v) for v in evaluated if v is not None) if terms and None not in evaluated else None

    shapes = {tensor: dims for tensor, terms in contract.extents if (dims := at(terms, values)) is not None}
    strides = []
    for tensor, terms in contract.strides:
        dims, steps = shapes.get(tensor), at(terms, named)
        if dims is None or steps is None or len(steps) != len(dims) or min(steps) <= 0:
            continue
        if steps != _contiguous_strides(dims):
            strides.append((tensor, steps))
    return tuple(shapes.items()), tuple(strides)


def _contiguous_strides(dims: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a row-major tensor of `dims`."""
    steps = [1] * len(dims)
    for position in range(len(dims) - 2, -1, -1):
        steps[position] = steps[position + 1] * dims[position + 1]
    return tuple(steps)


def _triple(symbols: list[Symbol], values: Mapping[str, int], kind: SymbolKind) -> tuple[int, ...]:
    """(x, y, z) of the thread or block index symbols `values` gives (0 on an axis it does
    not name); () when it names none."""
    named = {s.name.rsplit(".", 1)[-1]: values[s.name] for s in symbols if s.kind is kind and s.name in values}
    return tuple(named.get(axis, 0) for axis in "xyz") if named else ()


def _axes(values: Mapping[str, int], prefix: str) -> tuple[int, ...]:
    """(x, y, z) of `blockDim` where `values` gives it (1 on an axis it leaves out)."""
    named = {axis: values[f"{prefix}.{axis}"] for axis in "xyz" if f"{prefix}.{axis}" in values}
    return tuple(named.get(axis, 1) for axis in "xyz") if named else ()


def first_iteration(access: SymbolicAccess) -> list[Term]:
    """The access at thread 0 of block 0 in the first iteration of its loops: what a witness
    tries first, so that its shape reads as the smallest case."""
    return [
        _equal_to(s.name, 0) for s in access.symbols if s.kind in (SymbolKind.THREAD, SymbolKind.BLOCK, SymbolKind.LOOP)
    ]


def evaluate(term: Term, values: Mapping[str, int]) -> int | None:
    """An integer term's value under `values` (C's truncating division); None where it names
    a symbol `values` leaves out, divides by zero, or is not arithmetic."""
    if term.op == "const":
        return term.value
    if term.op == "sym":
        return values.get(term.name)
    if term.op not in ("+", "-", "*", "/", "%") or len(term.args) != 2:
        return None
    left, right = (evaluate(a, values) for a in term.args)
    return None if left is None or right is None else apply_const_op(term.op, [left, right])


def bindings(
    model: SemanticModel,
    kernel: Function,
    symbols: Iterable[Symbol],
    for_proof: bool = False,
    *,
    callers: bool = False,
) -> Iterator[Binding | None]:
    """For each launch of `kernel` in the file, its contract bound to the kernel's
    `symbols`; None for a launch without a contract or one that leaves a symbol the
    contract should give (a scalar argument, the grid or block) unknown. The caller
    bounds the `_CALLER_BOUND` symbols. `for_proof`: the result of a launcher's call that
    its walk does not follow (`SymbolKind.UNIFORM`) is any value of its type instead of
    unknown, and the binding says so (`proof_only`). With `callers`, after each launch's
    own, each contract the callers of a helper give the launch (`LaunchContract.caller`):
    one more witness's shapes, where the helper's own contract holds no tensor's layout."""
    needed = list(symbols)
    free = (*_FREE, SymbolKind.UNIFORM) if for_proof else _FREE
    for index in model.launch_indices_of(kernel.usr):
        launched = tuple(k for k in model.launches[index].kernels if k.usr == kernel.usr)
        for contract in (model.contract_of(index), *(model.callers_contracts(index) if callers else ())):
            if contract is None:
                yield None
                continue
            limits, unstated = template_limits(model, contract)
            yield _bind(contract, kernel, launched, needed, free, limits, unstated)


def template_limits(model: SemanticModel, contract: LaunchContract) -> tuple[list[Term], frozenset[str]]:
    """What the code states of the launcher's own compile-time parameters a contract names
    (`SymbolKind.TEMPLATE`), as terms over the contract's names: each `static_assert` over
    them -- the launcher's, its class template's, and each launched kernel's with the launch's
    template arguments put in (`static_assert(kThreads % 32 == 0)` of `k<kThreads>`) --, a
    size of at least 1 (a flag 0 or 1), and a block of 1 to 1024 threads; and the parameters
    (as the contract's names) a `static_assert` the terms cannot state names (a bit operation,
    a helper's fold: `std::has_single_bit(kPageSize)`): the values it allows are not known, and
    no witness may depend on one (`_bind`)."""
    parameters = {s.name: s for s in contract.symbols if s.kind is SymbolKind.TEMPLATE}
    if not parameters:
        return [], frozenset()
    launch = model.launches[contract.launch]
    launcher = _launcher(model, contract)
    owners = (launcher.usr, launcher.owner_usr) if launcher is not None else ()
    conditions = [c.condition for usr in owners if usr for c in _static_asserts(model, usr)]
    # (a caller's contract: its kernels' arguments name the helper's parameters, not the caller's)
    for kernel in launch.kernels if not contract.caller else ():
        given = dict(zip(kernel.template_params, kernel.template_args))
        conditions += [c.condition.substitute(given) for c in _static_asserts(model, kernel.usr)]

    def leaf(value: ConstExpr) -> Term | None:
        if value.op == "sizeof":
            return element_type_size(value.name)
        # a parameter the launch does not hand on (`kSkipQuant` of `!(kIsStatic && kSkipQuant)`):
        # any value, one of its own
        return Term("sym", name=_HOST + (value.name if value.name in parameters else f"template:{value.name}"))

    limits: list[Term] = []
    unstated: set[str] = set()
    for condition in conditions:
        named = condition.free_names() & parameters.keys()
        stated = const_term(condition, leaf) if named else None
        if stated is not None:
            limits.append(stated)
        unstated.update(_HOST + name for name in named if stated is None)
    if launcher is not None and (choices := _instantiated(model.instantiated_values(launcher), parameters)):
        limits.append(choices)
    for name, symbol in parameters.items():  # a size at least 1, a flag 0 or 1
        limits += solver.within(Term("sym", name=_HOST + name), 1 if symbol.high > 1 else symbol.low, symbol.high)
    threads = [solver.renamed(axis, _host_names(contract)) for axis in contract.block if axis is not None]
    if any(set(symbol_names(axis)) & {_HOST + n for n in parameters} for axis in threads):
        limits += [c for axis in threads for c in solver.within(axis, 1, solver.MAX_THREADS_PER_BLOCK)]
    return limits, frozenset(unstated)


def _static_asserts(model: SemanticModel, usr: str) -> list[TemplateCheck]:
    """The `static_assert`s of a function or class template (its `RuntimeCheck`s over them are
    the contract's guards where the walk follows them)."""
    return [c for c in model.facts_of(usr).template_checks if c.kind == "static_assert"]


def _launcher(model: SemanticModel, contract: LaunchContract) -> Function | None:
    """The function whose contract it is: the launch's launcher, or the caller of the helper
    that launches (`LaunchContract.caller`)."""
    if not contract.caller:
        return model.function(model.launches[contract.launch].launcher_usr)
    return next((f for f in model.functions if f.qualified_name == contract.caller and f.body is not None), None)


def _instantiated(places: list[dict[str, int]], parameters: Mapping[str, Symbol]) -> Term | None:
    """The launcher's compile-time parameters are those of one of the places that build it
    (`SemanticModel.instantiated_values`); None where no place fixes one of them."""
    choices = []
    for values in places:
        fixed = [_equal_to(_HOST + name, value) for name, value in values.items() if name in parameters]
        if not fixed:
            return None  # a place that fixes none of them: any value
        choices.append(fixed[0] if len(fixed) == 1 else Term("and", tuple(fixed)))
    return (choices[0] if len(choices) == 1 else Term("or", tuple(choices))) if choices else None


def _launch_names(contract: LaunchContract, host: Mapping[str, str]) -> set[str]:
    """The launcher's symbols (renamed as `_bind` names them) its grid, block, arguments,
    guards, fits and layouts name."""
    terms = [*contract.grid, *contract.block, *contract.arguments, *contract.guards, *contract.fits]
    terms += [t for _, _, t in contract.fields]
    terms += [d for _, dims in (*contract.extents, *contract.strides) for d in dims]
    return {host.get(n, n) for term in terms if term is not None for n in symbol_names(term)}


def _equal_to(name: str, value: int) -> Term:
    return Term("==", (Term("sym", name=name), Term("const", value=value)))


def _bind(
    contract: LaunchContract,
    kernel: Function,
    launched: tuple[LaunchedKernel, ...],
    symbols: list[Symbol],
    free: tuple[SymbolKind, ...] = _FREE,
    limits: list[Term] | None = None,
    unstated: frozenset[str] = frozenset(),
) -> Binding | None:
    host = _host_names(contract)
    if unstated & _launch_names(contract, host):
        return None  # the launch depends on a compile-time value whose limits are not known
    helper_values = {name: solver.renamed(value, host) for name, value in contract.template_values}
    # the launcher's own compile-time parameters its kernels' template arguments name (`k<kThreads>`)
    helper_values |= {s.name: Term("sym", name=host[s.name]) for s in contract.symbols if s.kind is SymbolKind.TEMPLATE}
    constraints = [solver.renamed(g, host) for g in contract.guards] + list(limits or ())
    for symbol in contract.symbols:
        if symbol.kind in free:
            constraints += solver.within(Term("sym", name=host[symbol.name]), symbol.low, symbol.high)
    unknown = {s.name for s in contract.symbols if s.kind not in free}
    assumed = any(s.kind not in _FREE for s in contract.symbols if s.kind in free)
    by_name = {s.name: s for s in symbols}
    named: set[str] = set()
    fits: list[Term] = []
    element_sizes: list[tuple[str, Term | None]] = []
    for name in sorted(set(by_name) | set(_dimensions_of(symbols))):
        if name in by_name and by_name[name].kind in _CALLER_BOUND:
            continue  # below their dimensions, or whatever memory holds: the caller bounds them
        if name in by_name and by_name[name].kind is SymbolKind.ELEMENT_SIZE:
            size = _instantiated_size(launched, by_name[name])
            element_sizes.append((name, size))
            if size is not None:
                constraints.append(Term("==", (Term("sym", name=name), size)))
                constraints += solver.within(size, by_name[name].low, by_name[name].high)  # a type's bytes
                named.update(symbol_names(size))
            continue
        instantiated = _template_values(launched, name, helper_values)
        if instantiated is not None:
            choices = tuple(Term("==", (Term("sym", name=name), value)) for value in instantiated)
            constraints.append(choices[0] if len(choices) == 1 else Term("or", choices))
            named.update(n for value in instantiated for n in symbol_names(value))
            continue
        value = _contract_value(contract, kernel, name)
        if value is None or mentions(value, unknown):  # a value the launcher's walk did not follow
            return None
        given = solver.renamed(value, host)
        named.update(symbol_names(given))
        constraints.append(Term("==", (Term("sym", name=name), given)))
        if (received := by_name.get(name)) is not None and received.kind is SymbolKind.SCALAR:
            # the value as the kernel receives it: a witness whose argument wraps would be wrong
            fits += solver.within(Term("sym", name=name), received.low, received.high)
    if unstated & named:
        return None  # the kernel's values depend on one
    inputs = tuple(Symbol(host[s.name], s.kind, s.text, s.low, s.high) for s in contract.symbols if s.kind in _FREE)
    fits += [solver.renamed(f, host) for f in contract.fits]
    fits += [_dtype_bytes(s) for s in inputs if s.kind is SymbolKind.ELEMENT_SIZE]
    # a launcher that divides by zero stops there (the kernel never runs): no witness, and
    # no launch a proof must cover, has a zero divisor the launcher always evaluates
    constraints += solver.divides_by_nonzero(constraints)
    return Binding(contract, tuple(constraints), inputs, frozenset(named), tuple(fits), tuple(element_sizes), assumed)


def _dtype_bytes(size: Symbol) -> Term:
    """A launcher's `sizeof(T)` as a witness names it: the bytes of a dtype (a tensor's
    element type, as the launcher's `T` is in practice), not any struct's; a proof covers
    every size."""
    variable = Term("sym", name=size.name)
    return Term("or", tuple(Term("==", (variable, Term("const", value=b))) for b in _DTYPE_BYTES))


def _instantiated_size(launched: tuple[LaunchedKernel, ...], size: Symbol) -> Term | None:
    """The bytes the launch's template argument gives a kernel's type parameter (`size.text`):
    a constant where every launched instantiation names one type of one size, or the
    launcher's own type parameter's `sizeof` symbol (`kernel<T>` in a launcher over `T`, one
    a matcher's `with_dtype<T>()` names too: `element_type_size`); None where it is not known."""
    sizes: set[int] = set()
    texts: set[str] = set()
    for kernel in launched:
        argument = kernel.argument_for(size.text)
        if argument is None:
            return None
        value = argument[1].evaluate({})
        if value is not None and value > 0:
            sizes.add(value)
        elif argument[0].isidentifier():
            texts.add(argument[0])
        else:
            return None
    if len(sizes) == 1 and not texts:
        return Term("const", value=sizes.pop())
    if len(texts) == 1 and not sizes:
        return element_type_size(texts.pop())
    return None


def element_type_size(type_parameter: str) -> Term:
    """The bytes of a launcher's template type parameter, one unknown for its kernels' `T`
    and its matchers' `with_dtype<T>()` alike."""
    return Term("sym", name=f"{_HOST}sizeof({type_parameter})")


def tensor_extent(
    model: SemanticModel, kernel: Function, pointer: str, contract: LaunchContract
) -> tuple[str, tuple[Term, ...]] | None:
    """The tensor a kernel's pointer (`table`, `params.cache`) is at a contract's launch, and
    its dims from the launcher's matcher chains (renamed as `Binding` names them)."""
    tensor = tensor_at(model, kernel, pointer, contract)
    if tensor is None:
        return None
    host = _host_names(contract)
    dims = dict(contract.extents).get(tensor)
    return (tensor, tuple(solver.renamed(d, host) for d in dims)) if dims else None


def tensor_at(model: SemanticModel, kernel: Function, pointer: str, contract: LaunchContract) -> str | None:
    """The launcher's tensor whose data a kernel's pointer (`ids`, `params.loc`) receives at
    a contract's launch; None where the launch hands it no tensor's data."""
    carried = _carried(kernel, pointer, _handed(model, contract))
    return carried[0].tensor if carried else None


def tensor_of(model: SemanticModel, kernel: Function, pointer: str, contract: LaunchContract | None = None) -> str:
    """`tensor_at` the given contract's launch, else at the first launch of the kernel that
    hands the pointer a tensor; "" where none does."""
    if contract is not None:
        handed = [_handed(model, contract)]
    else:
        handed = [model.launches[index].tensors for index in model.launch_indices_of(kernel.usr)]
    return next((carried[0].tensor for tensors in handed if (carried := _carried(kernel, pointer, tensors))), "")


@dataclass(frozen=True)
class Layout:
    """A tensor's place in memory at a launch, from the launcher's one matcher chain of it:
    its dims and strides (in elements, renamed as `Binding` names them) and element size."""

    tensor: str
    dims: tuple[Term, ...]
    strides: tuple[Term, ...]
    element_size: int  # bytes (0: the launcher's template type `element_type`)
    element_type: str = ""

    def span_bytes(self) -> Term:
        """The bytes from its first element to the end of its last: (1 + the sum of (dim - 1)
        * stride) elements (dims are at least 1)."""
        last = Term("const", value=1)
        for dim, stride in zip(self.dims, self.strides):
            last = Term("+", (last, Term("*", (Term("-", (dim, Term("const", value=1))), stride))))
        return Term("*", (last, self.element_bytes()))

    def element_bytes(self) -> Term:
        """One element's bytes: a constant, or the launcher's type parameter's `sizeof`."""
        return Term("const", value=self.element_size) if not self.element_type else element_type_size(self.element_type)


def tensor_layout(model: SemanticModel, kernel: Function, pointer: str, contract: LaunchContract) -> Layout | None:
    """The layout of the tensor a kernel's pointer is at a contract's launch; None where the
    argument may carry another tensor too (`flag ? a.data_ptr() : b.data_ptr()`) or no one
    matcher chain fixes its dims, strides and element size (a tensor two chains verify:
    either's layout may be the one that tells; a dim written as an expression the contract
    does not tie to its operands)."""
    extent = tensor_extent(model, kernel, pointer, contract)
    if extent is None or len(_carried(kernel, pointer, _handed(model, contract))) != 1:
        return None
    tensor, dims = extent
    if sum(1 for name, _ in contract.extents if name == tensor) != 1 or tensor not in contract.exact:
        return None
    strides = dict(contract.strides).get(tensor)
    size = dict(contract.element_sizes).get(tensor)
    element_type = dict(contract.element_types).get(tensor, "")
    if strides is None or (size is None and not element_type):
        return None
    host = _host_names(contract)
    return Layout(tensor, dims, tuple(solver.renamed(s, host) for s in strides), size or 0, element_type)


def _carried(kernel: Function, pointer: str, tensors: tuple[LaunchTensorArgument, ...]) -> list[LaunchTensorArgument]:
    """Those of a launch's `tensors` whose data it hands a kernel's pointer (`table`,
    `params.cache`)."""
    head, _, field = pointer.partition(".")
    position = _parameter(kernel, head)
    return [a for a in tensors if a.argument == position and a.field in (field, "*")]


def _handed(model: SemanticModel, contract: LaunchContract) -> tuple[LaunchTensorArgument, ...]:
    """The tensors a contract's launch hands its kernel, as the contract's launcher names
    them: a caller's (`LaunchContract.carried`), else the launch's own."""
    return contract.carried if contract.caller else model.launches[contract.launch].tensors


def launcher_of(model: SemanticModel, contract: LaunchContract) -> str:
    """The qualified name of the function that runs a contract's launch with the sizes a
    witness names: the caller whose contract it is, else the launch's launcher."""
    return contract.caller or model.launches[contract.launch].launcher


def _host_names(contract: LaunchContract) -> dict[str, str]:
    """The launcher's symbols renamed apart from the kernel's (a launcher's `n` is not the
    kernel's `n`)."""
    return {s.name: _HOST + s.name for s in contract.symbols}


def _parameter(kernel: Function, name: str) -> int | None:
    return next((i for i, p in enumerate(kernel.params) if p.name == name), None)


def _dimensions_of(symbols: list[Symbol]) -> Iterator[str]:
    """`blockDim.x` for `threadIdx.x`, `gridDim.x` for `blockIdx.x`."""
    for symbol in symbols:
        if symbol.kind in (SymbolKind.THREAD, SymbolKind.BLOCK):
            axis = symbol.name.rsplit(".", 1)[-1]
            yield f"{'blockDim' if symbol.kind is SymbolKind.THREAD else 'gridDim'}.{axis}"


def _template_values(
    launched: tuple[LaunchedKernel, ...], name: str, given: Mapping[str, Term] | None = None
) -> list[Term] | None:
    """What the launch's template arguments give a compile-time parameter of the kernel
    (`k<kExperts>` with `const int kExperts = 256;` in the launcher): its value, or each of
    them when the launch picks among instantiations, as terms over the launcher's `sizeof(T)`
    where it is one (`k<T, 16 / sizeof(T)>`: one unknown with its matchers' `with_dtype<T>()`)
    or over what a caller's contract `given` a helper's own parameter (`k<T, kVec>` in a helper
    its caller calls as `launch<T, 4>`); None when one of them is neither (a launcher's own
    template parameter: its caller picks it, within limits its `static_assert`s state, which
    the contract does not hold), or `name` is no template parameter."""
    values: list[Term] = []
    known = given or {}

    def leaf(value: ConstExpr) -> Term | None:
        return _launcher_size(value) if value.op == "sizeof" else known.get(value.name)

    for kernel in launched:
        argument = kernel.argument_for(name)
        value = const_term(argument[1], leaf) if argument is not None else None
        if value is None:
            return None
        if value not in values:
            values.append(value)
    return values or None


def _launcher_size(value: ConstExpr) -> Term | None:
    """`sizeof(T)` of a launcher's type parameter a template argument names."""
    return element_type_size(value.name) if value.op == "sizeof" else None


def _contract_value(contract: LaunchContract, kernel: Function, name: str) -> Term | None:
    """What the launch gives a kernel symbol: a grid or block dimension, a scalar argument
    (`n`) or a params field (`params.n`)."""
    head, _, rest = name.partition(".")
    if head in _DIMENSION_SYMBOLS and rest in ("x", "y", "z"):
        axes = contract.block if head == "blockDim" else contract.grid
        return axes["xyz".index(rest)]
    position = _parameter(kernel, head)
    if position is None:
        return None
    if not rest:
        return contract.arguments[position] if position < len(contract.arguments) else None
    return next((t for p, f, t in contract.fields if p == position and f == rest), None)


def smallest(
    constraints: list[Term], inputs: tuple[Symbol, ...], budget: Budget, checked: Answer | None = None
) -> Answer:
    """The constraints' answer with the launcher's inputs as small as the budget finds, none
    negative where the constraints allow: SAT with the smallest model found, UNSAT, or
    UNKNOWN. `checked`: the answer the caller's own check of these constraints gave, which
    is not solved again."""
    session = solver.Session(constraints, budget)
    best = checked if checked is not None else session.check()
    if best.outcome is not Outcome.SAT or not inputs:
        return best
    # sizes and counts as a launcher is called with them, where the condition allows: a
    # negative scalar only where no other does (its magnitude alone would pick either sign);
    # an id read from memory takes either sign (KC401's lower side: the id is the one below
    # zero, not a launcher's `offset = -1` with the id at 0)
    nonnegative: list[Term] = [
        Term("<=", (Term("const", value=0), Term("sym", name=s.name))) for s in inputs if s.kind in _FREE
    ]
    answer = session.check(nonnegative)
    if answer.outcome is Outcome.SAT:
        best = answer
    else:
        nonnegative = []
    best, bound, finished = _least_bound(session, nonnegative, inputs, best)
    fixed: list[Term] = [*nonnegative, *_bounded(inputs, bound)]
    for symbol in inputs:
        if not finished:
            break
        best, _, finished = _least_bound(session, fixed, (symbol,), best)
        fixed.append(_equal(symbol, best.model))
    return best


def _least_bound(
    session: solver.Session, fixed: list[Term], symbols: tuple[Symbol, ...], best: Answer
) -> tuple[Answer, int, bool]:
    """The least bound on the magnitude of `symbols` under which the session's constraints
    and `fixed` still hold (`best` holds within the bound it starts from), the model there,
    and whether the search finished within the budget. The first steps halve the bound's
    logarithm: a nonlinear check costs up to 0.25 s, too much for forty halvings of the
    bound itself."""
    low, high = -1, _largest(best, symbols)  # no model within `low`; one within `high`
    while high - low > 1:
        floor = max(low, 1)
        middle = math.isqrt(floor * high) if high > 4 * floor else (low + high) // 2
        answer = session.check([*fixed, *_bounded(symbols, middle)])
        if answer.outcome is Outcome.UNKNOWN:
            return best, high, False
        if answer.outcome is Outcome.SAT:
            best, high = answer, _largest(answer, symbols)
        else:
            low = middle
    return best, high, True


def _largest(answer: Answer, inputs: tuple[Symbol, ...]) -> int:
    return max(abs(answer.model.get(s.name, 0)) for s in inputs)


def _bounded(inputs: tuple[Symbol, ...], bound: int) -> list[Term]:
    return [c for s in inputs for c in solver.within(Term("sym", name=s.name), -bound, bound)]


def _equal(symbol: Symbol, model: Mapping[str, int]) -> Term:
    return _equal_to(symbol.name, model.get(symbol.name, 0))


def where(symbols: Iterable[Symbol], answer: Answer) -> str:
    """`blockIdx.x = 3, threadIdx.x = 0`: the block and thread indices of a witness."""
    listed = list(symbols)
    return ", ".join(
        f"{s.text} = {answer.model[s.name]}"
        for kind in (SymbolKind.BLOCK, SymbolKind.THREAD)
        for s in listed
        if s.kind is kind and s.name in answer.model
    )


def render_dim(term: Term) -> str:
    """A tensor's dim as its matcher states it: its size's name (`N`), its constant, or the
    value of the launcher's local it names (`num_heads * head_dim`)."""
    if term.op == "const":
        return str(term.value)
    if term.op == "wrap":  # the local's value in its type: as the launcher computes it
        return render_dim(term.args[0])
    if term.op in _SPELLED and len(term.args) == 2:
        left, right = (render_dim(a) if a.op in ("const", "sym", "wrap") else f"({render_dim(a)})" for a in term.args)
        return f"{left} {term.op} {right}"
    return term.name.removeprefix(_HOST).removeprefix("dim:")
