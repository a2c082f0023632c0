"""Cache wasmtime-py's component type reflection. Written against wasmtime-py 50.0.1 exactly.

The one module over the size ceiling, on purpose: it patches wasmtime-py's private value
conversion internals, pinned to one wasmtime version, and mirrors that code's structure
so that it can be diffed against upstream after a bump.

Why: wasmtime-py converts every component value by asking the C API for its type again,
on every call. `Func.__call__` fetches the FuncType and its params/result, and each nested
`RecordType.fields`, `VariantType.cases`, `ListType.element`, `OptionType.payload`,
`ResultType.ok/err` and `VariantLikeType._tagged()` builds new ctypes structures and new
ValType wrappers through `valtype_from_ptr`. A variant is even worse: lowering one value
re-derives `_cases()` and `_tagged()` and the Python classes of every case. That
reflection was most of the time of a `handle(request, sender) -> response` event, and of
each typed `sqlite.value` (bench/bench_conversion.py).

What `install()` changes (results and error messages are the same as upstream's, but for
the AssertionErrors of values whose kind contradicts their type, which upstream raises
from bare asserts):
- The reflection properties above remember their answer on the ValType object, the
  variant-likes also their cases with each case's Python classes and a name -> type map.
  That pays off only where the same ValType objects are used again, which the next two
  points arrange (upstream makes new ones for every call):
- `Func.__call__` keeps the FuncType (its owner) and its param/result ValTypes on the Func
  object. A Func belongs to one Store, which one thread uses at a time.
- Host functions: the callback handed to the C API (`_linker.func_impl`) is replaced. It
  keeps, per FUNCTIONS index, the signatures it has seen: a clone of the FuncType (owner),
  its ValTypes, and the raw C valtypes. The C API passes a new temporary FuncType on every
  call and one host function may be imported by several components with different types,
  so each call first checks the incoming type against the cached one, param by param, in C
  (`wasmtime_component_valtype_equal`; no ValType wrappers).
  A host function marked with `pin_signature` (wkhost's: each class has a Linker of its
  own, so each import always comes with one type) skips that check after its first call,
  but for the parameter count: the check was most of the conversion time of a call
  such as `exec-write`.
- A list whose element is a variant of scalar payloads (the sqlite `value`s that most
  host calls carry) is lifted from bytes snapshots of the C values and freed whole in one
  call; a string in one copy.
- Variant lowering no longer uses upstream's module-global `case_test_cache` set, which
  two threads converting variants at once could clear under each other.
- `str_to_capi` (every string value, record field name and variant tag) copies once, in
  one C call, instead of three times.

Only Linkers whose functions are added after `install()` get the new host callback, so
install it before building the Linker (wkhost: first thing in `components.make_engine`).
Caches hold immutable tuples published with `dict.setdefault`, so threads racing on a
miss both compute an equal answer and one of them is kept. Set WKHOST_FASTCONV=0 to run
stock wasmtime-py (install() then does nothing and returns False).

`install()` refuses any other wasmtime-py version: this file leans on private internals
(`_types`, `_func`, `_linker`, `_bindings`). After a bump, diff those files against this
one, then update WASMTIME_VERSION.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
from ctypes import addressof, byref, pointer, string_at
from importlib.metadata import version
from typing import Any

from wasmtime import _bindings as capi
from wasmtime import _ffi as ffi
from wasmtime.component import _func, _linker
from wasmtime.component import _types as T
from wasmtime.component._enter import catch_exceptions, enter_wasm

WASMTIME_VERSION = "50.0.1"

_lock = threading.Lock()
_saved: list[tuple[Any, str, Any]] = []  # (owner, attribute, original) for uninstall()
_MISSING = object()


def wasmtime_version() -> str:
    return version("wasmtime")


def installed() -> bool:
    return bool(_saved)


def install() -> bool:
    """Patch wasmtime-py (idempotent). Returns False if disabled by WKHOST_FASTCONV=0."""
    if os.environ.get("WKHOST_FASTCONV", "1") == "0":
        return False
    found = wasmtime_version()
    if found != WASMTIME_VERSION:
        raise RuntimeError(f"wkhost.fastconv is written against wasmtime-py {WASMTIME_VERSION}"
                           f", found {found}: review the patch before using this version")
    with _lock:
        if _saved:
            return True
        cls: Any
        for cls, name in ((T.ListType, "element"), (T.OptionType, "payload"),
                          (T.ResultType, "ok"), (T.ResultType, "err")):
            _patch(cls, name, property(_memo(vars(cls)[name].fget, name)))
        for cls, name in ((T.RecordType, "fields"), (T.TupleType, "elements"),
                          (T.VariantType, "cases")):
            _patch(cls, name, property(_memo_list(vars(cls)[name].fget, name)))
        for cls in (T.VariantType, T.OptionType, T.ResultType):
            _patch(cls, "_cases", _memo_tuple(vars(cls)["_cases"], "_cases"))
        _patch(T.ListType, "_is_bytes", _memo(T.ListType._is_bytes, "_is_bytes"))
        _patch(T.VariantLikeType, "_tagged", _memo(T.VariantLikeType._tagged, "_tagged"))
        _patch(T.VariantLikeType, "_lower", _lower)
        _patch(T.VariantLikeType, "_lift", _lift)
        _patch(T.ListType, "convert_from_c", _list_from_c)
        _patch(T.String, "convert_from_c", _string_from_c)
        _patch(ffi, "str_to_capi", _str_to_capi)
        _patch(_func.Func, "__call__", _func_call)
        _patch(_linker, "func_impl", _func_impl)
        _patch(_linker, "func_finalize", _func_finalize)
    return True


def uninstall() -> None:
    """Restore upstream (for tests and benchmarks). Linkers built meanwhile keep our callback."""
    with _lock:
        while _saved:
            owner, name, original = _saved.pop()
            setattr(owner, name, original)


def _patch(owner: Any, name: str, new: Any) -> None:
    _saved.append((owner, name, vars(owner)[name]))
    setattr(owner, name, new)


# -- memoized reflection on ValType objects -----------------------------------------------
def _memo(compute: Any, name: str) -> Any:
    key = "_fastconv_" + name

    def get(self: Any) -> Any:
        d = self.__dict__
        v = d.get(key, _MISSING)
        if v is _MISSING:
            v = d.setdefault(key, compute(self))
        return v

    get.__name__ = name
    return get


def _memo_tuple(compute: Any, name: str) -> Any:
    return _memo(lambda self: tuple(compute(self)), name)


def _memo_list(compute: Any, name: str) -> Any:
    cached = _memo_tuple(compute, name)

    def get(self: Any) -> list[Any]:
        return list(cached(self))  # a fresh list, as upstream returns

    get.__name__ = name
    return get


def _variant_info(self: Any) -> tuple[bool, tuple[Any, ...], dict[str, Any]]:
    """(tagged, ((name, type, classes of the case or None), ...), {name: type})."""
    info = self.__dict__.get("_fastconv_info")
    if info is None:
        cases = []
        by_name: dict[str, Any] = {}
        for name, ty in self._cases():
            classes = None
            if ty is not None:
                s: set[type] = set()
                ty.add_classes(s)
                classes = tuple(s)
            cases.append((name, ty, classes))
            by_name.setdefault(name, ty)
        info = self.__dict__.setdefault("_fastconv_info",
                                        (self._tagged(), tuple(cases), by_name))
    return info  # type: ignore[no-any-return]


def _lower(self: Any, store: Any, val: Any) -> tuple[str, Any]:
    """VariantLikeType._lower with cached case data (same case choice, same errors)."""
    tagged, cases, by_name = _variant_info(self)
    if tagged:
        if not isinstance(val, T.Variant):
            raise TypeError("expected Variant type")
        name = val.tag
        ty = by_name.get(name, _MISSING)
        if ty is _MISSING:
            raise ValueError("value not valid for this variant")
        payload = val.payload
    else:
        name, ty = _untagged_case(cases, val)
        payload = val
    if ty is None:
        return (name, None)
    raw = ffi.wasmtime_component_val_t()
    ty.convert_to_c(store, payload, pointer(raw))
    return (name, ffi.wasmtime_component_val_new(byref(raw)))


def _untagged_case(cases: tuple[Any, ...], val: Any) -> tuple[str, Any]:
    """The first case that takes `val`: no payload takes None, else the payload's classes
    (upstream's order matters: a case whose payload accepts `object` shadows later ones)."""
    for name, ty, classes in cases:
        if (val is None) if ty is None else isinstance(val, classes):
            return name, ty
    raise ValueError("value not valid for this variant")


def _lift(self: Any, tag: str, ptr: Any) -> Any:
    tagged, _, by_name = _variant_info(self)
    ty = by_name.get(tag, _MISSING)
    if ty is _MISSING:
        raise ValueError(f"tag {tag} not found in variant cases")
    if ty is None:
        return T.Variant(tag) if tagged else None
    payload = ty.convert_from_c(ptr.contents)
    ptr.contents.kind = ffi.WASMTIME_COMPONENT_BOOL
    ptr.contents.of.boolean = False
    ffi.wasmtime_component_val_delete(ptr)
    return T.Variant(tag, payload) if tagged else payload


# -- lists of scalar variants, read from C memory in bulk ----------------------------------
# A `list<value>` of SQL parameters crosses on most host calls. Upstream lifts each
# element through a dozen ctypes field reads and frees its parts one by one. A list whose
# element is a variant with no payload or a scalar one (s64, f64, string) is read here
# from bytes snapshots of the C values instead, and freed whole by one vallist_delete at
# the end (which drops the elements' parts, as upstream's per-element frees would have).
# So is a list of pairs of strings (headers, a log record's fields: `_pairs_from_c`).
# Any other list goes upstream.
_LIST_KIND = ffi.WASMTIME_COMPONENT_LIST.value
_TUPLE_KIND = ffi.WASMTIME_COMPONENT_TUPLE.value
_VARIANT_KIND = ffi.WASMTIME_COMPONENT_VARIANT.value
_S64_KIND = ffi.WASMTIME_COMPONENT_S64.value
_F64_KIND = ffi.WASMTIME_COMPONENT_F64.value
_STRING_KIND = ffi.WASMTIME_COMPONENT_STRING.value
_SCALAR_PAYLOADS = {T.S64: _S64_KIND, T.F64: _F64_KIND, T.String: _STRING_KIND}
# A wasmtime_component_val_t: the kind byte, then its union's three words. As a variant:
# the discriminant's size and data, then the payload's pointer (NULL for none); as a
# string: its size and data; as an s64 the first word.
_VAL = struct.Struct("=B7xqQQ")
_F64 = struct.Struct("=8xd")
_LIST = struct.Struct("=QQ")  # a vallist: size, data
_VAL_SIZE = ctypes.sizeof(ffi.wasmtime_component_val_t)
_OF = ffi.wasmtime_component_val_t.of.offset
assert _VAL.size == _VAL_SIZE == 32 and _OF == 8  # the layout this reading assumes
# Second prototypes taking the address as an int: no ctypes objects for the union's fields.
_vallist_delete_at = ffi.dll["wasmtime_component_vallist_delete"]
_vallist_delete_at.restype = None
_vallist_delete_at.argtypes = [ctypes.c_void_p]
_byte_vec_delete_at = ffi.dll["wasm_byte_vec_delete"]
_byte_vec_delete_at.restype = None
_byte_vec_delete_at.argtypes = [ctypes.c_void_p]
_list_from_c_upstream = T.ListType.convert_from_c
# ctypes.string_at takes its length as a C int: anything longer is read another way.
_STRING_AT_MAX = 2**31 - 1


def _big_bytes_at(addr: int, size: int) -> bytes:
    return (ctypes.c_char * size).from_address(addr).raw


def _scalar_variant_plan(elem: Any) -> tuple[bool, dict[bytes, tuple[str, int | None]]] | None:
    """(tagged, {tag as bytes: (tag, payload kind or None)}) if `elem` is a variant whose
    cases have no payload or a scalar one; None otherwise."""
    if type(elem) is not T.VariantType:
        return None
    tagged, cases, _ = _variant_info(elem)
    by_tag: dict[bytes, tuple[str, int | None]] = {}
    for name, ty, _classes in cases:
        kind = None if ty is None else _SCALAR_PAYLOADS.get(type(ty))
        if ty is not None and kind is None:
            return None
        by_tag.setdefault(name.encode("utf-8"), (name, kind))
    return tagged, by_tag


_PAIRS = "string pairs"  # the plan of a list<tuple<string, string>>
_TWO_VALS = struct.Struct("=B7xqQQB7xqQQ")


def _list_plan(elem: Any) -> Any:
    if type(elem) is T.TupleType:
        kinds = [type(t) for t in elem.elements]
        return _PAIRS if kinds == [T.String, T.String] else None
    return _scalar_variant_plan(elem)


def _list_from_c(self: Any, c: Any) -> Any:
    plan = self.__dict__.get("_fastconv_plan", _MISSING)
    if plan is _MISSING:
        plan = self.__dict__.setdefault("_fastconv_plan", _list_plan(self.element))
    if plan is None:
        return _list_from_c_upstream(self, c)
    if plan is _PAIRS:
        return _pairs_from_c(c)
    at = _list_at(c)
    tagged, by_tag = plan
    Variant = T.Variant
    out: list[Any] = []
    try:
        for kind, tag_len, tag_data, payload in _VAL.iter_unpack(_elements(at)):
            if kind != _VARIANT_KIND:
                raise AssertionError("expected a variant value")
            tag = string_at(tag_data, tag_len)
            case = by_tag.get(tag)
            if case is None:
                raise ValueError(f"tag {tag.decode('utf-8', 'replace')} not found in variant cases")
            name, want = case
            if want is None:
                value = None
            else:
                raw = string_at(payload, _VAL_SIZE)
                got, word, ptr, _ = _VAL.unpack(raw)
                if got != want:
                    raise AssertionError("a variant payload of another kind than its type's")
                if got == _STRING_KIND:
                    value = (string_at(ptr, word) if word <= _STRING_AT_MAX
                             else _big_bytes_at(ptr, word)).decode("utf-8")
                elif got == _S64_KIND:
                    value = word
                else:
                    value = _F64.unpack_from(raw)[0]
            out.append(Variant(name, value) if tagged else value)
        return out
    finally:
        _vallist_delete_at(at)


def _pairs_from_c(c: Any) -> list[tuple[str, str]]:
    """A list<tuple<string, string>>, read as `_list_from_c` reads variants."""
    at = _list_at(c)
    out: list[tuple[str, str]] = []
    try:
        for kind, count, items, _ in _VAL.iter_unpack(_elements(at)):
            if kind != _TUPLE_KIND or count != 2:
                raise AssertionError("expected a pair")
            ka, na, da, _, kb, nb, db, _ = _TWO_VALS.unpack(string_at(items, 2 * _VAL_SIZE))
            if ka != _STRING_KIND or kb != _STRING_KIND:
                raise AssertionError("expected a pair of strings")
            out.append((_text_at(da, na), _text_at(db, nb)))
        return out
    finally:
        _vallist_delete_at(at)


def _list_at(c: Any) -> int:
    """The address of list value `c`'s vallist (which one vallist_delete frees whole)."""
    if c.kind != _LIST_KIND:
        raise AssertionError("expected a list value")
    return addressof(c) + _OF


def _elements(at: int) -> bytes:
    """The C values of the vallist at `at`, as one bytes snapshot."""
    size, data = _LIST.unpack(string_at(at, _LIST.size))
    n = size * _VAL_SIZE
    return string_at(data, n) if n <= _STRING_AT_MAX else _big_bytes_at(data, n)


def _text_at(data: int, size: int) -> str:
    return (string_at(data, size) if size <= _STRING_AT_MAX
            else _big_bytes_at(data, size)).decode("utf-8")


def _string_from_c(self: Any, c: Any) -> str:
    """String.convert_from_c without the union's ctypes objects and the bytearray copy."""
    if c.kind != _STRING_KIND:
        raise AssertionError("expected a string value")
    at = addressof(c) + _OF
    try:
        size, data = _LIST.unpack(string_at(at, _LIST.size))  # a byte vec: size, data
        raw = string_at(data, size) if size <= _STRING_AT_MAX else _big_bytes_at(data, size)
        return raw.decode("utf-8")
    finally:
        _byte_vec_delete_at(at)


# -- strings: one C call instead of three copies -------------------------------------------
# Upstream str_to_capi encodes, allocates the vec, copies into a ctypes array, then memmoves
# (every record field name goes through it on every call). A second prototype of
# wasm_byte_vec_new that takes `char *` lets ctypes pass the bytes object's buffer directly.
_byte_vec_new = ffi.dll["wasm_byte_vec_new"]  # a fresh function object, not _bindings' one
_byte_vec_new.restype = None
_byte_vec_new.argtypes = [ctypes.POINTER(ffi.wasm_byte_vec_t), ctypes.c_size_t, ctypes.c_char_p]


def _str_to_capi(s: str) -> Any:
    if not isinstance(s, str):
        raise TypeError("expected a string")
    data = s.encode("utf8")
    vec = ffi.wasm_byte_vec_t()
    _byte_vec_new(byref(vec), len(data), data)  # copies the bytes into a new vec
    return vec


# -- exported functions: the signature cached on the Func ---------------------------------
def _func_call(self: Any, store: Any, *params: Any) -> Any:
    """Func.__call__, reflecting the FuncType once per Func instead of once per call."""
    sig = self.__dict__.get("_fastconv_sig")
    if sig is None:
        fty = self.type(store)
        sig = (fty, tuple(ty for _, ty in fty.params), fty.result)  # fty: owner, kept alive
        self._fastconv_sig = sig
    _, param_tys, result_ty = sig
    if len(params) != len(param_tys):
        raise TypeError("wrong number of parameters provided: given "
                        f"{len(params)}, expected {len(param_tys)}")
    param_capi = (ffi.wasmtime_component_val_t * len(params))()
    n = 0
    try:
        for ty, val in zip(param_tys, params, strict=True):
            ty.convert_to_c(store, val, pointer(param_capi[n]))
            n += 1
        if result_ty is None:
            result_space = result_capi = None
            result_len = 0
        else:
            result_space = ffi.wasmtime_component_val_t()
            result_capi = byref(result_space)
            result_len = 1
        func = self._func
        enter_wasm(lambda: ffi.wasmtime_component_func_call(
            byref(func), store._context(), param_capi, n, result_capi, result_len))
        if result_space is None:
            return None
        return result_ty.convert_from_c(result_space)
    finally:
        for i in range(n):
            ffi.wasmtime_component_val_delete(byref(param_capi[i]))


# -- host functions: signatures cached per FUNCTIONS index, checked on every call unless
# the function is pinned (then only its parameter count is) ------------------------------
class _HostSig:
    """One FuncType a host function was called with: a clone (owner), its ValTypes and
    the raw C valtypes (kept valid by the ValTypes, which own their pointers)."""

    def __init__(self, ty_raw: Any) -> None:
        self.fty = T.FuncType._from_ptr(ffi.wasmtime_component_func_type_clone(ty_raw))
        raws, tys = [], []
        name, name_len = ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t()
        for i in range(ffi.wasmtime_component_func_type_param_count(self.fty.ptr())):
            raw = ffi.wasmtime_component_valtype_t()
            found = ffi.wasmtime_component_func_type_param_nth(
                self.fty.ptr(), i, byref(name), byref(name_len), byref(raw))
            assert found
            tys.append(T.valtype_from_ptr(raw))
            raws.append(raw)
        self.result: Any = None
        self.raw_result: Any = None
        raw = ffi.wasmtime_component_valtype_t()
        if ffi.wasmtime_component_func_type_result(self.fty.ptr(), byref(raw)):
            self.result = T.valtype_from_ptr(raw)
            self.raw_result = raw
        self.params = tuple(tys)
        self.raw_params = tuple(raws)

    def matches(self, ty_raw: Any) -> bool:
        if _param_count(ty_raw) != len(self.raw_params):
            return False
        name, name_len = ctypes.POINTER(ctypes.c_char)(), ctypes.c_size_t()
        raw = ffi.wasmtime_component_valtype_t()
        for i, want in enumerate(self.raw_params):
            _param_nth(ty_raw, i, byref(name), byref(name_len), byref(raw))
            if not _same_valtype(raw, want):
                return False
        if not _func_result(ty_raw, byref(raw)):
            return self.raw_result is None
        return self.raw_result is not None and _same_valtype(raw, self.raw_result)


def _same_valtype(raw: Any, want: Any) -> bool:
    """Compare a fetched valtype with a cached one, and free the fetched one."""
    if raw.kind in _PLAIN_KINDS:  # no payload: nothing to compare further, nothing to free
        return bool(raw.kind == want.kind)
    same = _valtype_equal(byref(raw), byref(want))
    _valtype_delete(byref(raw))
    return bool(same)


# The raw ctypes functions, skipping the Python wrappers in _bindings on the hot path.
_param_count = capi._wasmtime_component_func_type_param_count
_param_nth = capi._wasmtime_component_func_type_param_nth
_func_result = capi._wasmtime_component_func_type_result
_valtype_equal = capi._wasmtime_component_valtype_equal
_valtype_delete = capi._wasmtime_component_valtype_delete

# Valtype kinds without a payload pointer: bool, integers, floats, char, string, error-context.
_PLAIN_KINDS = frozenset({*range(ffi.WASMTIME_COMPONENT_VALTYPE_STRING.value + 1),
                          ffi.WASMTIME_COMPONENT_VALTYPE_ERROR_CONTEXT.value})

_host_sigs: dict[int, tuple[_HostSig, ...]] = {}
# The signature each pinned host function (by FUNCTIONS index) was first called with.
_pinned: dict[int, _HostSig] = {}
_PIN = "_fastconv_pin"


def pin_signature(fn: Any) -> Any:
    """Mark host function `fn` as added to a Linker that instantiates one component only,
    so that each import it is added as always comes with the same type. Its first call's
    signature then serves every later call unchecked: the full check was a large part
    of a call's time. Only the parameter count is still compared, a guard against misuse that
    falls back to the full check. Returns `fn`."""
    setattr(fn, _PIN, True)
    return fn


def _host_sig(idx: int, ty_raw: Any) -> _HostSig:
    for sig in _host_sigs.get(idx, ()):
        if sig.matches(ty_raw):
            return sig
    sig = _HostSig(ty_raw)
    with _lock:
        _host_sigs[idx] = (*_host_sigs.get(idx, ()), sig)
    return sig


@ffi.wasmtime_component_func_callback_t
def _func_impl(idx, context, ty_raw, args, nargs, results, nresults):  # type: ignore[no-untyped-def]
    """_linker.func_impl with the signature from _host_sig instead of fresh reflection."""

    def run(store: Any) -> None:
        func = _linker.FUNCTIONS.get(idx or 0)
        sig = _pinned.get(idx or 0)
        if sig is None or _param_count(ty_raw) != len(sig.params):
            sig = _host_sig(idx or 0, ty_raw)
            if getattr(func, _PIN, False):
                _pinned[idx or 0] = sig
        result_ty = sig.result
        assert len(sig.params) == nargs
        assert nresults == (0 if result_ty is None else 1)
        pyargs = [ty.convert_from_c(args[i]) for i, ty in enumerate(sig.params)]
        result = func(store, *pyargs)
        if result_ty is None:
            assert result is None
        else:
            result_ty.convert_to_c(store, result, results)

    return catch_exceptions(context, run)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _func_finalize(idx):  # type: ignore[no-untyped-def]
    _host_sigs.pop(idx or 0, None)  # the function is gone: so are its signatures
    _pinned.pop(idx or 0, None)
    if _linker.FUNCTIONS:
        _linker.FUNCTIONS.deallocate(idx or 0)
