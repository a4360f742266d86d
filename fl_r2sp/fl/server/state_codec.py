"""Encode a server loop's object graph as JSON plus NumPy arrays; decode it without running code.

A checkpoint (:mod:`fl_r2sp.fl.server.checkpoint`) holds the whole state of a loop: policy
objects, the event queue, jobs, the admission gate, the telemetry. A pickle could store all of
that but runs code of the file's choosing when read. This codec stores the same graph as data:

* ``None``, ``bool``, ``int``, ``float`` (exact: Python writes the shortest repr that reads back
  to the same double, ``NaN``/``Infinity`` included) and ``str`` as themselves;
* every other value as a tagged JSON object: ``{"$ref": i}`` points into a table of
  containers and objects, so shared references stay shared and cycles close, as in a pickle;
* arrays by reference into the ``.npz`` beside the JSON (never of dtype ``object``), NumPy
  scalars by dtype and bytes, ``bytes``, tuples, sets, ``deque``, ``Counter``,
  ``itertools.count``, bound methods, and a few named functions (:data:`FUNCTIONS`);
* instances of classes defined in the ``fl_r2sp`` package, by module and qualified name,
  with their ``__dict__`` and ``__slots__``.

Decoding imports only ``fl_r2sp`` modules, builds instances with ``object.__new__`` (no
``__init__``, no ``__setstate__``) and sets their attributes; any other class, function or
tag is refused with :class:`CodecError`. Encoding refuses what it cannot store the same way,
naming where in the graph it sits, so a checkpoint that saves is one that loads.
"""

from __future__ import annotations

import collections
import importlib
import itertools
import re
import time
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from fl_r2sp.moved import current_name

#: Package whose classes may be rebuilt from a checkpoint.
PACKAGE = "fl_r2sp"
#: Plain functions a loop holds as values (a default clock), by the name stored for them.
FUNCTIONS: dict[str, Callable[..., Any]] = {"time.monotonic": time.monotonic}
_FUNCTION_NAMES = {id(f): name for name, f in FUNCTIONS.items()}
_COUNT = re.compile(r"count\((-?\d+)\)")


class CodecError(ValueError):
    """A value that cannot be stored, or a stored value that may not be rebuilt."""


#: ``external(obj)`` of :func:`encode`: a JSON node standing for ``obj`` (stored elsewhere), or
#: None to encode ``obj`` here.
External = Callable[[Any], Any]
#: ``resolve(tag, argument)`` of :func:`decode`: the object a ``$log`` / ``$logref`` node
#: stands for.
Resolver = Callable[[str, Any], Any]


class NotPlain(CodecError):
    """A value that ``plain=True`` encoding refuses: an instance or a bound method."""


def encode(
    root: Any, external: External | None = None, plain: bool = False
) -> tuple[Any, list[np.ndarray]]:
    """``root`` as a JSON-ready structure and the arrays it refers to (``{"$array": i}``).

    Parameters
    ----------
    root : object
        What to store.
    external : callable or None (default: None)
        Asked for every object that would go into the object table (not ``root`` itself):
        a node (``{"$log": k}``, ``{"$logref": [k, i]}``) put in its place, without looking
        inside it, or None to store it here (:mod:`fl_r2sp.fl.server.checkpoint_segments`).
    plain : bool (default: False)
        Refuse instances of classes and bound methods (:class:`NotPlain`): data only.

    Raises
    ------
    CodecError
        Naming the path (``root.policy.groups[0]`` ...) of a value of an unsupported type.
    """
    enc = _Encoder(external, plain)
    tree = enc.value(root, "root", top=True)
    return {"root": tree, "objects": enc.table}, enc.arrays


class StateEncoder:
    """Encodes several values into one object table (what they share is stored once).

    Parameters as for :func:`encode`. Decode a node of :meth:`root` with a
    :class:`StateDecoder` of ``{"root": None, "objects": table}`` and :attr:`arrays`.
    """

    def __init__(self, external: External | None = None, plain: bool = False) -> None:
        self._enc = _Encoder(external, plain)
        self._count = 0

    def root(self, value: Any) -> Any:
        """The node of ``value`` (itself never passed to ``external``)."""
        self._count += 1
        return self._enc.value(value, f"root[{self._count - 1}]", top=True)

    @property
    def table(self) -> list[Any]:
        """The object table so far."""
        return self._enc.table

    @property
    def arrays(self) -> list[np.ndarray]:
        """The arrays so far."""
        return self._enc.arrays


def decode(doc: Any, arrays: list[np.ndarray], resolve: Resolver | None = None) -> Any:
    """Rebuild what :func:`encode` stored (``doc`` parsed from JSON, ``arrays`` in order).

    ``resolve`` rebuilds the ``$log`` and ``$logref`` nodes an ``external`` put in (default
    None: such nodes are refused).

    Raises
    ------
    CodecError
        On a malformed document or a class/function outside what this codec may build.
    """
    return StateDecoder(doc, arrays, resolve).value(doc["root"])


class StateDecoder:
    """Decodes the nodes of one encoded document on demand, sharing what it built (an
    object referred to twice is built once)."""

    def __init__(self, doc: Any, arrays: list[np.ndarray], resolve: Resolver | None) -> None:
        if not isinstance(doc, dict) or set(doc) != {"root", "objects"}:
            raise CodecError("not an encoded state (expected the keys 'root' and 'objects')")
        self._decoder = _Decoder(doc["objects"], arrays, resolve)

    def value(self, node: Any) -> Any:
        """The object ``node`` (a part of this document) stands for."""
        return self._decoder.value(node)


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _ordered(items: set[Any] | frozenset[Any]) -> list[Any]:
    """Set members sorted where they compare (the same set, the same file), else as iterated."""
    try:
        return sorted(items)
    except TypeError:
        return list(items)


def _slots(cls: type) -> list[str]:
    names: list[str] = []
    for klass in cls.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names += [slots] if isinstance(slots, str) else [s for s in slots if s != "__dict__"]
    return names


class _Encoder:
    def __init__(self, external: External | None = None, plain: bool = False) -> None:
        self.table: list[Any] = []
        self.arrays: list[np.ndarray] = []
        self.memo: dict[int, int] = {}
        self.keep: list[Any] = []  # holds encoded objects alive so their ids stay unique
        self.external, self.plain = external, plain

    def value(self, x: Any, path: str, top: bool = False) -> Any:
        t = type(x)
        if x is None or t in (bool, int, float, str):
            return x
        if isinstance(x, np.generic):
            return {"$scalar": x.dtype.str, "hex": x.tobytes().hex()}
        if t is bytes:
            return {"$bytes": x.hex()}
        if t is tuple:
            return {"$tuple": [self.value(v, f"{path}[{i}]") for i, v in enumerate(x)]}
        if t is frozenset:
            return {"$frozenset": [self.value(v, f"{path}{{}}") for v in _ordered(x)]}
        if t is itertools.count:
            match = _COUNT.fullmatch(repr(x))
            if match is None:
                raise CodecError(f"{path}: only itertools.count(n) with step 1 is stored")
            return {"$count": int(match.group(1))}
        if isinstance(x, types.BuiltinFunctionType | types.FunctionType):
            if id(x) not in _FUNCTION_NAMES:
                raise CodecError(f"{path}: function {x!r} is not storable")
            return {"$function": _FUNCTION_NAMES[id(x)]}
        if self.external is not None and not top:  # first: what is stored elsewhere stays there
            node = self.external(x)
            if node is not None:
                return node
        if id(x) in self.memo:
            return {"$ref": self.memo[id(x)]}
        index = len(self.table)
        self.memo[id(x)] = index
        self.keep.append(x)
        self.table.append(None)
        self.table[index] = self._container(x, path)
        return {"$ref": index}

    def _container(self, x: Any, path: str) -> Any:
        t = type(x)
        if t is np.ndarray:
            if x.dtype.hasobject:
                raise CodecError(f"{path}: arrays of Python objects are not stored")
            self.arrays.append(x)
            return {"$array": len(self.arrays) - 1}
        if t is list:
            return {"$list": [self.value(v, f"{path}[{i}]") for i, v in enumerate(x)]}
        if t is set:
            return {"$set": [self.value(v, f"{path}{{}}") for v in _ordered(x)]}
        if t in (dict, collections.Counter):
            pairs = [
                [self.value(k, f"{path}{{}}"), self.value(v, f"{path}[{k!r}]")]
                for k, v in x.items()
            ]
            return {"$dict" if t is dict else "$counter": pairs}
        if t is collections.deque:
            items = [self.value(v, f"{path}[{i}]") for i, v in enumerate(x)]
            return {"$deque": items, "maxlen": x.maxlen}
        if self.plain:  # what remains is an instance or a bound method: not data
            raise NotPlain(f"{path}: {t.__qualname__} in data stored by value")
        if t is types.MethodType:
            return {"$method": x.__func__.__name__, "self": self.value(x.__self__, path)}
        return self._instance(x, path)

    def _instance(self, x: Any, path: str) -> Any:
        cls = type(x)
        if not cls.__module__.startswith(PACKAGE + ".") or "<locals>" in cls.__qualname__:
            raise CodecError(
                f"{path}: instances of {cls.__module__}.{cls.__qualname__} are not stored"
            )
        attrs = dict(getattr(x, "__dict__", {}))
        attrs.update({s: getattr(x, s) for s in _slots(cls) if hasattr(x, s)})
        fields = [[k, self.value(v, f"{path}.{k}")] for k, v in attrs.items()]
        return {"$object": _class_path(cls), "attrs": fields}


class _Decoder:
    def __init__(self, table: Any, arrays: list[np.ndarray], resolve: Resolver | None) -> None:
        if not isinstance(table, list):
            raise CodecError("the object table is not a list")
        self.table = table
        self.arrays = arrays
        self.resolve = resolve
        self.built: dict[int, Any] = {}

    def value(self, node: Any) -> Any:
        if node is None or type(node) in (bool, int, float, str):
            return node
        if not isinstance(node, dict) or len(node) == 0:
            raise CodecError(f"malformed value {str(node)[:80]!r}")
        tag = next(iter(node))
        if tag == "$ref":
            return self._ref(node["$ref"])
        if tag == "$scalar":
            return np.frombuffer(bytes.fromhex(node["hex"]), dtype=np.dtype(node["$scalar"]))[0]
        if tag == "$bytes":
            return bytes.fromhex(node["$bytes"])
        if tag == "$tuple":
            return tuple(self.value(v) for v in node["$tuple"])
        if tag == "$frozenset":
            return frozenset(self.value(v) for v in node["$frozenset"])
        if tag == "$count":
            return itertools.count(int(node["$count"]))
        if tag == "$function" and node["$function"] in FUNCTIONS:
            return FUNCTIONS[node["$function"]]
        if tag in ("$log", "$logref") and self.resolve is not None:
            return self.resolve(tag, node[tag])
        raise CodecError(f"unknown or refused tag {tag!r}")

    def _ref(self, index: Any) -> Any:
        if not isinstance(index, int) or not 0 <= index < len(self.table):
            raise CodecError(f"reference {index!r} outside the object table")
        if index in self.built:
            return self.built[index]
        node = self.table[index]
        if not isinstance(node, dict) or not node:
            raise CodecError(f"object {index} is malformed")
        tag = next(iter(node))
        if tag == "$array":
            return self._keep(index, self.arrays[int(node["$array"])])
        if tag == "$method":
            owner = self.value(node["self"])
            return self._keep(index, self._method(owner, node["$method"]))
        shell = self._shell(tag, node)
        self.built[index] = shell  # before the contents: cycles close on the shell
        self._fill(shell, tag, node)
        return shell

    def _keep(self, index: int, obj: Any) -> Any:
        self.built[index] = obj
        return obj

    @staticmethod
    def _method(owner: Any, name: Any) -> Any:
        func = getattr(type(owner), str(name), None)
        if not isinstance(func, types.FunctionType):
            raise CodecError(f"{type(owner).__qualname__} has no method {name!r}")
        return types.MethodType(func, owner)

    def _shell(self, tag: str, node: dict[str, Any]) -> Any:
        if tag == "$list":
            return []
        if tag == "$set":
            return set()
        if tag == "$dict":
            return {}
        if tag == "$counter":
            return collections.Counter()
        if tag == "$deque":
            maxlen = node.get("maxlen")
            return collections.deque(maxlen=None if maxlen is None else int(maxlen))
        if tag == "$object":
            return object.__new__(_allowed_class(str(node["$object"])))
        raise CodecError(f"unknown or refused tag {tag!r}")

    def _fill(self, shell: Any, tag: str, node: dict[str, Any]) -> None:
        items = node[tag] if tag != "$object" else node["attrs"]
        if tag in ("$list", "$deque"):
            shell.extend(self.value(v) for v in items)
        elif tag == "$set":
            shell.update(self.value(v) for v in items)
        elif tag in ("$dict", "$counter"):
            for key, value in items:
                shell[self.value(key)] = self.value(value)
        else:
            slots = set(_slots(type(shell)))
            for name, value in items:
                if name in slots:  # slotted (and frozen) classes: past their __setattr__
                    object.__setattr__(shell, str(name), self.value(value))
                else:  # as a pickle restores: straight into __dict__, past any descriptor
                    shell.__dict__[str(name)] = self.value(value)


def _allowed_class(path: str) -> type:
    """The class ``module:qualname`` if it is defined in the ``fl_r2sp`` package."""
    module_name, _, qualname = path.partition(":")
    # A checkpoint written before the federated half moved names its classes by their old
    # module paths (fl_r2sp.strategies.flr2sp:...): read them under their new names.
    module_name = current_name(module_name)
    if not module_name.startswith(PACKAGE + ".") or not qualname:
        raise CodecError(f"class {path!r} is outside the {PACKAGE} package: refused")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise CodecError(f"class {path!r} does not exist in this version") from None
    if not isinstance(obj, type) or obj.__module__ != module_name:
        raise CodecError(f"{path!r} is not a class of {module_name}")
    return obj
