"""Frames without pandas: the tables of a single-use command's log (the command line's
``summary`` and ``breakeven``, ``--no-cache``) as numpy columns, so that such a command never
imports pandas and pyarrow (0.25 s and 75 MiB of a process: issue 37).

A ``Frame`` holds the same typed columns a pandas DataFrame of the schema holds, in the same
arrays (the C scanner's buffers), and answers the part of the DataFrame and Series interface
the analyses of an SGLang log use, with pandas' semantics (``to_numpy``'s copies and read-only
views, NA as a mask, categories as codes).  Anything else it is asked for, it answers by
becoming a pandas DataFrame for good (``promote``: pandas imported then, the same frame the
pandas path builds), so a path not yet taught the light interface is slower, never wrong.
The functions below (``is_categorical``, ``cat_codes``, ``masked``, …) answer for either kind,
for the code that reads a column's representation.

Only ``api.parse(..., light=True)`` makes them; a log the API returns holds pandas frames.
"""
from __future__ import annotations

import operator
import sys
import types

from ._lazy import np, pd

_NO = object()                  # no na_value given (pandas' lib.no_default)

LIGHT = False                   # api.parse(light=True) is building the frames (building())


class building:
    """``with building(on):`` the scan's frames are Frames (a module flag, not an argument
    through every scanner: the C scan's threads and a forked worker see it too)."""

    def __init__(self, on: bool = True) -> None:
        self.on = on

    def __enter__(self) -> None:
        global LIGHT
        self.was, LIGHT = LIGHT, self.on

    def __exit__(self, *exc) -> None:
        global LIGHT
        LIGHT = self.was

_MASKED_NAMES = {"int64": "Int64", "int32": "Int32", "int16": "Int16", "int8": "Int8",
                 "bool": "boolean"}


class MaskedDtype:
    """The dtype of a nullable column ('Int64', 'Int32', 'boolean'): compares equal to its
    name, as pandas' dtypes do."""

    __slots__ = ("name", "numpy_dtype")

    def __init__(self, numpy_dtype) -> None:
        self.numpy_dtype = np.dtype(numpy_dtype)
        self.name = _MASKED_NAMES[self.numpy_dtype.name]

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return str(other) == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class CategoryDtype:
    """The dtype of a categorical column: 'category'."""

    __slots__ = ("categories",)
    name = "category"

    def __init__(self, categories: tuple) -> None:
        self.categories = categories

    def __str__(self) -> str:
        return "category"

    __repr__ = __str__

    def __eq__(self, other) -> bool:
        return str(other) == "category"

    def __hash__(self) -> int:
        return hash("category")


class Inferred(tuple):
    """No categories, as pandas infers them from values that are all missing
    (pd.Categorical([None, …]): float64 categories, where from_codes(…, []) has object
    ones); promoted as such."""


class _Promotes:
    """What a Frame or Column is asked beyond its own interface, its pandas object answers
    (``promote``), the pandas methods given pandas objects for light ones (``_promoting``)."""

    __slots__ = ()

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _promoting(getattr(self.promote(), name))

    def __repr__(self) -> str:
        return repr(self.promote())


def _code_dtype(n: int):
    """The integer type pandas keeps a categorical's codes in (coerce_indexer_dtype)."""
    for t in (np.int8, np.int16, np.int32):
        if n < np.iinfo(t).max:
            return t
    return np.int64


class Column(_Promotes):
    """One column of a Frame, or what an operation on one gives: a numpy array (``kind``
    'np': float64, datetime64[us], bool, int…), integers or booleans with an NA mask
    ('masked', pandas' Int64/Int32/boolean), codes into categories ('cat', code −1: NA), or
    values for a pandas extension type named by ``cats`` ('ext': 'string', …; promoted for
    any use)."""

    __slots__ = ("kind", "values", "mask", "cats", "index", "name", "_pd")

    def __init__(self, kind: str, values, mask=None, cats=None, index=None, name=None) -> None:
        self.kind, self.values, self.mask, self.cats = kind, values, mask, cats
        self.index, self.name, self._pd = index, name, None

    # ---- construction
    @classmethod
    def of(cls, arr, index=None, name=None) -> "Column":
        return cls("np", arr, index=index, name=name)

    @classmethod
    def masked(cls, data, mask, index=None, name=None) -> "Column":
        return cls("masked", data, mask, index=index, name=name)

    @classmethod
    def ext(cls, values, dtype: str, index=None, name=None) -> "Column":
        return cls("ext", values, cats=dtype, index=index, name=name)

    @classmethod
    def categorical(cls, codes, categories, index=None, name=None) -> "Column":
        codes = np.asarray(codes)
        want = _code_dtype(len(categories))
        if codes.dtype != want:
            codes = codes.astype(want)
        cats = categories if isinstance(categories, Inferred) else tuple(categories)
        return cls("cat", codes, cats=cats, index=index, name=name)

    def _like(self, kind, values, mask=None, cats=None) -> "Column":
        return Column(kind, values, mask, cats, self.index, self.name)

    def take(self, at, index=_NO) -> "Column":
        """The rows at positions or slice ``at`` (the index taken with them, or ``index``:
        the frame's, taken once for all its columns)."""
        if index is _NO:
            index = _index_take(self.index, len(self.values), at)
        return Column(self.kind, self.values[at], None if self.mask is None else self.mask[at],
                      self.cats, index, self.name)

    # ---- what it is
    def __len__(self) -> int:
        return len(self.values)

    @property
    def dtype(self):
        if self.kind == "np":
            return self.values.dtype
        if self.kind == "masked":
            return MaskedDtype(self.values.dtype)
        if self.kind == "ext":
            return self.promote().dtype
        return CategoryDtype(self.cats)

    @property
    def shape(self) -> tuple[int]:
        return (len(self.values),)

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def empty(self) -> bool:
        return not len(self.values)

    def _na(self):
        """Where the column holds NA, as a new bool array."""
        if self.kind == "masked":
            return self.mask.copy()
        if self.kind == "cat":
            return self.values < 0
        if self.kind == "ext":
            return np.asarray(self.promote().isna())
        v = self.values
        if v.dtype.kind == "f":
            return np.isnan(v)
        if v.dtype.kind in "mM":
            return np.isnat(v)
        if v.dtype == object:
            return pd.isna(v) if "pandas" in sys.modules else \
                np.array([x is None or (isinstance(x, float) and x != x) for x in v], dtype=bool)
        return np.zeros(len(v), dtype=bool)

    @property
    def hasnans(self) -> bool:
        return bool(self._na().any())

    # ---- pandas' Series interface (the part the analyses use)
    def isna(self) -> "Column":
        return self._like("np", self._na())

    isnull = isna

    def notna(self) -> "Column":
        return self._like("np", ~self._na())

    notnull = notna

    def to_numpy(self, dtype=None, copy: bool = False, na_value=_NO):
        """pandas' Series.to_numpy: the same values, copies and read-only views."""
        if self.kind == "masked":
            return _masked_to_numpy(self.values, self.mask, dtype, copy, na_value)
        if self.kind in ("cat", "ext"):
            kw = {} if na_value is _NO else {"na_value": na_value}
            return self.promote().to_numpy(dtype=dtype, copy=copy, **kw)
        values = self.values
        want = None if dtype is None else np.dtype(dtype)
        if not (values.dtype.kind in "fiub" and (want is None or want.kind in "fiub") or
                values.dtype.kind == "M" and (want is None or want == values.dtype) and
                na_value is _NO):
            kw = {} if na_value is _NO else {"na_value": na_value}
            return self.promote().to_numpy(dtype=dtype, copy=copy, **kw)
        fillna = na_value is not _NO and not (
            _is_nan(na_value) and values.dtype.kind == "f")
        if fillna and self.hasnans:
            if values.dtype == object or (values.dtype.kind == "f" and
                                          isinstance(na_value, (float, int))):
                values = values.copy()
            else:
                values = np.asarray(values, dtype=dtype)
            values[self._na()] = na_value
        result = np.asarray(values, dtype=dtype)
        if (copy and not fillna) or not copy:
            if result is values or np.shares_memory(values[:2], result[:2]):
                if not copy:
                    result = result.view()
                    result.flags.writeable = False
                else:
                    result = result.copy()
        return result

    def __array__(self, dtype=None, copy=None):
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype)

    @property
    def array(self):
        """The column's own storage, as pandas' ``.array`` answers the parts the analyses
        read: ``_data`` and ``_mask`` of a nullable column, ``codes`` of a categorical, the
        numpy values otherwise (promoted for anything else)."""
        if self.kind == "masked":
            return _MaskedView(self.values, self.mask)
        if self.kind == "cat":
            return _CatView(self.values, self.cats)
        if self.kind == "ext":
            return self.promote().array
        return self.values

    @property
    def cat(self) -> "_CatView":
        if self.kind != "cat":
            return self.promote().cat
        return _CatView(self.values, self.cats)

    def any(self, *args, **kw) -> bool:
        return self._reduce("any", args, kw)

    def all(self, *args, **kw) -> bool:
        return self._reduce("all", args, kw)

    def _reduce(self, how: str, args, kw):
        if not args and not kw and self.kind == "np" and self.values.dtype == bool:
            return np.bool_(getattr(self.values, how)())
        return getattr(self.promote(), how)(*args, **kw)

    def sum(self, *args, **kw):
        if not args and not kw and self.kind == "np" and self.values.dtype == bool:
            return self.values.sum()
        return self.promote().sum(*args, **kw)

    def fillna(self, value=None, **kw) -> "Column":
        if kw:
            return self.promote().fillna(value, **kw)
        if self.kind == "np" and self.values.dtype == bool:
            return self._like("np", self.values.copy())
        if self.kind == "masked" and _is_scalar(value) and not isinstance(value, str) and \
                (self.values.dtype == bool) == isinstance(value, (bool, np.bool_)):
            data = self.values.copy()
            data[self.mask] = value
            return self._like("masked", data, np.zeros(len(data), dtype=bool))
        if self.kind == "masked" and isinstance(value, Column) and \
                value.kind in ("np", "masked") and self.values.dtype.kind in "iu" and \
                value.values.dtype.kind in "iu" and len(value.values) == len(self.values) and \
                np.can_cast(value.values.dtype, self.values.dtype) and \
                _same_index(self.index, value.index, len(self.values)):
            # (integers with NA from another integer column of the same rows: where this one
            # is NA, that one's value, NA where both are; pandas keeps this column's dtype)
            data = self.values.copy()
            data[self.mask] = value.values[self.mask]
            mask = self.mask & value.mask if value.kind == "masked" else \
                np.zeros(len(data), dtype=bool)
            return self._like("masked", data, mask)
        return self.promote().fillna(promoted(value))

    def tolist(self) -> list:
        """The values as Python objects, NA as None (pandas: NA or NaN; model._plain makes
        both None)."""
        if self.kind == "masked":
            return [None if m else v for v, m in zip(self.values.tolist(), self.mask.tolist())]
        if self.kind == "ext" and self.values.dtype == object:
            return [None if v is None or v != v else v for v in self.values.tolist()]
        if self.kind == "np" and self.values.dtype.kind in "fiub":
            return self.values.tolist()
        return self.promote().tolist()

    @property
    def is_monotonic_increasing(self) -> bool:
        v = self.values
        if self.kind == "np" and v.dtype.kind in "iu":
            return bool(len(v) < 2 or (v[1:] >= v[:-1]).all())
        if self.kind == "masked" and v.dtype.kind in "iu" and not self.mask.any():
            return bool(len(v) < 2 or (v[1:] >= v[:-1]).all())
        return self.promote().is_monotonic_increasing

    def nunique(self, dropna: bool = True) -> int:
        if self.kind == "cat" and dropna:
            return int(np.unique(self.values[self.values >= 0]).size)
        if self.kind == "masked" and dropna:
            return int(np.unique(self.values[~self.mask]).size)
        return self.promote().nunique(dropna=dropna)

    def __iter__(self):
        return iter(self.promote())

    # comparisons and logic: a bool column with a bool column or a scalar; a categorical
    # against a label (NA: False), as pandas answers them
    def _cmp(self, other, op):
        if isinstance(other, Column) or not _is_scalar(other):
            return None
        if self.kind == "cat" and op in (operator.eq, operator.ne):
            k = self.cats.index(other) if other in self.cats else -2
            hit = self.values == k
            return self._like("np", hit if op is operator.eq else ~hit)
        if self.kind == "np" and self.values.dtype.kind in "fiub" and \
                isinstance(other, (int, float)) and not isinstance(other, bool):
            with np.errstate(invalid="ignore"):
                return self._like("np", op(self.values, other))
        if self.kind == "masked" and self.values.dtype.kind in "iu" and \
                isinstance(other, (int, float)) and not isinstance(other, bool):
            # (pandas: a boolean column, NA where the integers are)
            return self._like("masked", op(self.values, other), self.mask.copy())
        return None

    def _logic(self, other, op):
        o = other.values if isinstance(other, Column) and other.kind == "np" else other
        if self.kind == "np" and self.values.dtype == bool and isinstance(o, np.ndarray) and \
                o.dtype == bool and len(o) == len(self.values):
            return self._like("np", op(self.values, o))
        return None

    def __invert__(self):
        if self.kind == "np" and self.values.dtype == bool:
            return self._like("np", ~self.values)
        return ~self.promote()

    def promote(self):
        """The pandas Series of the same values and index (pandas imported)."""
        if self._pd is None:
            self._pd = pd.Series(_pandas_array(self), index=_pandas_index(self.index,
                                                                          len(self.values)),
                                 name=self.name, copy=False)
        return self._pd


def _promoting(attr):
    """A pandas method given Frames or Columns: given their pandas objects instead."""
    if not isinstance(attr, (types.MethodType, types.BuiltinMethodType)):
        return attr                    # (a property's value, an indexer such as .loc)

    def call(*args, **kw):
        return attr(*[promoted(a) for a in args], **{k: promoted(v) for k, v in kw.items()})
    return call


def _binary(op, logic=False, reverse=False):
    def method(self, other):
        got = (self._logic(other, op) if logic else self._cmp(other, op)) if not reverse \
            else None
        if got is not None:
            return got
        o = other.promote() if isinstance(other, Column) else other
        return op(o, self.promote()) if reverse else op(self.promote(), o)
    return method


for _name, _op in (("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt),
                   ("le", operator.le), ("gt", operator.gt), ("ge", operator.ge)):
    setattr(Column, f"__{_name}__", _binary(_op))
for _name, _op in (("and", operator.and_), ("or", operator.or_), ("xor", operator.xor)):
    setattr(Column, f"__{_name}__", _binary(_op, logic=True))
    setattr(Column, f"__r{_name}__", _binary(_op, logic=True))
for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow)):
    setattr(Column, f"__{_name}__", _binary(_op, logic=True))
    setattr(Column, f"__r{_name}__", _binary(_op, logic=True, reverse=True))
Column.__hash__ = None


def _is_nan(v) -> bool:
    return isinstance(v, float) and v != v


def _is_scalar(v) -> bool:
    return isinstance(v, (int, float, str, bool, np.generic))


class _MaskedView:
    """A nullable column's storage: ``_data`` and ``_mask`` (pandas' BaseMaskedArray)."""

    __slots__ = ("_data", "_mask")

    def __init__(self, data, mask) -> None:
        self._data, self._mask = data, mask

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, at):
        return _MaskedView(self._data[at], self._mask[at])

    def take(self, at):
        return _MaskedView(self._data.take(at), self._mask.take(at))


class _CatView:
    """A categorical column's storage and ``.cat``: ``codes`` and ``categories``."""

    __slots__ = ("codes", "categories")

    def __init__(self, codes, cats) -> None:
        self.codes, self.categories = codes, list(cats)


def _masked_to_numpy(data, mask, dtype, copy, na_value):
    """pandas' BaseMaskedArray.to_numpy (with its to_numpy_dtype_inference, pandas 3.1): with
    NA and no dtype, integers as float64 with NaN and booleans as objects; NA as ``na_value``
    (NaN into floats by default; an error into other numpy types without one)."""
    hasna = bool(mask.any())
    if dtype is not None and np.dtype(dtype).kind not in "fiubO":
        kw = {} if na_value is _NO else {"na_value": na_value}
        return _pandas_array(Column("masked", data, mask)).to_numpy(dtype=dtype, copy=copy,
                                                                     **kw)
    if dtype is None:
        if not hasna:
            dtype = data.dtype
        elif data.dtype.kind == "b":
            dtype = np.dtype(object)
        else:
            dtype = np.dtype(np.float64)
    dtype = np.dtype(dtype)
    if na_value is _NO and hasna:
        if dtype.kind == "f":
            na_value = np.nan
        elif dtype.kind == "O":
            na_value = pd.NA
        else:
            raise ValueError(f"cannot convert to '{dtype}'-dtype NumPy array with missing "
                             "values. Specify an appropriate 'na_value' for this dtype.")
    if hasna:
        out = data.astype(dtype)
        out[mask] = na_value
        return out
    return data.astype(dtype, copy=copy)      # (the data itself, as pandas gives it)


def _index_take(index, n: int, at):
    """The labels of rows ``at`` of rows labelled ``index`` (None: 0 … n − 1): a range for a
    slice of a range, else an array."""
    if index is None:
        index = range(n)
    if isinstance(index, range):
        if isinstance(at, slice):
            return index[at]
        at = np.asarray(at)
        return at * index.step + index.start if at.dtype.kind in "iu" else \
            np.arange(index.start, index.stop, index.step)[at]
    return np.asarray(index)[at]


def _pandas_index(index, n: int):
    if index is None:
        return pd.RangeIndex(n)
    if isinstance(index, range):
        return pd.RangeIndex(index.start, index.stop, index.step)
    return pd.Index(index)


def _pandas_array(col: Column):
    if col.kind == "masked":
        if col.values.dtype == bool:
            return pd.arrays.BooleanArray(col.values, col.mask)
        return pd.arrays.IntegerArray(col.values, col.mask)
    if col.kind == "cat" and isinstance(col.cats, Inferred):
        return pd.Categorical([None] * len(col.values))
    if col.kind == "cat":
        return pd.Categorical.from_codes(col.values, categories=list(col.cats))
    if col.kind == "ext":
        return pd.array(col.values, dtype=col.cats)
    return col.values


class Frame(_Promotes):
    """Typed columns of one table, without pandas (module docstring).  ``index``: None for
    0 … n − 1, a range, or the labels the rows had where they were picked from."""

    __slots__ = ("_cols", "_n", "_index", "_pd", "__weakref__")

    def __init__(self, cols: dict[str, Column], n: int, index=None) -> None:
        self._cols, self._n, self._index, self._pd = cols, n, index, None

    # ---- pandas, for anything not below
    def promote(self):
        """Become the pandas DataFrame of the same columns, index and dtypes, for good."""
        if self._pd is None:
            cols = {k: _pandas_array(c) for k, c in self._cols.items()}
            self._pd = pd.DataFrame(cols, index=_pandas_index(self._index, self._n),
                                    copy=False)
            self._cols = None
        return self._pd

    # ---- the part of the interface the analyses of an SGLang log use
    def __len__(self) -> int:
        return self._n if self._pd is None else len(self._pd)

    @property
    def columns(self):
        return list(self._cols) if self._pd is None else self._pd.columns

    @property
    def empty(self) -> bool:
        return (not self._n or not self._cols) if self._pd is None else self._pd.empty

    @property
    def shape(self) -> tuple[int, int]:
        return (self._n, len(self._cols)) if self._pd is None else self._pd.shape

    def __contains__(self, name) -> bool:
        return name in self._cols if self._pd is None else name in self._pd

    def __getitem__(self, key):
        if self._pd is not None:
            return self._pd[promoted(key)]
        if isinstance(key, str):
            c = self._cols[key]
            return Column(c.kind, c.values, c.mask, c.cats, self._index, key)
        if isinstance(key, list) and all(isinstance(k, str) for k in key):
            missing = [k for k in key if k not in self._cols]
            if missing:
                return self.promote()[key]
            return Frame({k: self._cols[k] for k in key}, self._n, self._index)
        if isinstance(key, Column) and key.values.dtype == bool and (
                key.kind == "np" or (key.kind == "masked" and not key.mask.any())):
            key = key.values
        if isinstance(key, np.ndarray) and key.dtype == bool and len(key) == self._n:
            return self.take(np.flatnonzero(key))
        return self.promote()[promoted(key)]

    def take(self, at) -> "Frame":
        """The rows at positions (or a slice) ``at``, the index taken with them."""
        if self._pd is not None:
            return self._pd.take(at) if not isinstance(at, slice) else self._pd.iloc[at]
        index = _index_take(self._index, self._n, at)
        cols = {k: c.take(at, None) for k, c in self._cols.items()}
        n = len(range(self._n)[at]) if isinstance(at, slice) else len(at)
        return Frame(cols, n, index)

    def sort_values(self, by, kind: str = "quicksort", ascending: bool = True, **kw):
        """pandas' sort_values by one integer column without NA (np.argsort of the same kind,
        as pandas' nargsort makes it); anything else by pandas."""
        if self._pd is None and isinstance(by, str) and ascending and not kw and \
                by in self._cols:
            c = self._cols[by]
            if c.values.dtype.kind in "iu" and (c.kind == "np" or (c.kind == "masked" and
                                                                  not c.mask.any())):
                return self.take(np.argsort(c.values, kind=kind))
        return self.promote().sort_values(by, kind=kind, ascending=ascending, **kw)

    @property
    def iloc(self):
        if self._pd is not None:
            return self._pd.iloc
        return _ILoc(self)

    @property
    def index(self):
        if self._pd is not None:
            return self._pd.index
        return self._index if self._index is not None else range(self._n)

    def __setitem__(self, key, value) -> None:
        if self._pd is None and isinstance(key, str) and isinstance(value, np.ndarray) and \
                value.ndim == 1 and len(value) == self._n:
            self._cols[key] = Column.of(value)
            return
        self.promote()[key] = promoted(value)

    def __delitem__(self, key) -> None:
        if self._pd is None:
            del self._cols[key]
        else:
            del self._pd[key]

    def drop(self, columns=None, **kw):
        if self._pd is not None or kw or columns is None:
            return self.promote().drop(columns=columns, **kw)
        names = [columns] if isinstance(columns, str) else list(columns)
        missing = [c for c in names if c not in self._cols]
        if missing:
            raise KeyError(f"{missing} not found in axis")
        return Frame({k: c for k, c in self._cols.items() if k not in names}, self._n,
                     self._index)

    def reset_index(self, drop: bool = False, **kw):
        if self._pd is not None or not drop or kw:
            return self.promote().reset_index(drop=drop, **kw)
        return Frame(dict(self._cols), self._n)

    def copy(self, deep: bool = True):
        if self._pd is not None:
            return self._pd.copy(deep=deep)
        cols = {k: Column(c.kind, c.values.copy() if deep else c.values,
                          None if c.mask is None else (c.mask.copy() if deep else c.mask),
                          c.cats) for k, c in self._cols.items()}
        return Frame(cols, self._n, self._index)

    def __iter__(self):
        return iter(self.columns)


class _ILoc:
    __slots__ = ("frame",)

    def __init__(self, frame: Frame) -> None:
        self.frame = frame

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.frame.take(key)
        return self.frame.promote().iloc[key]


# ----------------------------------------------------------------------------- either kind

def is_light(obj) -> bool:
    return isinstance(obj, (Frame, Column))


def promoted(obj):
    """A Frame or Column as pandas' (promoted), anything else as it is."""
    return obj.promote() if isinstance(obj, (Frame, Column)) else obj


def is_categorical(col) -> bool:
    """Whether a column (either kind) is categorical, without importing pandas for a light
    one."""
    if isinstance(col, Column):
        return col.kind == "cat"
    return isinstance(col.dtype, pd.CategoricalDtype)


def cat_codes(col) -> "np.ndarray":
    """A categorical column's codes (−1: NA), its own array."""
    return col.values if isinstance(col, Column) else col.array.codes


def categories(col) -> list:
    """A categorical column's labels, in code order."""
    return list(col.cats) if isinstance(col, Column) else list(col.cat.categories)


def is_numpy_backed(col) -> bool:
    """Whether a column's values are a numpy array of its own dtype (pandas: a numpy dtype),
    not a nullable or categorical one."""
    if isinstance(col, Column):
        return col.kind == "np"
    return isinstance(col.dtype, np.dtype)


def is_plain_range(df) -> bool:
    """Whether a frame's index is 0 … n − 1."""
    if isinstance(df, Frame) and df._pd is None:
        ix = df._index
        return ix is None or (isinstance(ix, range) and ix.start == 0 and ix.step == 1)
    ix = df.index
    return isinstance(ix, pd.RangeIndex) and ix.start == 0 and ix.step == 1


def empty_like(df) -> "Frame":
    """No rows and no columns, of the kind of ``df``."""
    return Frame({}, 0) if isinstance(df, Frame) else pd.DataFrame()


def _same_index(a, b, n: int) -> bool:
    """Whether two columns' row labels (None: 0 … n − 1) are the same labels in the same
    order."""
    a = range(n) if a is None else a
    b = range(n) if b is None else b
    if a is b:
        return True
    if isinstance(a, range) and isinstance(b, range):
        return a == b
    return np.array_equal(np.asarray(a), np.asarray(b))


def is_value(col, value: str) -> "np.ndarray":
    """The rows where a text or categorical column holds ``value`` (NA: False), as bools:
    ``(col.astype("string") == value).fillna(False)``, without pandas for a light column."""
    if isinstance(col, Column) and col.kind == "cat":
        cats = categories(col)
        if value not in cats:
            return np.zeros(len(col.values), dtype=bool)
        return col.values == cats.index(value)
    col = promoted(col)
    return (col.astype("string") == value).fillna(False).to_numpy(dtype=bool)


UNIQUE_BLOCK = 1 << 16       # rows unique_ints reads at a time


def unique_ints(col, at) -> list[int]:
    """The distinct values (NA left out) of an integer column's rows ``at``, in the order
    they first occur (pd.unique's)."""
    if isinstance(col, Column) and col.kind in ("np", "masked") and col.values.dtype.kind in "iu":
        vals, mask = col.values, col.mask if col.kind == "masked" else None
        rows = range(len(vals))[at] if isinstance(at, slice) else None
        if rows is not None and rows.step != 1:
            at, rows = np.asarray(rows, dtype=np.intp), None
        n = len(rows) if rows is not None else len(at)

        def block(s: int, e: int) -> np.ndarray:
            """the rows' values s … e (NA left out): a block of a column of millions of rows
            at a time, not a copy of it (and of its mask, and bincount's int64 one)"""
            if rows is not None:
                sl = slice(rows.start + s, rows.start + e)
                v = vals[sl]
                return v[~mask[sl]] if mask is not None else v
            ix = at[s:e]
            return vals[ix][~mask[ix]] if mask is not None else vals[ix]
        lo = hi = None
        for s in range(0, n, UNIQUE_BLOCK):
            v = block(s, min(s + UNIQUE_BLOCK, n))
            if len(v):
                a, b = int(v.min()), int(v.max())
                lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
        if lo is None:
            return []
        if hi - lo < 1 << 16:         # (a few start-ups: counted, no sort of millions of rows)
            counts = np.zeros(hi - lo + 1, dtype=np.intp)
            first = {}
            for s in range(0, n, UNIQUE_BLOCK):
                v = block(s, min(s + UNIQUE_BLOCK, n))
                c = np.bincount(v - lo if lo else v, minlength=hi - lo + 1)
                new = np.flatnonzero((c > 0) & (counts == 0))
                if len(new) == 1 and not first:
                    first[int(new[0])] = 0          # (the one start-up of most logs)
                else:
                    for x in new.tolist():          # (where in the block each first occurs)
                        first[x] = s + int(np.argmax(v == x + lo))
                counts += c
            return [x + lo for x, _ in sorted(first.items(), key=lambda kv: kv[1])]
        v = block(0, n)
        u, first = np.unique(v, return_index=True)
        return [int(x) for x in u[np.argsort(first, kind="stable")]]
    arr = promoted(col).array
    part = arr[at] if isinstance(at, slice) else arr.take(at)
    return [int(x) for x in pd.unique(part) if not pd.isna(x)]
