"""ncf: Neural Collaborative Filtering (NeuMF, GMF, MLP, MF) over the ncf.h C library.

    import ncf
    data = ncf.Dataset("ratings.dat")                    # a file, a DataFrame or a SciPy sparse matrix
    model = ncf.Model(model="mf", factors=64).fit(data, epochs=20)
    ids, scores = model.recommend(42, k=10)

Ids are kept as written: a side whose ids are all plain integers (a MovieLens file, a SciPy
matrix's rows and columns) gives and takes integers, any other side strings. Failures raise
ncf.Error subclasses that are also the Python exception a caller expects (UnknownIdError is a
KeyError, InvalidValueError a ValueError, InvalidTypeError a TypeError, FileError an OSError,
OutOfMemoryError a MemoryError), carrying the library's message. Every call into the library
releases the GIL; a model serves any number of threads while another trains it (training
makes a new model, swapped in when it is done). Answers are the C library's, bit for bit.
Needs only NumPy (pandas for DataFrames, SciPy for sparse matrices, tqdm for its bars).
"""
from __future__ import annotations

import ctypes as _c
import glob as _glob
import math as _math
import numbers as _numbers
import os as _os
import re as _re
import sys as _sys
import threading as _threading
import time as _time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as _np

__all__ = ["Dataset", "Features", "Model", "Error", "UnknownIdError", "InvalidValueError", "InvalidTypeError", "FileError",
           "DataError", "OutOfMemoryError", "popularity", "ranking_metrics", "ranking_metrics_at_k",
           "train_test_split", "set_threads", "version", "__version__"]


def _find_library() -> str:
    chosen = _os.environ.get("NCF_LIBRARY")  # (a sanitizer build, for the package's own checks)
    if chosen:
        return chosen
    here = _os.path.dirname(_os.path.abspath(__file__))
    found = sorted(sum((_glob.glob(_os.path.join(here, "_ncf*." + ext)) for ext in ("so", "dll", "dylib", "pyd")), []))
    if not found:
        raise ImportError("ncf: the compiled library is missing next to %s: build it with `make python` (or "
                          "`pip install --no-build-isolation ./python`) in the ncf.h repository" % here)
    return found[0]


_lib = _c.CDLL(_find_library())

_P = _c.c_void_p
_i32p = _np.ctypeslib.ndpointer(dtype=_np.int32, flags="C_CONTIGUOUS")
_f32p = _np.ctypeslib.ndpointer(dtype=_np.float32, flags="C_CONTIGUOUS")
_f64p = _np.ctypeslib.ndpointer(dtype=_np.float64, flags="C_CONTIGUOUS")
_i64p = _np.ctypeslib.ndpointer(dtype=_np.int64, flags="C_CONTIGUOUS")
_u64p = _np.ctypeslib.ndpointer(dtype=_np.uint64, flags="C_CONTIGUOUS")
_PROGRESS = _c.CFUNCTYPE(_c.c_int, _c.c_void_p, _c.c_longlong, _c.c_longlong, _c.c_longlong, _c.c_double)
_EPOCH = _c.CFUNCTYPE(None, _c.c_void_p, _c.c_int, _c.c_double, _c.POINTER(_c.c_double))
_TUNE_PROGRESS = _c.CFUNCTYPE(None, _c.c_void_p, _c.c_void_p, _c.c_int, _c.c_int, _c.c_int, _c.c_double)


def _sig(name, res, *args):
    f = getattr(_lib, name)
    f.restype, f.argtypes = res, list(args)
    return f


_error_text = _sig("ncf_error_text", _c.c_char_p)
_version = _sig("ncf_version", _c.c_char_p)
_set_threads = _sig("ncf_set_threads", _c.c_int, _c.c_int)
_free = _sig("ncf_free", None, _P)
_load = _sig("ncfpy_load", _c.c_int, _c.c_char_p, _c.c_char_p, _c.c_size_t, _c.c_int, _c.c_double, _c.c_longlong,
             _c.c_int, _c.c_double, _c.c_char_p, _c.c_int, _c.c_int, _c.c_int, _c.c_double, _c.c_ulonglong, _c.c_char_p,
             _c.c_int, _c.c_int, _c.c_int, _c.c_char_p, _c.c_char_p, _P)
_dataset_event = _sig("ncfpy_dataset_event", _c.c_int, _P, _c.c_int, _c.c_char_p, _c.c_size_t, _f64p)
_arrays_text = _sig("ncfpy_arrays_text", _P, _i64p, _i64p, _P, _P, _c.c_longlong, _i64p)
_shim_free = _sig("ncfpy_free", None, _P)
_dataset_free = _sig("ncfpy_dataset_free", None, _P)
_save_split = _sig("ncf_save_split", _c.c_int, _P, _c.c_char_p)
_dataset_info = _sig("ncfpy_dataset_info", None, _P, _f64p)
_dataset_csr = _sig("ncfpy_dataset_csr", _c.c_longlong, _P, _c.c_int, _P, _P)
_dataset_raw_ids = _sig("ncfpy_dataset_raw_ids", _c.c_int, _P, _c.c_int, _i64p)
_ids_text = _sig("ncfpy_ids_text", _c.c_longlong, _P, _c.c_int, _c.c_int, _P, _c.c_longlong)
_model_create = _sig("ncfpy_model_create", _c.c_int, _P, _c.c_int, _c.c_int, _i32p, _c.c_int, _c.c_double, _c.c_double,
                     _c.c_int, _c.c_int, _c.c_double, _c.c_ulonglong, _c.c_int, _c.c_double, _P)
_model_free = _sig("ncf_model_free", None, _P)
_fit = _sig("ncfpy_fit", _c.c_int, _P, _P, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int,
            _PROGRESS, _EPOCH, _i32p, _f64p)
_tune = _sig("ncfpy_tune", _c.c_int, _P, _c.c_double, _c.c_ulonglong, _c.c_int, _c.c_int, _c.c_int, _c.c_int, _c.c_int,
             _c.c_int, _P, _P, _c.c_int, _TUNE_PROGRESS, _P)
_tune_info = _sig("ncfpy_tune_info", None, _P, _i32p)
_tune_row = _sig("ncfpy_tune_row", _c.c_int, _P, _c.c_int, _c.c_int, _f64p)
_tune_averaged = _sig("ncfpy_tune_averaged", _c.c_int, _P, _c.c_int, _f64p)
_tune_final = _sig("ncfpy_tune_final", _c.c_int, _P, _P, _PROGRESS, _P)
_tune_free = _sig("ncfpy_tune_free", None, _P)
_evaluate = _sig("ncfpy_evaluate", _c.c_int, _P, _P, _c.c_int, _c.c_int, _i32p, _c.c_int, _f64p)
_save = _sig("ncf_save", _c.c_int, _P, _c.c_char_p, _c.c_int)
_load_model = _sig("ncfpy_load_model", _c.c_int, _c.c_char_p, _P)
_save_mem = _sig("ncfpy_save_mem", _c.c_int, _P, _P, _i64p)
_load_mem = _sig("ncfpy_load_mem", _c.c_int, _c.c_char_p, _c.c_size_t, _P)
_grown = _sig("ncfpy_grown", _c.c_int, _P, _P, _P)
_added = _sig("ncfpy_added", _c.c_int, _P, _c.c_int, _c.c_char_p, _c.c_int, _f32p, _P)
_config_numbers = _sig("ncfpy_config_numbers", _c.c_int)
_model_config = _sig("ncfpy_model_config", None, _P, _f64p, _u64p)
_model_info = _sig("ncfpy_model_info", _c.c_int, _P, _i64p)
_raw_ids = _sig("ncfpy_raw_ids", _c.c_int, _P, _c.c_int, _i64p)
_find = _sig("ncf_find", _c.c_int, _P, _c.c_int, _c.c_char_p)
_recommend = _sig("ncfpy_recommend", _c.c_int, _P, _c.c_int, _P, _c.c_int, _c.c_int, _P, _c.c_int, _P, _c.c_int, _c.c_int,
                  _P, _P)  # (plain pointers: a call's argument checks are most of its cost from Python)
_recommend_users = _sig("ncfpy_recommend_users", _c.c_int, _P, _i32p, _c.c_int, _c.c_int, _c.c_int, _P, _c.c_int, _P,
                        _c.c_int, _c.c_int, _i32p, _f32p, _i32p)
_row_size = _sig("ncf_row_size", _c.c_int, _P)
_row = _sig("ncfpy_row", _c.c_int, _P, _c.c_int, _c.c_int, _f32p)
_fold_in = _sig("ncfpy_fold_in", _c.c_int, _P, _c.c_int, _i32p, _c.c_int, _c.c_ulonglong, _f32p)
_similar = _sig("ncfpy_similar", _c.c_int, _P, _c.c_int, _c.c_int, _c.c_int, _P, _c.c_int, _P, _c.c_int, _i32p, _f32p)
_predict = _sig("ncfpy_predict", _c.c_int, _P, _i32p, _i32p, _c.c_int, _f32p)
_predict_for = _sig("ncfpy_predict_for", _c.c_int, _P, _c.c_int, _f32p, _i32p, _c.c_int, _f32p)
_factors_width = _sig("ncfpy_factors_width", _c.c_int, _P)
_factors = _sig("ncfpy_factors", _c.c_int, _P, _c.c_int, _f32p)
_features_load = _sig("ncfpy_features_load", _c.c_int, _c.c_char_p, _c.c_char_p, _c.c_size_t, _c.c_char_p, _c.c_char_p,
                      _c.c_char_p, _P)
_features_csr = _sig("ncfpy_features_csr", _c.c_int, _c.c_int, _c.c_char_p, _c.c_int, _c.c_char_p, _i64p, _i32p, _P, _P)
_features_free = _sig("ncfpy_features_free", None, _P)
_features_info = _sig("ncfpy_features_info", None, _P, _i64p)
_set_features = _sig("ncfpy_set_features", _c.c_int, _P, _c.c_int, _P, _P, _c.c_int, _c.c_float)
_added_features = _sig("ncfpy_added_features", _c.c_int, _P, _c.c_int, _P, _P, _i32p)
_feature_row = _sig("ncfpy_feature_row", _c.c_int, _P, _c.c_int, _c.c_char_p, _c.c_int, _f32p)

__version__: str = _version().decode()
MAX_ID_BYTES = 256
INT_MAX = 2 ** 31 - 1
_NCF_OK, _ERR_ARG, _ERR_NOMEM, _ERR_IO, _ERR_PARSE, _ERR_DATA = 0, -1, -2, -3, -4, -5
_HOLDOUTS = {"auto": 0, "latest": 1, "random": 2, "none": 3, "ratio": 4, "time": 5, "cutoff": 6, "items": 9}
_HOLDOUT_NAMES = {0: "auto", 1: "latest", 2: "random", 3: "none", 4: "ratio", 5: "time", 6: "cutoff", 7: "saved",
                  8: "paper", 9: "items"}
_MODELS = {"neumf": 0, "gmf": 1, "mlp": 2, "mf": 3}
_MODEL_NAMES = {v: k for k, v in _MODELS.items()}
_OPTIMIZERS = {"adam": 0, "sgd": 1, "als": 2}
_OPTIMIZER_NAMES = {v: k for k, v in _OPTIMIZERS.items()}
_METRICS = {"hr": 0, "ndcg": 1, "mrr": 2, "recall": 3, "precision": 4, "map": 5}
_WEIGHTINGS = {"none": 0, "linear": 1, "log": 2}
_SIDES = {"user": 0, "item": 1}
_USER, _ITEM = 0, 1


# ---- errors ----------------------------------------------------------------------------------
class Error(Exception):
    """A failed ncf call; the message is the library's (file, line and problem where it knows them).
    Each subclass is also the built-in exception Python code expects for that kind of failure."""


class UnknownIdError(Error, KeyError):
    """An id the model or dataset does not know (a KeyError)."""

    __str__ = Exception.__str__  # (KeyError's would quote the message)


class InvalidValueError(Error, ValueError):
    """An argument of the right type and a value the call cannot take (a ValueError)."""


class InvalidTypeError(Error, TypeError):
    """An argument of a type the call does not take, or an unknown option (a TypeError)."""


class FileError(Error, OSError):
    """A file that could not be opened, read or written (an OSError)."""


class DataError(Error, ValueError):
    """A malformed line in a log, a damaged model file, or data that cannot be used (a ValueError)."""


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed; nothing the caller gave was changed (a MemoryError)."""


_BY_CODE = {_ERR_ARG: InvalidValueError, _ERR_NOMEM: OutOfMemoryError, _ERR_IO: FileError, _ERR_PARSE: DataError,
            _ERR_DATA: DataError}


def _fail(rc: int = _ERR_ARG, call: Optional[str] = None):
    """Raises the library's last error as its class; call names the Python call in place of the C
    function the message starts with."""
    text = _error_text().decode("utf-8", "replace")
    if call:
        text = call + ": " + _re.sub(r"^(ncf_\w+( \([^)]*\))?|config): ", "", text)
    cls = _BY_CODE.get(rc, Error)
    if rc == _ERR_ARG and (text.startswith("unknown user") or text.startswith("unknown item")):
        cls = UnknownIdError
    raise cls(text)


def _check(rc: int, call: Optional[str] = None) -> int:
    if rc < 0:
        _fail(rc, call)
    return rc


# ---- argument checks: every value the library gets is checked here, named as the caller named it --
def _type_name(v) -> str:
    return type(v).__name__


def _int(v, name: str, lo: int = 0, hi: int = INT_MAX) -> int:
    if type(v) is int and lo <= v <= hi:  # (the common case, without the ABC checks below)
        return v
    if isinstance(v, (bool, _np.bool_)) or not isinstance(v, (_numbers.Integral, _np.integer)):
        raise InvalidTypeError("%s must be an integer, not %s %r" % (name, _type_name(v), v))
    v = int(v)
    if not lo <= v <= hi:
        raise InvalidValueError("%s %d: must be %d to %d" % (name, v, lo, hi))
    return v


def _float(v, name: str, lo: float = -_math.inf, hi: float = _math.inf, open_lo: bool = False) -> float:
    if isinstance(v, (bool, _np.bool_)) or not isinstance(v, (_numbers.Real, _np.floating, _np.integer)):
        raise InvalidTypeError("%s must be a number, not %s %r" % (name, _type_name(v), v))
    v = float(v)
    if not (lo < v if open_lo else lo <= v) or not v <= hi or v != v:
        raise InvalidValueError("%s %r: must be %s %s and at most %s" % (name, v, ">" if open_lo else ">=", lo, hi))
    return v


def _flag(v, name: str) -> int:
    if v is True or v is False:
        return 1 if v else 0
    if isinstance(v, (bool, _np.bool_)) or (isinstance(v, (int, _np.integer)) and v in (0, 1)):
        return 1 if v else 0
    raise InvalidTypeError("%s must be True or False, not %s %r" % (name, _type_name(v), v))


def _text(v, name: str) -> bytes:
    """A string argument as the library's NUL-terminated bytes: one holding a NUL is refused (C
    would read it cut there)."""
    if isinstance(v, str):
        try:
            b = v.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raise InvalidValueError("%s %r is not valid Unicode text (a lone surrogate)" % (name, v)) from None
    elif isinstance(v, (bytes, bytearray)):
        b = bytes(v)
    else:
        raise InvalidTypeError("%s must be a string, not %s %r" % (name, _type_name(v), v))
    if b"\0" in b:
        raise InvalidValueError("%s %r holds a NUL character" % (name, v))
    return b


def _path(p, name: str = "path") -> bytes:
    if not isinstance(p, (str, bytes, _os.PathLike)):
        raise InvalidTypeError("%s must be a path (str, bytes or os.PathLike), not %s %r" % (name, _type_name(p), p))
    try:
        return _text(_os.fsencode(p), name)
    except UnicodeEncodeError:
        raise InvalidValueError("%s %r is not valid Unicode text (a lone surrogate)" % (name, p)) from None


def _choice(table: dict, value, what: str):
    if not isinstance(value, str) or value not in table:
        raise InvalidValueError("%s %r: one of %s" % (what, value, ", ".join(sorted(table))))
    return table[value]


def _select(select) -> Tuple[int, int]:
    if not isinstance(select, str):
        raise InvalidTypeError("select must be a string such as 'ndcg@10', not %s %r" % (_type_name(select), select))
    name, _, k = select.partition("@")
    metric = _choice(_METRICS, name.lower(), "select metric")
    if k and not k.isdigit():
        raise InvalidValueError("select %r: the cut-off after @ is a whole number" % select)
    return metric, _int(int(k) if k else 10, "select's cut-off", 1, INT_MAX)


def _id_text(v, what: str) -> bytes:
    """An id as the library finds it: a string as written, an integer (or a float holding one, as
    a pandas column with gaps becomes) in decimal."""
    t = type(v)
    if t is int or t is _np.int64 or t is _np.int32:
        return b"%d" % v
    if t is str:
        return _text(v, what)
    if isinstance(v, (str, bytes, bytearray)):
        return _text(v, what)
    if isinstance(v, (bool, _np.bool_)):
        raise InvalidTypeError("%s must be an integer or a string, not %r" % (what, v))
    if isinstance(v, (_numbers.Integral, _np.integer)):
        return str(int(v)).encode()
    if isinstance(v, (_numbers.Real, _np.floating)):
        f = float(v)
        if f != f or f in (_math.inf, -_math.inf):
            raise InvalidValueError("%s %r is not an id (a missing value?)" % (what, v))
        if f != int(f):
            raise InvalidValueError("%s %r is not an id: ids are integers or strings" % (what, v))
        return str(int(f)).encode()
    if v is None:
        raise InvalidValueError("%s None is not an id (a missing value?)" % what)
    raise InvalidTypeError("%s must be an integer or a string, not %s %r" % (what, _type_name(v), v))


def _one_dimensional(v) -> bool:
    """Whether v is a one-dimensional sequence: a list, tuple, range, 1-D array or Series, not a
    string, a scalar, a 2-D array or a sparse matrix (whose len() raises)."""
    if isinstance(v, (str, bytes, bytearray)) or not hasattr(v, "__iter__") or getattr(v, "ndim", 1) != 1:
        return False
    try:
        len(v)
    except TypeError:
        return False
    return True


def _seq(v, name: str) -> list:
    """A sequence of ids or numbers (a list, tuple, NumPy array, pandas Series, range)."""
    if not _one_dimensional(v):
        raise InvalidTypeError("%s must be a sequence (list, array, Series), not %s %r" % (name, _type_name(v), v))
    return v.tolist() if hasattr(v, "tolist") else list(v)


def _is_batch(v) -> bool:
    if type(v) in _SCALARS:
        return False
    return not isinstance(v, (str, bytes, bytearray)) and hasattr(v, "__len__") and hasattr(v, "__iter__")


def _array(v, name: str) -> _np.ndarray:
    """v as a NumPy array; a ragged or unconvertible value is refused."""
    if isinstance(v, (str, bytes)) or v is None:
        raise InvalidTypeError("%s must be a sequence of numbers, not %s %r" % (name, _type_name(v), v))
    try:
        return _np.asarray(v)
    except (ValueError, TypeError, OverflowError) as e:
        raise InvalidTypeError("%s must be a flat sequence of numbers (%s)" % (name, e)) from None


_SCALARS = (int, str, _np.int64, _np.int32, float, bytes)


def _indices(v, name: str, n: int) -> _np.ndarray:
    """A sequence of dense indices in [0, n) as int32."""
    a = _array(v, name)
    if a.ndim != 1:
        raise InvalidValueError("%s must be one-dimensional, not of shape %s" % (name, a.shape))
    if a.size and a.dtype.kind not in "iu":
        raise InvalidTypeError("%s must hold integers, not %s" % (name, a.dtype))
    if a.size and (a.min() < 0 or a.max() >= n):
        raise InvalidValueError("%s: index %d is not in [0, %d)" % (name, a.min() if a.min() < 0 else a.max(), n))
    return _np.ascontiguousarray(a, dtype=_np.int32)


def set_threads(n: int) -> int:
    """OpenMP threads for training and batch calls (1 to 1024; no effect without OpenMP). Returns
    the threads now in use."""
    return _set_threads(_int(n, "threads", 1, 1024))


def version() -> str:
    """The library's version (ncf.h's NCF_VERSION_STRING), as ncf.__version__."""
    return __version__


# ---- handles: calls share one, a retired one is freed when the last call holding it returns ------
class _Handle:
    __slots__ = ("ptr", "_free", "_lock", "_users", "_retired", "cache", "__weakref__")

    def __init__(self, ptr: int, free: Callable):
        self.ptr, self._free, self._lock, self._users, self._retired = ptr, free, _threading.Lock(), 0, False
        self.cache: Dict[str, Any] = {}

    def take(self) -> Optional[int]:
        with self._lock:
            if self._retired:
                return None
            self._users += 1
            return self.ptr

    def give(self) -> None:
        with self._lock:
            self._users -= 1
            if self._retired and not self._users:
                self._release()

    def retire(self) -> None:
        with self._lock:
            if not self._retired:
                self._retired = True
                if not self._users:
                    self._release()

    def _release(self) -> None:
        p, self.ptr = self.ptr, None
        if p:
            self._free(p)

    def __del__(self):
        try:
            self.retire()
        except Exception:  # (interpreter shutdown: the module's globals may be gone)
            pass


class _Held:
    """`with obj._held() as (h, ptr)`: the object's current handle, kept alive for the call."""
    __slots__ = ("owner", "h")

    def __init__(self, owner):
        self.owner = owner

    def __enter__(self):
        while True:
            h = self.owner._handle
            if h is None:
                raise self.owner._missing()
            p = h.take()
            if p is not None:
                self.h = h
                return h, p
            # (retired between the read and the take: its successor is in place; read again)

    def __exit__(self, *exc):
        self.h.give()


def _out_ptr() -> _c.c_void_p:
    return _c.c_void_p()


# ---- ids of one side: names out, indices in ------------------------------------------------------
def _side_ids(h: _Handle, ptr: int, side: int, is_data: bool, n: int) -> _np.ndarray:
    """All ids of a side, cached on the handle: int64 when they are integers, else str objects."""
    key = "ids%d" % side
    if key not in h.cache:
        raw = _np.empty(n, _np.int64)
        got = (_dataset_raw_ids if is_data else _raw_ids)(ptr, side, raw)
        if got:
            ids = raw
        else:
            size = _check(_ids_text(ptr, 1 if is_data else 0, side, None, 0))
            buf = _c.create_string_buffer(max(size, 1))
            _check(_ids_text(ptr, 1 if is_data else 0, side, buf, size))
            ids = _np.empty(n, object)
            ids[:] = [b.decode("utf-8", "surrogateescape") for b in buf.raw[:size].split(b"\0")[:n]]
        h.cache[key] = ids
    return h.cache[key]


def _lookup(h: _Handle, ptr: int, side: int, ids, what: str, n: int) -> _np.ndarray:
    """The dense indices of ids (a sequence), as int32; UnknownIdError names the first unknown."""
    ids = _seq(ids, what + "s")
    out = _np.empty(len(ids), _np.int32)
    if not ids:
        return out
    names = _side_ids(h, ptr, side, False, n)
    if names.dtype == _np.int64:
        keys = _np.empty(len(ids), _np.int64)
        for j, v in enumerate(ids):
            k = _int_or_none(v, what)
            keys[j] = -1 if k is None else k
        at = _np.minimum(_np.searchsorted(names, keys), max(n - 1, 0))
        bad = _np.flatnonzero((keys < 0) | (names[at] != keys)) if n else _np.arange(len(ids))
        if len(bad):
            raise UnknownIdError("unknown %s '%s'" % (what, _shown(ids[bad[0]])))
        out[:] = at
        return out
    index = h.cache.get("index%d" % side)
    if index is None:
        index = h.cache["index%d" % side] = {name: j for j, name in enumerate(names.tolist())}
    for j, v in enumerate(ids):
        at = index.get(_id_text(v, what).decode("utf-8", "surrogateescape"))
        if at is None:
            raise UnknownIdError("unknown %s '%s'" % (what, _shown(v)))
        out[j] = at
    return out


def _int_or_none(v, what: str) -> Optional[int]:
    """An integer id's value (a plain decimal below 2^62, as the library keeps them), else None."""
    s = _id_text(v, what)
    ok = s.isdigit() and (s == b"0" or not s.startswith(b"0")) and len(s) <= 19
    return int(s) if ok and int(s) < 2 ** 62 else None


def _shown(v) -> str:
    if isinstance(v, (bytes, bytearray)):
        v = bytes(v).decode("utf-8", "replace")
    if isinstance(v, (float, _np.floating)) and float(v) == int(v):
        v = int(v)
    return str(v)


def _one_index(h: _Handle, ptr: int, side: int, v, what: str, n: int) -> int:
    at = _find(ptr, side, _id_text(v, what))
    if at < 0:
        raise UnknownIdError("unknown %s '%s'" % (what, _shown(v)))
    return at


def _count(h: _Handle, ptr: int, side: int) -> int:
    """A model's users (side 0) or items, cached on its handle."""
    c = h.cache.get("n")
    if c is None:
        out = _np.zeros(8, _np.int64)
        _model_info(ptr, out)
        c = h.cache["n"] = (int(out[0]), int(out[1]))
    return c[side]


# ---- datasets -----------------------------------------------------------------------------------
_LOAD_OPTIONS = ("holdout", "validation", "min_rating", "sep", "min_ratings", "min_item_ratings", "weighting", "alpha",
                 "seed", "strength_col", "header", "eval_negatives", "events", "event_col")


def _events(events) -> Optional[bytes]:
    """{'view': 1, 'purchase': 5}, ['purchase'] or 'view=1,purchase=5' -> the loader's list."""
    if events is None:
        return None
    if isinstance(events, str):
        return _text(events, "events")
    if isinstance(events, dict):
        parts = []
        for kind, worth in events.items():
            if not isinstance(kind, str) or "," in kind or "=" in kind:
                raise InvalidValueError("events: a kind is a name without ',' or '=', not %r" % (kind,))
            parts.append("%s=%r" % (kind, _float(worth, "events[%r]" % kind, 0, 1e15)))
        return _text(",".join(parts), "events")
    if isinstance(events, (list, tuple)):
        return _events({k: 1.0 for k in events})
    raise InvalidTypeError("events must be a dict of kind to strength, a list of kinds or a string, not %s"
                           % _type_name(events))


def _holdout(holdout) -> Tuple[int, float, int]:
    """'latest', 'random', 'none', 'ratio:0.2', 'time:0.1', 'time:@T', 'items:0.2' -> (code, fraction, cutoff)."""
    if isinstance(holdout, str) and ":" in holdout:
        kind, arg = holdout.split(":", 1)
        if kind == "time" and arg.startswith("@"):
            try:
                return _HOLDOUTS["cutoff"], 0.0, _int(int(arg[1:]), "holdout's time", -2 ** 63, 2 ** 63 - 1)
            except ValueError:
                raise InvalidValueError("holdout %r: time:@T takes an integer timestamp" % holdout) from None
        if kind not in ("ratio", "time", "items"):
            raise InvalidValueError("holdout %r: latest, random, none, ratio:F, time:F, time:@T or items:F" % holdout)
        try:
            f = float(arg)
        except ValueError:
            raise InvalidValueError("holdout %r: the fraction after ':' is a number" % holdout) from None
        if not 0 < f < 1:
            raise InvalidValueError("holdout %r: the fraction must be between 0 and 1" % holdout)
        return _HOLDOUTS[kind], f, 0
    return _choice(_HOLDOUTS, holdout, "holdout"), 0.0, 0


def _load_args(options: dict, caller: str) -> list:
    unknown = sorted(set(options) - set(_LOAD_OPTIONS))
    if unknown:
        raise InvalidTypeError("%s got an unknown option %r (options: %s)" % (caller, unknown[0], ", ".join(_LOAD_OPTIONS)))
    o = dict(holdout="auto", validation=True, min_rating=None, sep=None, min_ratings=0, min_item_ratings=0,
             weighting="none", alpha=1.0, seed=1, strength_col=None, header=None, eval_negatives=0, events=None,
             event_col=None)
    o.update(options)
    code, fraction, cutoff = _holdout(o["holdout"])
    if o["header"] not in (None, True, False):
        raise InvalidTypeError("header must be None (found), True or False, not %r" % (o["header"],))
    return [code, fraction, cutoff, 1 if _flag(o["validation"], "validation") and code != _HOLDOUTS["none"] else 0,
            -1e308 if o["min_rating"] is None else _float(o["min_rating"], "min_rating", -1e15, 1e15),
            _text(o["sep"], "sep") if o["sep"] is not None else None, _int(o["min_ratings"], "min_ratings"),
            _int(o["min_item_ratings"], "min_item_ratings"), _choice(_WEIGHTINGS, o["weighting"], "weighting"),
            _float(o["alpha"], "alpha", 0, 1e9, open_lo=True), _int(o["seed"], "seed", 0, 2 ** 64 - 1),
            _text(o["strength_col"], "strength_col") if o["strength_col"] is not None else None,
            {None: 0, True: 1, False: 2}[o["header"]], _int(o["eval_negatives"], "eval_negatives", 0, 100000),
            _events(o["events"]), _text(o["event_col"], "event_col") if o["event_col"] is not None else None]


def _field(v, what: str, row: int) -> str:
    """One id as a field of the TSV the loader reads (quoted where it must be)."""
    try:
        s = _id_text(v, what).decode("utf-8", "surrogateescape")
    except Error as e:
        raise type(e)("row %d: %s" % (row, e)) from None
    if any(ch in s for ch in "\t\"\r\n") or s[:1] == " " or s[-1:] == " ":
        if "\r" in s or "\n" in s:
            raise InvalidValueError("row %d: %s %r holds a line end" % (row, what, s))
        return '"' + s.replace('"', '""') + '"'
    return s


def _column(v, what: str, kind: type) -> _np.ndarray:
    """A column of strengths (kind float: finite) or timestamps (int: integers, or floats that hold
    them) as float64 or int64, checked as a whole where NumPy holds it, else one by one."""
    a = _np.asarray(v) if isinstance(v, _np.ndarray) or hasattr(v, "to_numpy") else None
    if a is not None and a.ndim == 1 and a.dtype.kind in "iuf":
        if kind is float:
            a = a.astype(_np.float64)
            bad = _np.flatnonzero(~_np.isfinite(a) | (_np.abs(a) > 1e300))
        else:
            f = a.astype(_np.float64)
            bad = _np.flatnonzero(~_np.isfinite(f) | (f != _np.floor(f))) if a.dtype.kind == "f" else []
            a = a.astype(_np.int64)
        if len(bad):
            raise InvalidValueError("row %d: %s %r is not %s" % (bad[0], what, v[bad[0]],
                                                                   "a finite number" if kind is float else "an integer"))
        return _np.ascontiguousarray(a)
    out = []
    for j, x in enumerate(_seq(v, what + "s")):
        try:
            out.append(_float(x, what, -1e300, 1e300) if kind is float else _int(x, what, -2 ** 63, 2 ** 63 - 1))
        except Error as e:
            raise type(e)("row %d: %s" % (j, e)) from None
    return _np.ascontiguousarray(out, dtype=_np.float64 if kind is float else _np.int64)


def _integer_ids(v) -> Optional[_np.ndarray]:
    """v as int64 when every id is a plain integer (0 to 2^62, as the library keeps integer ids), else None."""
    a = v if isinstance(v, _np.ndarray) else None
    if a is None:
        try:
            a = _np.asarray(v)
        except (ValueError, TypeError):
            return None
    if a.ndim != 1 or not a.size:
        return None
    if a.dtype.kind == "f":
        if not _np.all(_np.isfinite(a)) or not _np.all(a == _np.floor(a)):
            return None
        a = a.astype(_np.int64)
    if a.dtype.kind not in "iu" or a.min() < 0 or a.max() >= 2 ** 62:
        return None
    return _np.ascontiguousarray(a, dtype=_np.int64)


class Dataset:
    """Interactions after the split: training positives, held-out test (and validation) items,
    ids as written. Dataset(source, **options) reads a path (from_file), a pandas DataFrame
    (from_dataframe: name the columns with user=, item=, strength=, timestamp=) or a SciPy
    sparse matrix (from_csr). A dataset pickles (a file's by its path, checked unchanged)."""

    _INFO = ["users", "items", "train", "test", "validation", "lines", "users_read", "items_read", "duplicates",
             "below_min_rating", "users_few_ratings", "items_few_item_ratings", "users_every_item", "holdout",
             "users_only_held_out", "items_only_held_out", "weight_min", "weight_max", "many_items",
             "nonpositive_ratings", "events_dropped", "event_kinds", "other_event_lines"]

    def __init__(self, source: Any, **options: Any):
        """Reads source (a path, a DataFrame or a sparse matrix) with from_file's options."""
        self._handle: Optional[_Handle] = None
        self._recipe: Optional[tuple] = None
        self._shape: Optional[Tuple[int, int]] = None
        if isinstance(source, (str, bytes, _os.PathLike)):
            made = Dataset.from_file(source, **options)
        elif _is_sparse(source):
            made = Dataset.from_csr(source, **options)
        elif type(source).__name__ == "DataFrame":
            made = Dataset.from_dataframe(source, **options)
        else:
            raise InvalidTypeError("Dataset takes a path, a pandas DataFrame or a SciPy sparse matrix, not %s"
                                   % _type_name(source))
        self._take(made)

    def _take(self, other: "Dataset") -> None:
        self._handle, self._recipe, self._shape = other._handle, other._recipe, other._shape
        other._handle = None

    @classmethod
    def _made(cls, code: int, args: list, recipe: tuple, shape=None) -> "Dataset":
        out = _out_ptr()
        rc = _load(*args, _c.byref(out))
        if rc != _NCF_OK:
            _fail(rc)
        d = cls.__new__(cls)
        d._handle, d._recipe, d._shape = _Handle(out.value, _dataset_free), recipe, shape
        return d

    def _missing(self) -> Error:
        return InvalidValueError("the dataset is closed")

    def _held(self) -> _Held:
        return _Held(self)

    @classmethod
    def from_file(cls, path: Union[str, bytes, "_os.PathLike[str]"], **options: Any) -> "Dataset":
        """Any delimited log (separator, header and columns found), the NCF paper's split, or a
        split written by save_split. Options: holdout ('auto', 'latest', 'random', 'none',
        'ratio:0.2', 'time:0.1', 'time:@T'), validation (True), min_rating, sep, min_ratings,
        min_item_ratings, weighting ('none', 'linear', 'log'), alpha, seed, strength_col, header
        (None: found), eval_negatives (sampled candidates per test user: 0 is the file's, or 99),
        events (an event log's kinds and their strengths, {'view': 1, 'purchase': 5}: only those
        kinds are positives, a pair's strengths summed; a list of kinds: each worth 1) and
        event_col (default: a column named event, action, behavior, ...). report['events'] says
        what became of each kind."""
        p = _path(path)
        o = _load_args(options, "from_file()")
        try:
            st = _os.stat(p)
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        return cls._made(0, [p, None, 0] + o[:12] + [o[12], 0, o[13], o[14], o[15]], ("file", p, dict(options), stamp))

    @classmethod
    def _from_text(cls, name: bytes, text: bytes, weighted: bool, timed: bool, options: dict, shape=None) -> "Dataset":
        o = _load_args(options, "from_arrays()")
        if o[14] is not None or o[15] is not None:
            raise InvalidValueError("events and event_col read a file's event column (from_file); map the events "
                                    "to strengths for from_arrays or a DataFrame (df.event.map({...}))")
        return cls._made(0, [name, text, len(text)] + o[:12] + [0, 1 if timed else 0, o[13], None, None],
                         ("text", name, text, weighted, timed, dict(options)), shape)

    @classmethod
    def from_arrays(cls, users: Sequence, items: Sequence, strengths: Optional[Sequence] = None,
                    timestamps: Optional[Sequence] = None, name: str = "arrays", **options: Any) -> "Dataset":
        """Parallel sequences (lists, NumPy arrays, pandas Series) of user and item ids (integers or
        strings, kept as written), with optional strengths (weighting 'linear' unless given) and
        timestamps (time splits, 'latest'). Options as from_file's."""
        for v, what in ((users, "users"), (items, "items"), (strengths, "strengths"), (timestamps, "timestamps")):
            if (v is None and what in ("users", "items")) or (v is not None and not _one_dimensional(v)):
                raise InvalidTypeError("%s must be a sequence (list, array, Series), not %s" % (what, _type_name(v)))
        given = [v for v in (users, items, strengths, timestamps) if v is not None]
        if any(len(v) != len(users) for v in given):
            raise InvalidValueError("from_arrays: users, items, strengths and timestamps need one entry each (%s)"
                                    % ", ".join(str(len(v)) for v in given))
        if strengths is not None:
            options.setdefault("weighting", "linear")
        s = None if strengths is None else _column(strengths, "strength", float)
        t = None if timestamps is None else _column(timestamps, "timestamp", int)
        u, i = _integer_ids(users), _integer_ids(items)
        if u is not None and i is not None:
            text = _numbers_text(u, i, s, t)
        else:
            lines = [[_field(x, "user", j) for j, x in enumerate(_seq(users, "users"))],
                     [_field(x, "item", j) for j, x in enumerate(_seq(items, "items"))]]
            if s is not None:
                lines.append([repr(float(x)) for x in s])
            if t is not None:
                lines.append([str(int(x)) for x in t])
            text = "".join("\t".join(row) + "\n" for row in zip(*lines)).encode("utf-8", "surrogateescape")
        return cls._from_text(_text(name, "name"), text, s is not None, t is not None, options)

    @classmethod
    def from_dataframe(cls, df: Any, user: str = "user", item: str = "item", strength: Optional[str] = None,
                       timestamp: Optional[str] = None, **options: Any) -> "Dataset":
        """A pandas DataFrame's columns (names given), as from_arrays."""
        if type(df).__name__ != "DataFrame" or not hasattr(df, "columns"):
            raise InvalidTypeError("from_dataframe takes a pandas DataFrame, not %s" % _type_name(df))
        for col in (user, item, strength, timestamp):
            if col is not None and col not in df.columns:
                raise UnknownIdError("the DataFrame has no column %r (it has %s)" % (col, ", ".join(map(str, df.columns))))
        return cls.from_arrays(df[user].to_numpy(), df[item].to_numpy(),
                               None if strength is None else df[strength].to_numpy(),
                               None if timestamp is None else df[timestamp].to_numpy(), name="dataframe", **options)

    @classmethod
    def from_csr(cls, matrix: Any, **options: Any) -> "Dataset":
        """A SciPy sparse matrix of users (rows) by items (columns), as implicit takes it: each
        stored non-zero a positive, its value the strength (used when weighting is 'linear' or
        'log'). Users and items are the matrix's row and column numbers, so every answer comes back
        in them; rows and columns without a positive are not in the data. Default holdout: 'none'
        (a model to ship; pass 'random' or 'ratio:0.2' to hold some out)."""
        if not _is_sparse(matrix):
            raise InvalidTypeError("from_csr takes a SciPy sparse matrix, not %s" % _type_name(matrix))
        m = matrix.tocoo()
        keep = m.data != 0
        if m.data.dtype.kind not in "iufb":
            raise InvalidTypeError("from_csr: the matrix holds %s, not numbers" % m.data.dtype)
        vals = m.data[keep].astype(_np.float64)
        if not _np.all(_np.isfinite(vals)):
            raise InvalidValueError("from_csr: the matrix holds a non-finite value")
        options.setdefault("holdout", "none")
        weighted = options.get("weighting", "none") != "none"
        text = _numbers_text(m.row[keep].astype(_np.int64), m.col[keep].astype(_np.int64),
                             _np.ascontiguousarray(vals) if weighted else None, None)
        return cls._from_text(b"matrix", text, weighted, False, options, shape=tuple(int(x) for x in matrix.shape))

    # (pickling: the recipe the dataset was made from, made again)
    def __reduce__(self):
        if self._recipe is None or self._handle is None:
            raise InvalidValueError("the dataset is closed")
        return (_dataset_from_recipe, (self._recipe, self._shape))

    def close(self) -> None:
        """Frees the dataset now (calls in flight finish first); later use raises InvalidValueError."""
        if self._handle is not None:
            self._handle.retire()
            self._handle = None

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self._handle.retire()
            self._handle = None

    def __repr__(self) -> str:
        if self._handle is None:
            return "<ncf.Dataset closed>"
        r = self.report
        return "<ncf.Dataset %d users, %d items, %d training positives, %d test, %d validation (holdout %s)>" % (
            r["users"], r["items"], r["train"], r["test"], r["validation"], r["holdout"])

    @property
    def report(self) -> Dict[str, Any]:
        """What the load read, kept and held out, as a dict."""
        out = _np.zeros(len(self._INFO), _np.float64)
        with self._held() as (h, p):
            _dataset_info(p, out)
        r = {k: int(v) for k, v in zip(self._INFO, out)}
        r["weight_min"], r["weight_max"] = float(out[16]), float(out[17])
        r["holdout"] = _HOLDOUT_NAMES.get(r["holdout"], "?")
        r["many_items"] = bool(r["many_items"])
        r["events"] = []
        with self._held() as (h, p):
            for k in range(r.pop("event_kinds")):
                name, e = _c.create_string_buffer(64), _np.zeros(3, _np.float64)
                if _dataset_event(p, k, name, 64, e) == 0:
                    r["events"].append({"kind": name.value.decode("utf-8", "surrogateescape"), "lines": int(e[0]),
                                        "kept": bool(e[1]), "strength": float(e[2])})
        return r

    @property
    def num_users(self) -> int:
        """Users in the data (after the load's filters)."""
        return self.report["users"]

    @property
    def num_items(self) -> int:
        """Items in the data (after the load's filters)."""
        return self.report["items"]

    @property
    def user_ids(self) -> _np.ndarray:
        """Each user's id by index: int64 when the ids are integers, else str objects."""
        with self._held() as (h, p):
            return _side_ids(h, p, _USER, True, self.num_users).copy()

    @property
    def item_ids(self) -> _np.ndarray:
        """Each item's id by index, as user_ids."""
        with self._held() as (h, p):
            return _side_ids(h, p, _ITEM, True, self.num_items).copy()

    def save_split(self, prefix: Union[str, bytes, "_os.PathLike[str]"]) -> "Dataset":
        """Writes the split as PREFIX.train.tsv, PREFIX.test.tsv (and PREFIX.validation.tsv), ids as
        written, so any tool (or Dataset(PREFIX)) reads the same users, items and positives back.
        Returns self."""
        p = _path(prefix, "prefix")
        with self._held() as (_h, d):
            _check(_save_split(d, p), "save_split")
        return self

    def to_csr(self, target: str = "train") -> Any:
        """The positives of target ('train', 'test', 'validation') as a SciPy CSR matrix of ones:
        rows and columns are the ids where both sides' ids are integers (the shape of the matrix a
        dataset was made from, or the largest id + 1), else the dataset's indices (user_ids and
        item_ids name them)."""
        import scipy.sparse as sp
        code = _choice({"test": 0, "validation": 1, "train": 2}, target, "target")
        with self._held() as (h, p):
            n = _dataset_csr(p, code, None, None)
            nu, ni = self.num_users, self.num_items
            ptr = _np.zeros(nu + 1, _np.int64)
            items = _np.zeros(max(n, 1), _np.int32)
            _dataset_csr(p, code, ptr.ctypes.data, items.ctypes.data)
            users_ids, item_ids = _side_ids(h, p, _USER, True, nu), _side_ids(h, p, _ITEM, True, ni)
        rows = _np.repeat(_np.arange(nu), _np.diff(ptr))
        cols = items[:n]
        shape = (nu, ni)
        if users_ids.dtype == _np.int64 and item_ids.dtype == _np.int64:
            rows, cols = users_ids[rows], item_ids[cols]
            shape = self._shape or (int(users_ids.max(initial=-1)) + 1, int(item_ids.max(initial=-1)) + 1)
        return sp.csr_matrix((_np.ones(n, _np.float32), (rows, cols)), shape=shape)


def _dataset_from_recipe(recipe: tuple, shape) -> Dataset:
    if recipe[0] == "file":
        _, path, options, stamp = recipe
        try:
            st = _os.stat(path)
            now = (st.st_size, st.st_mtime_ns)
        except OSError:
            now = None
        if stamp is not None and now != stamp:
            raise DataError("%s changed (or went) since the dataset was pickled: load it again"
                            % path.decode("utf-8", "replace"))
        return Dataset.from_file(path, **options)
    _, name, text, weighted, timed, options = recipe
    return Dataset._from_text(name, text, weighted, timed, options, shape)


def _is_sparse(v) -> bool:
    return hasattr(v, "tocoo") and hasattr(v, "shape") and hasattr(v, "nnz")


def _numbers_text(u: _np.ndarray, i: _np.ndarray, s: Optional[_np.ndarray], t: Optional[_np.ndarray]) -> bytes:
    n = len(u)
    length = _np.zeros(1, _np.int64)
    ptr = _arrays_text(_np.ascontiguousarray(u, _np.int64), _np.ascontiguousarray(i, _np.int64),
                       None if s is None else s.ctypes.data, None if t is None else t.ctypes.data, n, length)
    if not ptr:
        raise OutOfMemoryError("out of memory for the text of %d interactions" % n)
    try:
        return _c.string_at(ptr, int(length[0]))
    finally:
        _shim_free(ptr)


# ---- models -------------------------------------------------------------------------------------
_EPOCH_FIGURES = ("hr", "ndcg", "mrr", "recall", "precision", "map")


class Features:
    """Side features of users or items (genres, tags, authors, attributes), as LightFM takes them:
    from a file beside the log (Features('movies.csv'), Features('u.item', columns='1,6-24')),
    read as the C library reads it (one row an entity with a column of tokens split at token_sep,
    long form id, feature[, weight], 0/1 flags or categories; ids and tokens as written), or from
    a SciPy sparse matrix a row an entity (Features.from_csr(matrix, ids, names)). Entities not
    in the training data are kept: Model.add_from_features adds them to a trained model. A
    Features pickles as what made it."""

    def __init__(self, source: Any, columns: Optional[str] = None, sep: Optional[str] = None,
                 token_sep: str = "|"):
        """Reads the features file at source (a path); columns, sep and token_sep as
        ncf_features_opts' (docs/features.md). A bad row raises DataError naming file:line."""
        path = _path(source, "source")
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError as e:
            raise FileError("%s: %s" % (path.decode(errors="replace"), e.strerror)) from None
        self._recipe = ("text", path, text, columns, sep, token_sep)
        self._handle = self._made(self._recipe)

    @staticmethod
    def _made(recipe: tuple) -> "_Handle":
        out = _out_ptr()
        if recipe[0] == "text":
            _, path, text, columns, sep, token_sep = recipe
            rc = _features_load(path, text, len(text), None if columns is None else _text(columns, "columns"),
                                None if sep is None else _text(sep, "sep"), _text(token_sep, "token_sep"),
                                _c.byref(out))
        else:
            _, ids, names, ptr, idx, w = recipe
            rc = _features_csr(len(ids), b"\0".join(ids) + b"\0", len(names), b"\0".join(names) + b"\0", ptr, idx,
                               None if w is None else w.ctypes.data, _c.byref(out))
        if rc != _NCF_OK:
            _fail(rc, "Features")
        return _Handle(out.value, _features_free)

    @classmethod
    def from_csr(cls, matrix: Any, ids: Sequence, names: Sequence) -> "Features":
        """Features from a SciPy sparse matrix, row k entity ids[k]'s features, column j the
        feature names[j], the values its weights (LightFM's item_features, without the identity)."""
        if not _is_sparse(matrix):
            raise InvalidTypeError("from_csr takes a SciPy sparse matrix, not %s" % _type_name(matrix))
        import scipy.sparse as _sp
        m = _sp.csr_matrix(matrix)
        keys = [_id_text(v, "id") for v in _seq(ids, "ids")]
        cols = [_id_text(v, "name") for v in _seq(names, "names")]
        if m.shape != (len(keys), len(cols)):
            raise InvalidValueError("from_csr: a matrix of %d x %d for %d ids and %d names"
                                    % (m.shape[0], m.shape[1], len(keys), len(cols)))
        w = _np.ascontiguousarray(m.data, dtype=_np.float32)
        self = cls.__new__(cls)
        self._recipe = ("csr", keys, cols, _np.ascontiguousarray(m.indptr, dtype=_np.int64),
                        _np.ascontiguousarray(m.indices, dtype=_np.int32), w)
        self._handle = self._made(self._recipe)
        return self

    def __reduce__(self):
        return (_features_from_recipe, (self._recipe,))

    def _info(self) -> _np.ndarray:
        out = _np.zeros(3, _np.int64)
        h = self._handle.take()
        if h is None:
            raise InvalidValueError("the features are closed")
        try:
            _features_info(h, out)
        finally:
            self._handle.give()
        return out

    @property
    def num_entities(self) -> int:
        """The users or items the features name."""
        return int(self._info()[0])

    @property
    def num_features(self) -> int:
        """The distinct features (the vocabulary)."""
        return int(self._info()[1])

    def __repr__(self) -> str:
        return "Features(%d entities, %d features)" % (self.num_entities, self.num_features)


def _features_from_recipe(recipe: tuple) -> Features:
    f = Features.__new__(Features)
    f._recipe = recipe
    f._handle = Features._made(recipe)
    return f


class Model:
    """A NeuMF ('neumf'), GMF, MLP or MF ('mf': biases + dot product) model. Settings not given
    are the paper's (factors 8, layers 64,32,16,8, Adam lr 0.001, batch 256, 4 negatives).
    optimizer 'sgd' with batch_size=1 and model 'mf' is Rendle et al.'s recipe (fit(decay=True)).
    optimizer 'als' (model 'mf') fits every cell of the matrix by alternating least squares, as
    implicit's ALS: a cell without a positive weighs `unobserved` (0.1), a positive its
    confidence; a few epochs, no learning rate or negatives.

    A model pickles and deep-copies through its model file's bytes; serving calls share it
    among threads while fit, partial_fit, tune and add_* build a new one and swap it in."""

    def __init__(self, model: str = "neumf", factors: int = 8, layers: Optional[Sequence[int]] = None,
                 learning_rate: Optional[float] = None, regularization: float = 0.0, negatives: int = 4,
                 batch_size: Optional[int] = None, init_sd: Optional[float] = None, seed: int = 1,
                 optimizer: str = "adam", unobserved: Optional[float] = None):
        """The settings of the model fit will train (None: the paper's, or the optimizer's own);
        each is checked here, and a wrong one raises InvalidValueError or InvalidTypeError naming it."""
        self._type = _choice(_MODELS, model, "model")
        if _choice(_OPTIMIZERS, optimizer, "optimizer") == _OPTIMIZERS["als"] and self._type != _MODELS["mf"]:
            raise InvalidValueError("optimizer 'als' trains model 'mf' only, not %r" % model)
        lay = [] if layers is None else [_int(w, "layers' width", 1, 1 << 16) for w in _seq(layers, "layers")]
        self._settings = (_int(factors, "factors", 1, 1 << 16), lay,
                          0.0 if learning_rate is None else _float(learning_rate, "learning_rate", 0, 1000, True),
                          _float(regularization, "regularization", 0, 1e6), _int(negatives, "negatives", 0, 1000),
                          0 if batch_size is None else _int(batch_size, "batch_size", 1, 1 << 24),
                          0.0 if init_sd is None else _float(init_sd, "init_sd", 0, 1e3, True),
                          _int(seed, "seed", 0, 2 ** 64 - 1), _choice(_OPTIMIZERS, optimizer, "optimizer"),
                          0.0 if unobserved is None else _float(unobserved, "unobserved", 0, 1e6, True))
        self._handle: Optional[_Handle] = None
        self._lock = _threading.Lock()
        self.chosen_epoch: Optional[int] = None
        self.epochs_trained: Optional[int] = None
        self.chosen_value: Optional[float] = None
        self.averaged: Optional[dict] = None
        self.final_epochs: Optional[int] = None
        self.best: Optional[dict] = None
        self.trials: Optional[List[dict]] = None
        self.seeds: Optional[int] = None

    # -- handles
    def _missing(self) -> Error:
        return InvalidValueError("the model is not trained or loaded yet (fit, tune or Model.load)")

    def _held(self) -> _Held:
        return _Held(self)

    def _swap(self, ptr: int) -> None:
        with self._lock:
            old, self._handle = self._handle, _Handle(ptr, _model_free)
        if old is not None:
            old.retire()

    def close(self) -> None:
        """Frees the model now (calls in flight finish first)."""
        with self._lock:
            old, self._handle = self._handle, None
        if old is not None:
            old.retire()

    def _adopt_settings(self, ptr: int) -> None:
        x = _np.zeros(_config_numbers(), _np.float64)
        seed = _np.zeros(1, _np.uint64)
        _model_config(ptr, x, seed)
        n = int(x[2])
        lr, reg, neg, batch, sd, opt, unobs = x[-7:]
        self._type = int(x[0])
        self._settings = (int(x[1]), [int(w) for w in x[3:3 + n]], float(lr), float(reg), int(neg), int(batch),
                          float(sd), int(seed[0]), int(opt), float(unobs))

    # -- pickling: the model file's bytes
    def to_bytes(self) -> bytes:
        """The model file's bytes (as save writes them, Adam moments kept when the model has them)."""
        buf, n = _out_ptr(), _np.zeros(1, _np.int64)
        with self._held() as (h, p):
            _check(_save_mem(p, _c.byref(buf), n))
        try:
            return _c.string_at(buf.value, int(n[0]))
        finally:
            _free(buf)

    @classmethod
    def from_bytes(cls, data: Union[bytes, bytearray, memoryview]) -> "Model":
        """A model from a model file's bytes (every size, the version and the CRC checked)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidTypeError("from_bytes takes bytes, not %s" % _type_name(data))
        data = bytes(data)
        out = _out_ptr()
        _check(_load_mem(data, len(data), _c.byref(out)))
        m = cls()
        m._adopt_settings(out.value)
        m._swap(out.value)
        return m

    _ATTRS = ("chosen_epoch", "epochs_trained", "chosen_value", "averaged", "final_epochs", "best", "trials", "seeds")

    def __getstate__(self) -> dict:
        state = {k: getattr(self, k) for k in self._ATTRS}
        state["type"], state["settings"] = self._type, self._settings
        state["model"] = self.to_bytes() if self._handle is not None else None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__init__()
        for k in self._ATTRS:
            setattr(self, k, state.get(k))
        self._type, self._settings = state["type"], state["settings"]
        if state.get("model") is not None:
            data = state["model"]
            out = _out_ptr()
            _check(_load_mem(data, len(data), _c.byref(out)))
            self._swap(out.value)

    def __repr__(self) -> str:
        if self._handle is None:
            return "<ncf.Model %s, not trained>" % _MODEL_NAMES[self._type]
        i = self.info
        return "<ncf.Model %s, %d factors, %d users, %d items, epoch %d>" % (i["model"], i["factors"], i["users"],
                                                                           i["items"], i["epoch"])

    # -- training
    def _create(self, data: "Dataset", dh: int) -> int:
        f, layers, lr, reg, neg, batch, sd, seed, opt, unobserved = self._settings
        lay = _np.ascontiguousarray(layers or [0], dtype=_np.int32)
        out = _out_ptr()
        rc = _model_create(dh, self._type, f, lay, len(layers), lr, reg, neg, batch, sd, seed, opt, unobserved,
                           _c.byref(out))
        if rc != _NCF_OK:
            _fail(rc, "Model")
        return out.value

    def fit(self, data: Any, epochs: int = 20, patience: int = 0, select: str = "hr@10",
            callback: Optional[Callable[[int, int, int, float], Any]] = None, progress: Optional[bool] = None,
            decay: bool = False, shuffle: str = "examples",
            on_epoch: Optional[Callable[[dict], Any]] = None, item_features: Optional["Features"] = None,
            user_features: Optional["Features"] = None, features_only: Optional[str] = None,
            feature_scale: float = 1.0) -> "Model":
        """Trains a new model of this model's settings (a loaded model's own) on data (a Dataset or
        a SciPy sparse matrix, as from_csr), swapped in when it is done. With validation items (the
        default), each epoch is evaluated on them and the model is left at the chosen epoch
        (select: 'ndcg@20', 'map@10', ...; full ranking for a split of many items a user).
        callback(epoch, done, total, loss) is called every few batches; on_epoch(dict) after each
        epoch with its loss and validation figures (an exception either raises is raised when
        training returns). progress=True shows a bar (tqdm's when installed). decay=True: the
        learning rate falls linearly over the epochs. shuffle: 'examples' (each shuffled on its
        own, as TF's NCF) or 'positives' (each positive followed by its negatives). item_features,
        user_features (Features): each entity's vector is its id's embedding plus its features' mean,
        or the features' alone for features_only 'items', 'users' or 'both' (docs/features.md);
        feature_scale (1/64 to 64) multiplies the features' part; then add_from_features adds the entities the data lacks. Returns self."""
        data = _as_dataset(data, "fit")
        feats = _features_args(item_features, user_features)
        only = _features_only(features_only)
        scale = _float(feature_scale, "feature_scale", 1.0 / 64, 64.0)
        epochs = _int(epochs, "epochs", 1, 1 << 20)
        patience = _int(patience, "patience", 0, 1 << 20)
        metric, k = _select(select)
        by_positive = _choice({"examples": 0, "positives": 1}, shuffle, "shuffle")
        with data._held() as (_dh, dp):
            many = data.report["many_items"]
            new = self._create(data, dp)
            try:
                for side, f in feats:
                    fh = f._handle.take()
                    try:
                        _check(_set_features(new, side, fh, dp, (only >> side) & 1, scale), "fit")
                    finally:
                        f._handle.give()
                chosen, value = self._train(new, dp, epochs, patience, metric, k, many, decay, by_positive, callback,
                                            progress, on_epoch, "fit")
            except BaseException:
                _model_free(new)
                raise
        self._swap(new)
        self.chosen_epoch, self.epochs_trained, self.chosen_value = chosen[0], chosen[1], value
        return self

    def partial_fit(self, data: Any, epochs: int = 1, progress: Optional[bool] = None,
                    on_epoch: Optional[Callable[[dict], Any]] = None) -> "Model":
        """Goes on training this model (a loaded one too) on data for epochs more: users and items
        new to the model join it (their rows start fresh), known ones keep theirs, as yesterday's
        model trained on today's log. Data lacking an id the model knows is refused (its rows
        would be lost). Trains a copy, swapped in when done. Returns self."""
        data = _as_dataset(data, "partial_fit")
        epochs = _int(epochs, "epochs", 1, 1 << 20)
        with self._held() as (h, p), data._held() as (_dh, dp):
            out = _out_ptr()
            rc = _grown(p, dp, _c.byref(out))
            if rc != _NCF_OK:
                _fail(rc, "partial_fit")
            new = out.value
            try:
                chosen, value = self._train(new, dp, epochs, 0, 0, 10, data.report["many_items"], False, 0, None,
                                            progress, on_epoch, "partial_fit")
            except BaseException:
                _model_free(new)
                raise
        self._swap(new)
        self.chosen_epoch, self.epochs_trained, self.chosen_value = chosen[0], chosen[1], value
        return self

    def _train(self, ptr, dp, epochs, patience, metric, k, many, decay, by_positive, callback, progress, on_epoch,
               what):
        for fn, name in ((callback, "callback"), (on_epoch, "on_epoch")):
            if fn is not None and not callable(fn):
                raise InvalidTypeError("%s must be callable, not %s" % (name, _type_name(fn)))
        bar = _Progress(what, epochs, _METRIC_NAMES[metric], k) if _flag(False if progress is None else progress, "progress") else None
        state: Dict[str, Any] = {"error": None, "t0": _time.time()}

        def heard(_u, epoch, done, total, loss):
            try:
                if bar:
                    bar.step(int(epoch), int(done), int(total), float(loss))
                return 1 if callback and callback(int(epoch), int(done), int(total), float(loss)) else 0
            except BaseException as e:  # (raised after the call returns)
                state["error"] = state["error"] or e
                return 1

        def ended(_u, epoch, loss, figures):
            try:
                row = {"epoch": int(epoch), "loss": float(loss), "seconds": _time.time() - state["t0"]}
                if figures:
                    row.update({name: float(figures[j]) for j, name in enumerate(_EPOCH_FIGURES)})
                    row["value"] = row[_METRIC_NAMES[metric]]
                if bar:
                    bar.epoch_done(row)
                if on_epoch:
                    on_epoch(row)
            except BaseException as e:
                state["error"] = state["error"] or e

        cb = _PROGRESS(heard) if (callback or bar) else _PROGRESS()
        ep = _EPOCH(ended) if (on_epoch or bar) else _EPOCH()
        chosen = _np.zeros(2, _np.int32)
        value = _np.zeros(1, _np.float64)
        rc = _fit(ptr, dp, epochs, patience, metric, k, 1 if many else 0, _flag(decay, "decay"), by_positive, cb, ep,
                  chosen, value)
        if bar:
            bar.close()
        if state["error"]:
            raise state["error"]
        _check(rc, what)
        return (int(chosen[0]), int(chosen[1])), float(value[0])

    def tune(self, data: "Dataset", seconds: Optional[float] = None, max_epochs: int = 18, patience: int = 3,
             select: str = "hr@10", progress: Optional[bool] = None, callback: Optional[Callable[[dict], Any]] = None,
             seeds: int = 4, item_features: Optional["Features"] = None, user_features: Optional["Features"] = None,
             features_only: Optional[str] = None) -> "Model":
        """Searches settings on data's validation items (never its test), as ./demo --tune: model
        type, factors, learning rate, L2, negatives, batch and weighting, by brackets of
        successive halving within a planned budget of seconds (default: from the data's size,
        at least 30); the same table for a seed on any number of threads, and a larger budget
        never choosing worse on validation than a smaller one. Then trains the winner on training +
        validation for its chosen epochs, as this model: an MF or GMF winner trained from up to
        `seeds` seeds, their scores averaged (self.seeds says how many), for the epochs at which
        their average trained on training alone did best on validation (self.averaged, a dict as a
        run's; None with one seed). self.final_epochs is the epochs trained. self.trials holds a
        dict a run, self.best the winner's. callback(row) hears each run as it ends; progress=True
        prints a line a run. A budget too small for one run warns and fits the defaults.
        item_features, user_features (Features): each run uses a side's without them, beside the id
        or alone (a run's dict: 'item_features' 'none', 'with_id' or 'alone'; 'feature_scale'), the
        first run as features_only says, as fit takes them; on a cold-start split (holdout
        'items:F') every run's items take them. Returns self."""
        data = _as_dataset(data, "tune")
        feats = _features_args(item_features, user_features)
        only = _features_only(features_only)
        if not data.report["validation"]:
            raise InvalidValueError("tune needs validation items: load the data with validation=True (and a holdout "
                                    "other than 'none')")
        budget = 0.0 if seconds is None else _float(seconds, "seconds", 0, 1e7, open_lo=True)
        seeds = _int(seeds, "seeds", 1, 64)
        max_epochs = _int(max_epochs, "max_epochs", 1, 100000)
        patience = _int(patience, "patience", 0, 100000)
        metric, k = _select(select)
        if callback is not None and not callable(callback):
            raise InvalidTypeError("callback must be callable, not %s" % _type_name(callback))
        seed = self._settings[7]
        state: Dict[str, Any] = {"error": None, "t0": _time.time()}
        progress = _flag(False if progress is None else progress, "progress")
        line = _TuneLine() if progress else None

        def heard(_user, row, trial, rung, epochs, planned):
            try:
                if row and callback:
                    numbers = _c.cast(row, _c.POINTER(_c.c_double))
                    callback(_trial_dict(_np.ctypeslib.as_array(numbers, (_TUNE_COLUMNS,))))
                if line and trial >= -1:
                    line.show(trial, rung, epochs, planned, _time.time() - state["t0"])
            except BaseException as e:  # (raised after the search returns)
                state["error"] = state["error"] or e

        cb = _TUNE_PROGRESS(heard) if (progress or callback) else _TUNE_PROGRESS()
        with data._held() as (_dh, dp):
            many = data.report["many_items"]
            out = _out_ptr()
            handles = {side: f._handle.take() for side, f in feats}
            try:
                rc = _tune(dp, budget, seed, max_epochs, patience, metric, k, 1 if many else 0, seeds,
                           handles.get(_USER), handles.get(_ITEM), only, cb, _c.byref(out))
                if rc != _NCF_OK:
                    _fail(rc, "tune")
                r = out.value
                try:
                    if state["error"]:
                        raise state["error"]
                    info = _np.zeros(6, _np.int32)
                    _tune_info(r, info)
                    trials = []
                    for i in range(int(info[0])):
                        x = _np.zeros(_TUNE_COLUMNS, _np.float64)
                        _check(_tune_row(r, i, metric, x))
                        trials.append(_trial_dict(x))
                    if info[3]:
                        import warnings
                        warnings.warn("the budget is too small for one run of the search: fitting the defaults",
                                      stacklevel=2)
                        self.trials, self.best = trials, None
                        self._type, self._settings = Model()._type, Model(seed=seed)._settings
                        return self.fit(data, progress=progress, item_features=item_features,
                                        user_features=user_features, features_only=features_only)
                    best = trials[int(info[1])]
                    x = _np.zeros(_TUNE_COLUMNS, _np.float64)
                    averaged = _trial_dict(x) if _tune_averaged(r, metric, x) == 0 else None
                    fin = _out_ptr()
                    bar = _Progress("final", int(info[5]), "hr", 10) if progress else None
                    prog = _PROGRESS(lambda _u, e, d, t, l: bar.step(int(e), int(d), int(t), float(l)) or 0) if bar \
                        else _PROGRESS()
                    rc = _tune_final(r, dp, prog, _c.byref(fin))
                    if bar:
                        bar.close()
                    if rc != _NCF_OK:
                        _fail(rc, "tune")
                finally:
                    _tune_free(r)
            finally:
                for _side, f in feats:
                    f._handle.give()
        self._swap(fin.value)
        self.trials, self.best, self.averaged = trials, best, averaged
        self.seeds, self.final_epochs = int(info[4]), int(info[5])
        self._type = _MODELS[best["model"]]
        self._settings = (best["factors"], [best["mlp"]] if best["mlp"] else [], best["lr"], best["l2"],
                          best["negatives"], best["batch"], 0.1 if best["decay"] else self._settings[6], seed,
                          _OPTIMIZERS[best["optimizer"]], best["unobserved"])
        self.chosen_epoch = self.epochs_trained = self.final_epochs
        self.chosen_value = (averaged or best)["value"]
        return self

    def evaluate(self, data: "Dataset", k: Union[int, Sequence[int]] = 10, target: str = "test",
                 full_ranking: bool = False) -> Union[dict, List[dict]]:
        """The figures on data's test (or 'validation') items at k (an int or a list): a dict,
        or a list of dicts for a list. Sampled candidates for one item a user unless
        full_ranking; always full ranking for many. coverage and popularity are measured by full
        ranking only (None otherwise)."""
        with self._held() as (h, p):
            return _evaluate_figures(p, data, k, target, full_ranking)

    # -- files
    def save(self, path: Union[str, bytes, "_os.PathLike[str]"], optimizer_state: bool = True) -> "Model":
        """Writes the model file (a new file renamed over path: a failure leaves the old one whole);
        optimizer_state=False leaves out the Adam moments (serving does not need them)."""
        p = _path(path)
        with self._held() as (h, ptr):
            _check(_save(ptr, p, _flag(optimizer_state, "optimizer_state")))
        return self

    @classmethod
    def load(cls, path: Union[str, bytes, "_os.PathLike[str]"]) -> "Model":
        """A model file (any the C library reads); fit then trains a new model of its settings,
        partial_fit goes on from its weights."""
        p = _path(path)
        out = _out_ptr()
        _check(_load_model(p, _c.byref(out)))
        m = cls()
        m._adopt_settings(out.value)
        m._swap(out.value)
        return m

    # -- what the model is
    @property
    def info(self) -> Dict[str, Any]:
        """users, items, model, factors, epoch, parameters, and whether the model holds Adam
        moments (optimizer_state) and the users' rated items (rated_items)."""
        out = _np.zeros(8, _np.int64)
        with self._held() as (h, p):
            _model_info(p, out)
        return {"users": int(out[0]), "items": int(out[1]), "model": _MODEL_NAMES[int(out[2])],
                "factors": int(out[3]), "epoch": int(out[4]), "parameters": int(out[5]),
                "optimizer_state": bool(out[6]), "rated_items": bool(out[7])}

    @property
    def num_users(self) -> int:
        """Users the model serves."""
        return self.info["users"]

    @property
    def num_items(self) -> int:
        """Items the model scores."""
        return self.info["items"]

    @property
    def user_ids(self) -> _np.ndarray:
        """Each user's id by index: int64 when the ids are integers (a matrix's rows), else str."""
        with self._held() as (h, p):
            return _side_ids(h, p, _USER, False, _count(h, p, _USER)).copy()

    @property
    def item_ids(self) -> _np.ndarray:
        """Each item's id by index, as user_ids."""
        with self._held() as (h, p):
            return _side_ids(h, p, _ITEM, False, _count(h, p, _ITEM)).copy()

    def _factors(self, side: int) -> _np.ndarray:
        with self._held() as (h, p):
            width = _factors_width(p)
            if not width:
                raise InvalidValueError("%s scores a user and an item together through its MLP: no factors of either "
                                        "alone give its scores (MF and GMF have them; predict scores any pair)"
                                        % self.info["model"])
            out = _np.empty((_count(h, p, side), width), _np.float32)
            _check(_factors(p, side, out))
        return out

    @property
    def user_factors(self) -> _np.ndarray:
        """MF and GMF: a row a user whose dot product with item_factors' row is the model's logit
        (the output weights folded into the users' side, the biases on a column of ones). A copy:
        training swaps the model's memory."""
        return self._factors(_USER)

    @property
    def item_factors(self) -> _np.ndarray:
        """MF and GMF: a row an item, user_factors' partner."""
        return self._factors(_ITEM)

    # -- serving
    def _names(self, h: _Handle, p: int, side: int, idx: _np.ndarray) -> _np.ndarray:
        names = _side_ids(h, p, side, False, _count(h, p, side))
        return names[idx]

    def _filters(self, h, p, allow, deny):
        n = _count(h, p, _ITEM)
        a = None if allow is None else _lookup(h, p, _ITEM, allow, "item", n)
        d = None if deny is None else _lookup(h, p, _ITEM, deny, "item", n)
        return a, d

    def _list(self, h, p, u, row, k, allow, deny, exclude_rated, probabilities):
        out = _np.empty(2 * k, _np.int32)  # (items, then scores: one array, one pointer to pass)
        at = out.ctypes.data
        a, d = self._filters(h, p, allow, deny)
        n = _recommend(p, u, None if row is None else row.ctypes.data, k, exclude_rated,
                       None if a is None else a.ctypes.data, 0 if a is None else len(a),
                       None if d is None else d.ctypes.data, 0 if d is None else len(d), probabilities, at, at + 4 * k)
        _check(n)
        return self._names(h, p, _ITEM, out[:n]), out[k:k + n].view(_np.float32)

    def recommend(self, user: Any, k: int = 10, allow: Optional[Sequence] = None, deny: Optional[Sequence] = None,
                  exclude_rated: bool = True, probabilities: bool = False) -> Tuple[_np.ndarray, _np.ndarray]:
        """The k best items for a known user, best first: (item ids, scores) as arrays. user may be a
        sequence of users: then (ids, scores) are 2-D, a row a user, on all threads; a row with
        fewer than k candidates is padded with -1 (integer ids) or None and NaN. allow: only these
        items; deny: never these; exclude_rated: skip the user's rated items."""
        k = _int(k, "k", 1, INT_MAX)
        excl, prob = _flag(exclude_rated, "exclude_rated"), _flag(probabilities, "probabilities")
        with self._held() as (h, p):
            if not _is_batch(user):
                u = _one_index(h, p, _USER, user, "user", _count(h, p, _USER))
                return self._list(h, p, u, None, min(k, max(_count(h, p, _ITEM), 1)), allow, deny, excl, prob)
            users = _lookup(h, p, _USER, user, "user", _count(h, p, _USER))
            a, d = self._filters(h, p, allow, deny)
            return self._batch(h, p, users, k, a, d, excl, prob, names=True)

    def _batch(self, h, p, users, k, a, d, excl, prob, names):
        """Many users' lists on all threads; a and d: allow and deny as item indices (or None)."""
        k = min(k, max(_count(h, p, _ITEM), 1))
        items = _np.empty((len(users), k), _np.int32)
        scores = _np.empty((len(users), k), _np.float32)
        counts = _np.empty(len(users), _np.int32)
        if len(users):
            _check(_recommend_users(p, users, len(users), k, excl, None if a is None else a.ctypes.data,
                                    0 if a is None else len(a), None if d is None else d.ctypes.data,
                                    0 if d is None else len(d), prob, items.reshape(-1), scores.reshape(-1), counts))
        short = _np.arange(k)[None, :] >= counts[:, None]
        scores[short] = _np.nan
        if not names:
            return items, scores, counts
        ids = _side_ids(h, p, _ITEM, False, _count(h, p, _ITEM))
        out = ids[_np.where(short, 0, items)] if len(ids) else _np.empty(items.shape, ids.dtype)
        if out.dtype == _np.int64:
            out[short] = -1
        else:
            out[short] = None
        return out, scores

    def recommend_indices(self, user_indices: Sequence[int], k: int = 10, exclude_rated: bool = True,
                          allow: Optional[Sequence[int]] = None, deny: Optional[Sequence[int]] = None
                          ) -> Tuple[_np.ndarray, _np.ndarray, _np.ndarray]:
        """recommend by dense indices, without id lookups: (items [n, k] int32 indices, scores,
        counts); a short row's rest is -1 and NaN. allow and deny are item indices too."""
        k = _int(k, "k", 1, INT_MAX)
        excl = _flag(exclude_rated, "exclude_rated")
        with self._held() as (h, p):
            users = _indices(user_indices, "user_indices", _count(h, p, _USER))
            ni = _count(h, p, _ITEM)
            a = None if allow is None else _indices(allow, "allow", ni)
            d = None if deny is None else _indices(deny, "deny", ni)
            return self._batch(h, p, users, k, a, d, excl, 0, names=False)

    def _similar(self, side, what, who, k, allow, deny):
        k = _int(k, "k", 1, INT_MAX)
        with self._held() as (h, p):
            n = _count(h, p, side)
            k = min(k, max(n - 1, 1))
            if allow is not None or deny is not None:
                if side == _USER:
                    raise InvalidValueError("similar_users takes no allow or deny (they list items)")
            a, d = self._filters(h, p, allow, deny)
            one = not _is_batch(who)
            idx = _lookup(h, p, side, [who] if one else who, what, n)
            ids = _side_ids(h, p, side, False, n)
            rows, scs = [], []
            for j in idx.tolist():
                got = _np.empty(k, _np.int32)
                sc = _np.empty(k, _np.float32)
                m = _check(_similar(p, side, j, k, None if a is None else a.ctypes.data, 0 if a is None else len(a),
                                    None if d is None else d.ctypes.data, 0 if d is None else len(d), got, sc))
                rows.append(ids[got[:m]]), scs.append(sc[:m])
            if one:
                return rows[0], scs[0]
            out = _np.full((len(rows), k), -1 if ids.dtype == _np.int64 else None, dtype=ids.dtype)
            sco = _np.full((len(rows), k), _np.nan, _np.float32)
            for j, (r, s) in enumerate(zip(rows, scs)):
                out[j, :len(r)], sco[j, :len(s)] = r, s
            return out, sco

    def similar_items(self, item: Any, k: int = 10, allow: Optional[Sequence] = None,
                      deny: Optional[Sequence] = None) -> Tuple[_np.ndarray, _np.ndarray]:
        """The k items most like item (cosine of their vectors; never the item itself): (ids,
        scores); a sequence of items gives 2-D arrays (padded as recommend's). MF, GMF and ALS
        models have the vectors where similarity means most (NeuMF's is its GMF half, whose
        neighbours are weaker: docs/serving.md; the demo's --similar compares its scores)."""
        return self._similar(_ITEM, "item", item, k, allow, deny)

    def similar_users(self, user: Any, k: int = 10) -> Tuple[_np.ndarray, _np.ndarray]:
        """The k users most like user, as similar_items."""
        return self._similar(_USER, "user", user, k, None, None)

    def fold_in_vector(self, given: Sequence, side: str = "user", seed: int = 1) -> _np.ndarray:
        """The rows (row_size floats) of a new user from the items it took (side 'user'), or of a
        new item from the users who took it (side 'item'), fitted with every other parameter
        frozen (an ALS model's: the exact least squares, as implicit's recalculate_user). A
        sequence of such lists gives a 2-D array, a row each."""
        s = _choice(_SIDES, side, "side")
        seed = _int(seed, "seed", 0, 2 ** 64 - 1)
        given = _seq(given, "given")
        many = bool(given) and all(_is_batch(g) for g in given)
        with self._held() as (h, p):
            size = _row_size(p)
            other = 1 - s
            lists = given if many else [given]
            out = _np.empty((len(lists), size), _np.float32)
            for j, g in enumerate(lists):
                idx = _lookup(h, p, other, g, "item" if other else "user", _count(h, p, other))
                if not len(idx):
                    raise InvalidValueError("fold-in needs at least one %s" % ("item" if other else "user"))
                _check(_fold_in(p, s, idx, len(idx), seed, out[j]), "fold_in")
        return out if many else out[0]

    def recommend_vector(self, row: Any, k: int = 10, allow: Optional[Sequence] = None,
                         deny: Optional[Sequence] = None, probabilities: bool = False
                         ) -> Tuple[_np.ndarray, _np.ndarray]:
        """The k best items for a user given by its rows (fold_in_vector's): (ids, scores)."""
        k = _int(k, "k", 1, INT_MAX)
        with self._held() as (h, p):
            r = self._row_arg(p, row)
            return self._list(h, p, 0, r, min(k, max(_count(h, p, _ITEM), 1)), allow, deny, 0,
                              _flag(probabilities, "probabilities"))

    def _row_arg(self, p, row) -> _np.ndarray:
        size = _row_size(p)
        r = _array(row, "row")
        if r.dtype.kind not in "fiu" or r.shape != (size,):
            raise InvalidValueError("row must be %d numbers (fold_in_vector's), not %s of shape %s"
                                    % (size, r.dtype, r.shape))
        r = _np.ascontiguousarray(r, dtype=_np.float32)
        if not _np.all(_np.isfinite(r)):
            raise InvalidValueError("row holds a non-finite number")
        return r

    def fold_in(self, items: Sequence, k: int = 10, allow: Optional[Sequence] = None,
                deny: Optional[Sequence] = None) -> Tuple[_np.ndarray, _np.ndarray]:
        """A new user given by the items it took: folded in without retraining, and its k best
        items (never its own): (item ids, scores)."""
        row = self.fold_in_vector(items, "user")
        return self.recommend_vector(row, k, allow, list(_seq(items, "items")) + ([] if deny is None else _seq(deny, "deny")))

    def _add(self, side: int, who: Any, given: Sequence, what: str) -> "Model":
        many = _is_batch(who)
        keys = [_id_text(v, what) for v in (_seq(who, what + "s") if many else [who])]
        lists = _seq(given, "given") if many else [given]
        if not keys or len(lists) != len(keys):
            raise InvalidValueError("add: %d ids and %d lists of what each took (one list an id)"
                                    % (len(keys), len(lists)))
        rows = self.fold_in_vector(lists if many else lists[0], "item" if side else "user")
        rows = _np.ascontiguousarray(rows.reshape(len(keys), -1), dtype=_np.float32)
        with self._held() as (h, p):
            out = _out_ptr()
            _check(_added(p, side, b"\0".join(keys) + b"\0", len(keys), rows, _c.byref(out)), "add")
        self._swap(out.value)
        return self

    def add_from_features(self, features: "Features", side: str = "item") -> int:
        """Adds every entity of features (a side's, 'item' or 'user') the model lacks, each from its
        features alone, so it is recommended, scored, similar-to, saved and loaded like any other:
        a catalogue's new items. Needs a model fit with that side's features. Returns how many."""
        if not isinstance(features, Features):
            raise InvalidTypeError("add_from_features takes Features, not %s" % _type_name(features))
        s = _choice(_SIDES, side, "side")
        added = _np.zeros(1, _np.int32)
        with self._held() as (h, p):
            fh = features._handle.take()
            try:
                out = _out_ptr()
                _check(_added_features(p, s, fh, _c.byref(out), added), "add_from_features")
            finally:
                features._handle.give()
        self._swap(out.value)
        return int(added[0])

    def feature_vector(self, features: Sequence, side: str = "item") -> _np.ndarray:
        """The row of a new user or item given by its features alone (recommend_vector's,
        fold_in_vector's form). Features the model does not know are skipped; none known raises."""
        s = _choice(_SIDES, side, "side")
        toks = [_id_text(v, "feature") for v in _seq(features, "features")]
        with self._held() as (h, p):
            row = _np.zeros(_row_size(p), _np.float32)
            rc = _feature_row(p, s, b"\0".join(toks) + b"\0", len(toks), row)
            if rc < 0:
                _fail(rc, "feature_vector")
        if toks and rc == len(toks):
            raise UnknownIdError("feature_vector: none of the %d features is one the model knows" % len(toks))
        return row

    def add_user(self, user: Any, items: Sequence) -> "Model":
        """Adds a new user (or refreshes a known one) folded in from the items it took, so it is
        recommended for, similar-to, saved and loaded like any other; a sequence of users with a
        list of items each adds them all at once (the model grows once). Returns self."""
        return self._add(_USER, user, items, "user")

    def add_item(self, item: Any, users: Sequence) -> "Model":
        """Adds a new item folded in from the users who took it (or many, as add_user): it is then
        recommended, scored and similar-to like any other. Returns self."""
        return self._add(_ITEM, item, users, "item")

    def predict(self, users: Any, items: Any) -> _np.ndarray:
        """Logits of (user, item) pairs: two sequences of one length, or one id beside a
        sequence (it pairs with each)."""
        with self._held() as (h, p):
            one_u, one_i = not _is_batch(users), not _is_batch(items)
            u = _lookup(h, p, _USER, [users] if one_u else users, "user", _count(h, p, _USER))
            i = _lookup(h, p, _ITEM, [items] if one_i else items, "item", _count(h, p, _ITEM))
            if one_u and not one_i:
                u = _np.repeat(u, len(i))
            elif one_i and not one_u:
                i = _np.repeat(i, len(u))
            if len(u) != len(i):
                raise InvalidValueError("predict: %d users and %d items (give one of each a pair, or one id "
                                        "beside many)" % (len(u), len(i)))
            out = _np.empty(len(u), _np.float32)
            if len(u):
                _check(_predict(p, u, i, len(u), out), "predict")
            return out[0] if one_u and one_i else out

    def predict_vector(self, row: Any, others: Sequence, side: str = "user") -> _np.ndarray:
        """Logits of a folded-in user's rows against items (side 'user'), or a folded-in item's
        against users (side 'item')."""
        s = _choice(_SIDES, side, "side")
        with self._held() as (h, p):
            r = self._row_arg(p, row)
            idx = _lookup(h, p, 1 - s, others, "item" if s == _USER else "user", _count(h, p, 1 - s))
            out = _np.empty(len(idx), _np.float32)
            if len(idx):
                _check(_predict_for(p, s, r, idx, len(idx), out), "predict_vector")
            return out


def _as_dataset(data: Any, what: str) -> Dataset:
    if isinstance(data, Dataset):
        return data
    if _is_sparse(data):
        return Dataset.from_csr(data)
    raise InvalidTypeError("%s takes an ncf.Dataset or a SciPy sparse matrix, not %s" % (what, _type_name(data)))


_METRIC_NAMES = {v: k for k, v in _METRICS.items()}
_FIGURES = ["hr", "ndcg", "mrr", "recall", "precision", "map", "coverage", "popularity", "users", "k"]


def popularity(data: Dataset, k: Union[int, Sequence[int]] = 10, target: str = "test",
               full_ranking: bool = False) -> Union[dict, List[dict]]:
    """The popularity baseline's figures on the same candidates, as Model.evaluate."""
    return _evaluate_figures(None, data, k, target, full_ranking)


def _evaluate_figures(ptr, data, k, target, full_ranking):
    if not isinstance(data, Dataset):
        raise InvalidTypeError("evaluate takes an ncf.Dataset, not %s" % _type_name(data))
    one = not _is_batch(k)
    ks = [_int(x, "k", 1, INT_MAX) for x in ([k] if one else _seq(k, "k"))]
    if not 1 <= len(ks) <= 8:
        raise InvalidValueError("k: 1 to 8 cut-offs, not %d" % len(ks))
    code = _choice({"test": 0, "validation": 1}, target, "target")
    full = _flag(full_ranking, "full_ranking")
    arr = _np.ascontiguousarray(ks, dtype=_np.int32)
    out = _np.zeros(10 * len(ks), _np.float64)
    with data._held() as (_dh, dp):
        _check(_evaluate(ptr, dp, code, full, arr, len(ks), out))
        ranked_fully = full or data.report["many_items"]
    res = []
    for j in range(len(ks)):
        d = dict(zip(_FIGURES, out[10 * j:10 * j + 10].tolist()))
        d["users"], d["k"] = int(d["users"]), int(d["k"])
        if not ranked_fully:
            d["coverage"] = d["popularity"] = None
        res.append(d)
    return res[0] if one else res


# ---- metrics and splits for any model ----------------------------------------------------------
def _rows_of(test: Any, n_rows: int) -> List[_np.ndarray]:
    if _is_sparse(test):
        t = test.tocsr()
        t.eliminate_zeros()
        return [t.indices[t.indptr[u]:t.indptr[u + 1]] for u in range(t.shape[0])]
    rows = [_array(_seq(r, "test's row"), "test's row") for r in _seq(test, "test")]
    for r in rows:
        if r.ndim != 1 or (r.size and r.dtype.kind not in "iu"):
            raise InvalidTypeError("test's rows must be lists of item numbers, not %s of shape %s" % (r.dtype, r.shape))
    if len(rows) != n_rows:
        raise InvalidValueError("test has %d rows and recommended %d" % (len(rows), n_rows))
    return rows


def ranking_metrics(recommended: Any, test: Any, k: int = 10) -> Dict[str, float]:
    """ncf's figures (docs/evaluation.md, RecBole's definitions) of ranked lists from any model:
    recommended is [users, >= k] item numbers, best first (-1 ends a short row); test the
    held-out items, a SciPy sparse matrix of the same rows or a list of item lists. Users with
    no held-out item are not counted. Returns hr, ndcg, recall, precision, map, mrr (MRR within
    the lists given) and users."""
    k = _int(k, "k", 1, INT_MAX)
    rec = _array(recommended, "recommended")
    if rec.ndim != 2 or (rec.size and rec.dtype.kind not in "iu"):
        raise InvalidValueError("recommended must be a 2-D array of item numbers, not %s of shape %s"
                                % (rec.dtype, rec.shape))
    rows = _rows_of(test, rec.shape[0])
    if len(rows) < rec.shape[0]:
        raise InvalidValueError("test has %d rows, recommended %d" % (len(rows), rec.shape[0]))
    sums = dict.fromkeys(("hr", "ndcg", "recall", "precision", "map", "mrr"), 0.0)
    users = 0
    disc = 1.0 / _np.log2(_np.arange(2, max(k, rec.shape[1]) + 2))
    for u in range(rec.shape[0]):
        held = set(int(x) for x in rows[u])
        if not held:
            continue
        users += 1
        ranked = [int(x) for x in rec[u] if x >= 0]
        hits = [j for j, it in enumerate(ranked) if it in held]
        if hits:
            sums["mrr"] += 1.0 / (hits[0] + 1)
        top = [j for j in hits if j < k]
        if not top:
            continue
        ideal = min(len(held), k)
        sums["hr"] += 1
        sums["ndcg"] += sum(disc[j] for j in top) / disc[:ideal].sum()
        sums["recall"] += len(top) / len(held)
        sums["precision"] += len(top) / k
        sums["map"] += sum((q + 1) / (j + 1) for q, j in enumerate(top)) / ideal
    out = {name: (v / users if users else 0.0) for name, v in sums.items()}
    out["users"] = users
    return out


def ranking_metrics_at_k(model: Any, train: Any, test: Any, K: int = 10) -> Dict[str, float]:
    """implicit's ranking_metrics_at_k on ncf's definitions: each user (row) of test with a
    held-out item gets model's K best items among those not in its train row, and
    ranking_metrics scores them. model is an ncf.Model trained on train's rows and columns
    (from_csr), a callable(user_rows, K) returning [users, K] item numbers that skip train's,
    or an implicit model (its recommend(userids, user_items, N=K))."""
    K = _int(K, "K", 1, INT_MAX)
    if not _is_sparse(train) or not _is_sparse(test):
        raise InvalidTypeError("train and test must be SciPy sparse matrices")
    tr, te = train.tocsr(), test.tocsr()
    te.eliminate_zeros()
    users = _np.flatnonzero(_np.diff(te.indptr))
    if isinstance(model, Model):
        rec = _np.full((len(users), K), -1, _np.int64)
        known = set(model.user_ids.tolist())
        for j, u in enumerate(users.tolist()):
            if u not in known:
                continue
            ids, _ = model.recommend(u, k=K, exclude_rated=False, deny=tr.indices[tr.indptr[u]:tr.indptr[u + 1]])
            rec[j, :len(ids)] = ids
    elif callable(model):
        rec = _array(model(users, K), "the model's lists")
    elif hasattr(model, "recommend"):
        rec = _array(model.recommend(users, tr[users], N=K, filter_already_liked_items=True)[0], "the model's lists")
    else:
        raise InvalidTypeError("model must be an ncf.Model, a callable or an implicit model, not %s"
                               % _type_name(model))
    return ranking_metrics(rec, te[users], K)


def train_test_split(matrix: Any, train_percentage: float = 0.8, seed: int = 1) -> Tuple[Any, Any]:
    """A sparse matrix's stored entries split at random into (train, test) of its shape, as
    implicit's train_test_split: each entry goes to train with probability train_percentage."""
    if not _is_sparse(matrix):
        raise InvalidTypeError("train_test_split takes a SciPy sparse matrix, not %s" % _type_name(matrix))
    f = _float(train_percentage, "train_percentage", 0, 1)
    import scipy.sparse as sp
    m = matrix.tocoo()
    keep = _np.random.default_rng(_int(seed, "seed", 0, 2 ** 64 - 1)).random(m.nnz) < f
    make = lambda w: sp.csr_matrix((m.data[w], (m.row[w], m.col[w])), shape=m.shape)  # noqa: E731
    return make(keep), make(~keep)


# ---- progress -----------------------------------------------------------------------------------
class _Progress:
    """Training's progress on stderr: a bar that redraws in place on a terminal or notebook
    (tqdm's when installed), a plain line an epoch in a log file."""

    def __init__(self, what: str, epochs: int, metric: str, k: int):
        self.what, self.epochs, self.metric, self.k, self.t0, self.shown = what, epochs, metric, k, _time.time(), 0.0
        self.epoch, self.done, self.total, self.loss = 0, 0, 0, _math.nan
        self.tty = hasattr(_sys.stderr, "isatty") and _sys.stderr.isatty()
        self.tqdm = None
        if self.tty:
            try:
                from tqdm.auto import tqdm
                self.tqdm = tqdm(total=epochs, desc=what, unit="epoch", leave=True)
            except ImportError:
                pass

    def _left(self) -> str:
        spent = _time.time() - self.t0
        frac = ((self.epoch - 1) + (self.done / self.total if self.total else 0)) / max(self.epochs, 1)
        return "%.0f s left" % (spent / frac - spent) if frac > 0.01 else "-"

    def step(self, epoch: int, done: int, total: int, loss: float) -> None:
        self.epoch, self.done, self.total, self.loss = epoch, done, total, loss
        now = _time.time()
        if not self.tty or now - self.shown < 0.2:
            return
        self.shown = now
        pct = 100.0 * done / total if total else 100.0
        loss_text = "" if loss != loss else " loss %.4f" % loss
        if self.tqdm is not None:
            self.tqdm.set_postfix_str("epoch %d %.0f%%%s" % (epoch, pct, loss_text), refresh=True)
            return
        _sys.stderr.write("\r%s: epoch %d/%d %5.1f%%%s, %s   " % (self.what, epoch, self.epochs, pct, loss_text,
                                                                  self._left()))
        _sys.stderr.flush()

    def epoch_done(self, row: dict) -> None:
        self.epoch, self.done = row["epoch"], self.total
        figure = " validation %s@%d %.4f" % (self.metric, self.k, row[self.metric]) if self.metric in row else ""
        loss = "" if row["loss"] != row["loss"] else " loss %.4f" % row["loss"]
        text = "epoch %d%s%s (%.1f s)" % (row["epoch"], loss, figure, row["seconds"])
        if self.tqdm is not None:
            self.tqdm.update(1)
            self.tqdm.set_postfix_str(text.split(" ", 2)[-1], refresh=True)
        elif self.tty:
            _sys.stderr.write("\r%s: %s%20s\n" % (self.what, text, ""))
        else:
            _sys.stderr.write("%s: %s\n" % (self.what, text))
        _sys.stderr.flush()

    def close(self) -> None:
        if self.tqdm is not None:
            self.tqdm.close()
        elif self.tty and self.shown:
            _sys.stderr.write("\r%60s\r" % "")
            _sys.stderr.flush()


class _TuneLine:
    def __init__(self):
        self.tty = hasattr(_sys.stderr, "isatty") and _sys.stderr.isatty()

    def show(self, trial: int, rung: int, epochs: int, planned: float, seconds: float) -> None:
        if trial >= 0 and rung == 3:
            text = "trial %d, its seeds averaged: %d epochs at most (planned %.1f s; %.0f s so far)" % (
                trial, epochs, planned, seconds)
        elif trial >= 0:
            text = "trial %d, rung %d: %d epochs at most (planned %.1f s; %.0f s so far)" % (
                trial, rung, epochs, planned, seconds)
        else:
            text = "search done in %.0f s" % seconds
        _sys.stderr.write(("\r%-78s" % text + ("\n" if trial < 0 else "")) if self.tty else text + "\n")
        _sys.stderr.flush()


def _features_args(item_features, user_features) -> List[Tuple[int, "Features"]]:
    """fit's and tune's features, (side, Features) for each given."""
    feats = [(side, f) for side, f in ((_USER, user_features), (_ITEM, item_features)) if f is not None]
    for _side, f in feats:
        if not isinstance(f, Features):
            raise InvalidTypeError("item_features and user_features are Features, not %s" % _type_name(f))
    return feats


def _features_only(v) -> int:
    """features_only as the sides' bits: 1 users, 2 items."""
    return 0 if v is None else _choice({"users": 1, "items": 2, "both": 3}, v, "features_only")


_TUNE_COLUMNS = 27  # (ncfpy_tune_row's numbers)
_FEATURE_USE = ("none", "with_id", "alone")


def _trial_dict(x) -> dict:
    return {"trial": int(x[0]), "rung": int(x[1]), "model": _MODEL_NAMES[int(x[2])], "factors": int(x[3]),
            "mlp": int(x[4]), "lr": float(x[5]), "l2": float(x[6]), "negatives": int(x[7]), "batch": int(x[8]),
            "weighted": bool(x[9]), "epochs": int(x[10]), "epochs_trained": int(x[11]), "chosen_epoch": int(x[12]),
            "hr": float(x[13]), "ndcg": float(x[14]), "mrr": float(x[15]), "value": float(x[16]),
            "planned_seconds": float(x[17]), "winner": bool(x[18]), "decay": bool(x[19]), "beside": bool(x[20]),
            "partner": bool(x[21]), "optimizer": _OPTIMIZER_NAMES[int(x[22])], "unobserved": float(x[23]),
            "user_features": _FEATURE_USE[int(x[24])], "item_features": _FEATURE_USE[int(x[25])],
            "feature_scale": float(x[26])}
