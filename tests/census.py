"""The inert-field census: every field of every sealed class must be read somewhere.

DESIGN §2 principle 10: every field of an evidence or decision type is read by some
decision or rendering outside its constructor; a field read by nothing is a wall that
exists only in a comment.  :func:`find_inert_fields` checks that mechanically.

How it works
------------
The program is type-checked once with mypy's own build (the project's ``pyproject.toml``
settings, so the types are those ``mypy --strict`` sees), with the expression type map
exported.  The *census* is every field of every sealed class (a class whose MRO holds
:class:`vllm_evidence._seal.Sealed`) defined in the census roots; the fields come from
the attrs plugin's metadata (``TypeInfo.metadata["attrs"]``).  Then every module in the
*reader* roots is walked, and a read is credited to a class -- never to a bare name --
when it is one of:

* ``expr.field`` where mypy's type of ``expr`` is an instance of the class: directly,
  as a member of a union (``law.span`` on ``RouteLaw | HealthLaw`` reads both), after
  ``isinstance``/``match`` narrowing, or through a type variable (its bound, or
  each of its values: mypy checks such a function once per value);
  ``self.field`` inside the class's own methods and properties counts too;
* ``getattr(expr, "field")`` / ``getattr(expr, "field", default)`` with a literal name;
* a class pattern ``case Cls(field=...)``, and ``case Cls(p0, p1)``, mapped through
  ``Cls.__match_args__``.

What does not count as a read
-----------------------------
* Construction: keyword arguments to a minter or ``__attrs_init__`` are writes, and
  reads of a class's own fields inside its construction path do not make them live:
  ``__init__``/``__new__``/``__attrs_pre_init__``/``__attrs_init__``/
  ``__attrs_post_init__``, ``@field.validator`` and ``@field.default`` methods,
  anything in the class body outside a method (field definitions), and functions
  named in a field definition (``attrs.field(validator=check)``).  A field that only
  its constructor reads is inert: the check guards a value no decision uses.
* Writes: there are none to tell apart.  Sealed classes are frozen, so mypy rejects
  ``obj.field = ...`` and the census refuses to run on a program mypy rejects.
* attrs-generated dunders (``__eq__``, ``__hash__``, ``__repr__``): they have no
  source to read.  Hand-written methods, dunders included, are ordinary readers --
  except a sealed value's ``repr``: its ``_repr_summary`` methods and the helpers they
  call (every function whose name ends in ``_summary``) describe a value, they do not
  use it, so a field that only ``repr`` shows is reported.
* Reads outside the reader roots: by default only the package reads; a test that
  reads a field does not make it live.

What the resolution cannot see (each one reports a field as inert when its only read
is of this kind -- a false alarm, never a missed inert field)
------------------------------------------------------------------------------------
* Generic dumps of every field: ``attrs.asdict``, ``attrs.astuple``,
  ``cattrs.unstructure``, ``attrs.fields()`` loops, ``vars()``/``__dict__``.  This is
  on purpose: a field that only a generic serialiser touches is read by no decision
  or rendering, so it is reported.
* Reads through ``Any`` (an untyped value, ``json``-shaped data, a ``cast(Any, ...)``)
  and through structural types: a read through a ``Protocol`` (or ``object``) is
  credited to the protocol, which names no sealed class.
* String-named access that is not a literal ``getattr``: ``getattr(obj, name)`` with a
  computed name, ``operator.attrgetter("field")``, ``__match_args__`` iteration,
  string-keyed serialisation.
* Reads in code mypy does not type-check: branches it deems unreachable (after an
  exhaustive ``match``, under a ``sys.version_info`` guard for another Python).

What it over-credits (each one can hide an inert field)
-------------------------------------------------------
* Call reachability: a read inside a method or function counts even if nothing calls
  that method or function.  The census proves "read by some code in the reader
  roots", not "read on a path that a decision takes".
* Unions: ``x.span`` on ``A | B`` credits ``A.span`` and ``B.span`` alike, although
  at run time only one of them may ever reach that line.

What it can see that a name search cannot
-----------------------------------------
Two sealed classes may share a field name (``statement``, ``span``); a read of
``a.span`` credits only ``a``'s class, so one class's live field never hides another's
inert field of the same name.
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import attrs
from mypy import build
from mypy.main import process_options
from mypy.nodes import (
    Argument,
    AssignmentStmt,
    CallExpr,
    ClassDef,
    Decorator,
    Expression,
    FuncDef,
    FuncItem,
    MemberExpr,
    MypyFile,
    NameExpr,
    Node,
    OverloadedFuncDef,
    RefExpr,
    Statement,
    StrExpr,
    TypeAlias,
    TypeInfo,
    Var,
)
from mypy.patterns import ClassPattern, Pattern
from mypy.types import (
    Instance,
    LiteralType,
    TupleType,
    Type,
    TypeVarType,
    UnionType,
    get_proper_type,
)

__all__ = [
    "SEALED_BASE",
    "CensusBuildError",
    "Program",
    "build_program",
    "field_reads",
    "find_inert_fields",
    "inert_fields",
    "sealed_fields",
]

REPO = Path(__file__).resolve().parent.parent
"""The repository root (this file is ``tests/census.py``)."""

SEALED_BASE = "vllm_evidence._seal.Sealed"

#: Methods attrs (or Python) runs while building an instance.
_CONSTRUCTION_METHODS = frozenset(
    {"__init__", "__new__", "__attrs_pre_init__", "__attrs_init__", "__attrs_post_init__"}
)
#: ``@field.validator`` / ``@field.default``: attrs calls these during construction.
_CONSTRUCTION_DECORATORS = frozenset({"validator", "default"})
#: Functions and methods named ``*_summary`` write a sealed value's ``repr``: not readers.
_REPR_SUFFIX = "_summary"


class CensusBuildError(Exception):
    """mypy reported errors, so its types (and the census built on them) are unreliable."""


@attrs.frozen
class Program:
    """One type-checked program: its module trees and the type of every expression."""

    files: Mapping[str, MypyFile]
    types: Mapping[Expression, Type]

    def modules_under(self, roots: Iterable[Path]) -> list[MypyFile]:
        """The modules whose source file is one of ``roots`` or lies under one."""
        resolved = [r.resolve() for r in roots]
        found = []
        for name in sorted(self.files):
            tree = self.files[name]
            if not tree.path:
                continue
            path = Path(tree.path).resolve()
            if any(path == r or r in path.parents for r in resolved):
                found.append(tree)
        return found


def build_program(paths: Sequence[Path], *, config_file: Path | None = None) -> Program:
    """Type-check ``paths`` (files or package directories) as ``mypy`` would.

    ``config_file`` defaults to the repository's ``pyproject.toml``.  The build is not
    incremental and writes its cache to a temporary directory, so it neither reads
    nor disturbs the project's mypy cache.  Raises :class:`CensusBuildError` when mypy
    reports any error: the census trusts mypy's types and must not run on a broken
    program.
    """
    config = config_file if config_file is not None else REPO / "pyproject.toml"
    sources, options = process_options(["--config-file", str(config), *map(str, paths)])
    options.export_types = True
    options.preserve_asts = True  # keep function bodies after checking, to walk them
    options.incremental = False
    with tempfile.TemporaryDirectory(prefix="census-mypy-cache-") as cache:
        options.cache_dir = cache
        result = build.build(sources, options)
    if result.errors:
        msg = "mypy reported errors; fix them before the census:\n" + "\n".join(result.errors)
        raise CensusBuildError(msg)
    return Program(files=result.files, types=result.types)


def _is_sealed(info: TypeInfo) -> bool:
    return info.fullname != SEALED_BASE and info.has_base(SEALED_BASE)


def _field_names(info: TypeInfo) -> tuple[str, ...]:
    """The attrs fields of ``info``, in definition order."""
    attrs_meta = info.metadata.get("attrs")
    if attrs_meta is not None:
        return tuple(str(a["name"]) for a in attrs_meta["attributes"])
    # Not an attrs class (every sealed type should be one): instance variables
    # declared in the class body.
    return tuple(
        name
        for name, sym in info.names.items()
        if isinstance(sym.node, Var)
        and not sym.node.is_classvar
        and not sym.node.is_property
        and not name.startswith("__")
    )


def _classes(tree: MypyFile) -> Iterator[TypeInfo]:
    """Every class defined in ``tree``, nested ones included."""
    todo = [sym.node for sym in tree.names.values() if isinstance(sym.node, TypeInfo)]
    seen: set[str] = set()
    while todo:
        info = todo.pop()
        if info.fullname in seen or info.module_name != tree.fullname:
            continue  # imported names and re-exports are not defined here
        seen.add(info.fullname)
        yield info
        todo.extend(sym.node for sym in info.names.values() if isinstance(sym.node, TypeInfo))


def sealed_fields(program: Program, roots: Iterable[Path]) -> dict[str, tuple[str, ...]]:
    """``{class fullname: field names}`` for every sealed class defined under ``roots``."""
    return {
        info.fullname: _field_names(info)
        for tree in program.modules_under(roots)
        for info in _classes(tree)
        if _is_sealed(info)
    }


def _instance_classes(typ: Type | None) -> Iterator[TypeInfo]:
    """The classes whose instance an expression of type ``typ`` may be."""
    proper = get_proper_type(typ)
    if isinstance(proper, Instance):
        yield proper.type
    elif isinstance(proper, UnionType):
        for item in proper.items:
            yield from _instance_classes(item)
    elif isinstance(proper, TypeVarType):
        yield from _instance_classes(proper.upper_bound)
        for value in proper.values:
            yield from _instance_classes(value)


def _match_args(info: TypeInfo) -> tuple[str, ...]:
    """``info.__match_args__`` as mypy's attrs plugin typed it (a tuple of literals)."""
    sym = info.get("__match_args__")
    if sym is None or not isinstance(sym.node, Var):
        return ()
    typ = get_proper_type(sym.node.type)
    if not isinstance(typ, TupleType):
        return ()
    names = []
    for item in typ.items:
        proper = get_proper_type(item)
        literal = proper.last_known_value if isinstance(proper, Instance) else proper
        if not isinstance(literal, LiteralType) or not isinstance(literal.value, str):
            return ()
        names.append(literal.value)
    return tuple(names)


_CHILD_KINDS = (Statement, Expression, Pattern, Argument)
#: Attributes that point at a definition elsewhere rather than at a child node.
_REFERENCE_ATTRIBUTES = frozenset({"node", "original_def", "def_var", "info", "expanded"})
_child_attributes_cache: dict[type[object], tuple[str, ...]] = {}


def _child_attributes(kind: type[object]) -> tuple[str, ...]:
    """The attribute names of node class ``kind``.

    mypy ships compiled, and its compiled visitor base classes cannot be subclassed
    from interpreted code, so the census walks the tree itself: a compiled node
    class lists each attribute as a data descriptor in its class dictionary (and an
    interpreted one in its ``__slots__``).
    """
    names = _child_attributes_cache.get(kind)
    if names is None:
        found: dict[str, None] = {}
        for base in kind.__mro__:
            for name in getattr(base, "__slots__", ()):
                found[name] = None
            for name, value in vars(base).items():
                if inspect.isgetsetdescriptor(value) or inspect.ismemberdescriptor(value):
                    found[name] = None
        names = tuple(n for n in found if not n.startswith("__") and n not in _REFERENCE_ATTRIBUTES)
        _child_attributes_cache[kind] = names
    return names


def _children(node: Node) -> Iterator[Node]:
    """The statements, expressions, patterns and arguments directly under ``node``."""
    for name in _child_attributes(type(node)):
        try:
            value = getattr(node, name, None)
        except AssertionError:
            # A computed attribute (mypy compiles properties to descriptors too) that does
            # not apply to this node: OverloadedFuncDef.setter of a non-property overload.
            continue
        yield from _nodes_in(value)
    if isinstance(node, FuncItem):
        # A function generic in a value-restricted type variable is checked once per
        # value, on copies; the types of its expressions are recorded on the copies.
        yield from (copy for copy in node.expanded if copy is not node)


def _nodes_in(value: object) -> Iterator[Node]:
    """The child nodes in an attribute's value: a node, or containers of them.

    (``DictExpr.items`` is a list of pairs, ``ClassDef.keywords`` a dict.)
    """
    if isinstance(value, _CHILD_KINDS):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _nodes_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _nodes_in(item)


def _descendants(node: Node) -> Iterator[Node]:
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        todo.extend(_children(current))


def _referenced_functions(expr: Expression) -> set[str]:
    """Fullnames of the functions named anywhere inside ``expr``."""
    return {
        ref.node.fullname
        for ref in _descendants(expr)
        if isinstance(ref, RefExpr)
        and isinstance(ref.node, FuncDef | Decorator | OverloadedFuncDef)
    }


def _construction_functions(trees: Iterable[MypyFile]) -> dict[str, str]:
    """``{function fullname: sealed class fullname}`` for each class's construction path."""
    found: dict[str, str] = {}
    for tree in trees:
        for info in _classes(tree):
            if not _is_sealed(info):
                continue
            fields = set(_field_names(info))
            for stmt in info.defn.defs.body:
                if isinstance(stmt, FuncDef) and stmt.name in _CONSTRUCTION_METHODS:
                    found[stmt.fullname] = info.fullname
                elif isinstance(stmt, Decorator) and any(
                    isinstance(d, MemberExpr)
                    and d.name in _CONSTRUCTION_DECORATORS
                    and isinstance(d.expr, NameExpr)
                    and d.expr.name in fields
                    for d in stmt.original_decorators
                ):
                    found[stmt.func.fullname] = info.fullname
                elif isinstance(stmt, AssignmentStmt):
                    for name in _referenced_functions(stmt.rvalue):
                        found[name] = info.fullname
    return found


class _Reads:
    """Collects ``(class fullname, attribute)`` for every resolved attribute read."""

    def __init__(self, types: Mapping[Expression, Type], construction: Mapping[str, str]) -> None:
        self.types = types
        self.construction = construction
        self.reads: set[tuple[str, str]] = set()
        # Classes whose construction path encloses the node being visited.
        self._constructing: list[str] = []

    def _credit(self, info: TypeInfo, name: str) -> None:
        if info.fullname not in self._constructing:
            self.reads.add((info.fullname, name))

    def _credit_expr(self, expr: Expression, name: str) -> None:
        for info in _instance_classes(self.types.get(expr)):
            self._credit(info, name)

    def _within(self, cls: str, nodes: Iterable[Node]) -> None:
        self._constructing.append(cls)
        try:
            for node in nodes:
                self.visit(node)
        finally:
            self._constructing.pop()

    def visit_file(self, tree: MypyFile) -> None:
        for stmt in tree.defs:
            self.visit(stmt)

    def visit(self, node: Node) -> None:
        """Credit the reads in ``node``, then visit what lies under it."""
        match node:
            case FuncDef() if node.name.endswith(_REPR_SUFFIX):
                return
            case FuncDef() if node.fullname in self.construction:
                self._within(self.construction[node.fullname], _children(node))
                return
            case ClassDef():
                for stmt in node.defs.body:
                    if isinstance(stmt, FuncDef | Decorator | OverloadedFuncDef | ClassDef):
                        self.visit(stmt)
                    else:
                        # Field definitions and other class-body code: construction.
                        self._within(node.info.fullname, [stmt])
                return
            case MemberExpr():
                self._credit_expr(node.expr, node.name)
            case CallExpr(
                callee=RefExpr(fullname="builtins.getattr"), args=[obj, StrExpr(value=name), *_]
            ):
                self._credit_expr(obj, name)
            case ClassPattern():
                self._class_pattern(node)
            case _:
                pass
        for child in _children(node):
            self.visit(child)

    def _class_pattern(self, pattern: ClassPattern) -> None:
        node = pattern.class_ref.node
        info: TypeInfo | None = None
        if isinstance(node, TypeInfo):
            info = node
        elif isinstance(node, TypeAlias):
            target = get_proper_type(node.target)
            if isinstance(target, Instance):
                info = target.type
        if info is None:
            return
        for name in pattern.keyword_keys:
            self._credit(info, name)
        for name in _match_args(info)[: len(pattern.positionals)]:
            self._credit(info, name)


def field_reads(program: Program, readers: Iterable[Path]) -> set[tuple[str, str]]:
    """Every ``(class fullname, attribute)`` read in the modules under ``readers``.

    The pairs cover every class, sealed or not, and every attribute, field or not;
    :func:`inert_fields` intersects them with the census.
    """
    trees = program.modules_under(readers)
    construction = _construction_functions(program.files.values())
    visitor = _Reads(program.types, construction)
    for tree in trees:
        visitor.visit_file(tree)
    return visitor.reads


def inert_fields(program: Program, census: Iterable[Path], readers: Iterable[Path]) -> list[str]:
    """``"module.Class.field"`` for each census field that no reader reads, sorted."""
    reads = field_reads(program, readers)
    return sorted(
        f"{cls}.{name}"
        for cls, names in sealed_fields(program, census).items()
        for name in names
        if (cls, name) not in reads
    )


def find_inert_fields(
    package_dirs: Sequence[Path],
    reader_dirs: Sequence[Path] | None = None,
    *,
    config_file: Path | None = None,
) -> list[str]:
    """Build ``package_dirs`` (and ``reader_dirs``) and return their inert fields.

    ``package_dirs`` are the packages (or single modules) whose sealed classes are
    counted; ``reader_dirs`` are where reads count, by default ``package_dirs``:
    add e.g. ``examples/`` to let an example make a field live.  Tests are never
    readers unless named here.
    """
    readers = package_dirs if reader_dirs is None else reader_dirs
    roots = list(dict.fromkeys(p.resolve() for p in [*package_dirs, *readers]))
    program = build_program(roots, config_file=config_file)
    return inert_fields(program, package_dirs, readers)
