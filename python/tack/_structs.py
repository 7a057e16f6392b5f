"""@tack.struct: records with typed fields, as element dtypes of arrays.

A struct type has a C layout (each field aligned to its component size, the
record to its largest alignment), the layout of ``numpy.dtype(..., align=True)``
and of Warp's structs.  An array of structs (``tack.zeros(n, dtype=P)``)
keeps one array per field (scalar, vector or matrix), nested structs
holding theirs: a kernel receives it as a template whose attributes are
those arrays, and ``x[i].f`` is read as ``x.f[i]`` (src/lower/structs.c).
"""
import weakref
import functools

# The struct type of each record dtype: a record passed to a kernel by value
# (a NumPy void scalar) finds its struct here.
_BY_DTYPE = {}
# Every struct class of each layout: records of a layout that several
# classes share do not say which class they are (tack.array then wants dtype=).
_CLASSES_BY_DTYPE = {}

_FIELD_TYPES = "a tack dtype (tack.f32, tack.vec3f, tack.mat33f, ...) or a @tack.struct class"


def _tack():
    from . import _tack as t
    return t


class StructType:
    """A @tack.struct class: its fields in order (name, type), the NumPy
    dtype of one record (.numpy) and its size in bytes (.itemsize)."""

    def __init__(self, cls):
        t = _tack()
        import numpy as np
        self.__name__ = cls.__name__
        self.__qualname__ = getattr(cls, "__qualname__", cls.__name__)
        self.__module__ = getattr(cls, "__module__", None)
        self.__doc__ = cls.__doc__
        ann = cls.__dict__.get("__annotations__", {})
        if not ann:
            raise TypeError("@tack.struct class '%s' has no annotated fields (write "
                            "'pos: tack.vec3f')" % cls.__name__)
        fields, names, formats, offsets = [], [], [], []
        offset, align = 0, 1
        for name, ftype in ann.items():
            if isinstance(ftype, str):
                raise TypeError("field '%s' of struct '%s': the annotation is the string %r; "
                                "write the type itself (no 'from __future__ import "
                                "annotations')" % (name, cls.__name__, ftype))
            if isinstance(ftype, StructType):
                a, size, fmt = ftype._align, ftype.itemsize, ftype.numpy
            elif isinstance(ftype, t.dtype):
                a, size, fmt = ftype.component.itemsize, ftype.itemsize, ftype.numpy
            else:
                raise TypeError("field '%s' of struct '%s' must be %s, not %r"
                                % (name, cls.__name__, _FIELD_TYPES, ftype))
            offset = -(-offset // a) * a
            fields.append((name, ftype))
            names.append(name)
            formats.append(fmt)
            offsets.append(offset)
            offset += size
            align = max(align, a)
        self.fields = tuple(fields)
        self._align = align
        self.itemsize = -(-offset // align) * align
        self.numpy = np.dtype({"names": names, "formats": formats, "offsets": offsets,
                               "itemsize": self.itemsize})
        # The layout kernels construct records from (`P(...)` in a kernel):
        # tack.h's TACK_NAME_STRUCT text.
        self._tack_layout = "%s{%s}" % (self.__name__, ",".join(
            "%s:%s" % (name, ftype._tack_layout if isinstance(ftype, StructType) else ftype.name)
            for name, ftype in fields))
        self._array_cls = _array_class(self)
        self._value_cls = _array_class(self, by_value=True)
        _BY_DTYPE[self.numpy] = self
        _CLASSES_BY_DTYPE.setdefault(self.numpy, []).append(weakref.ref(self))

    def __repr__(self):
        return "<tack.struct %s>" % self.__qualname__

    def __call__(self, **values):
        """Outside kernels: one record, a NumPy scalar of dtype .numpy."""
        import numpy as np
        rec = np.zeros((), dtype=self.numpy)
        for k, v in values.items():
            if k not in self.numpy.names:
                raise TypeError("struct '%s' has no field '%s'" % (self.__name__, k))
            rec[k] = v
        return rec[()]


def struct(cls):
    """Makes cls, a class of annotated fields (``pos: tack.vec3f``), a
    struct type: the element dtype of arrays (``tack.zeros(n, dtype=P)``)
    whose records kernels read and write field by field (``x[i].pos``)."""
    return StructType(cls)


def _array_class(stype, by_value=False):
    t = _tack()

    class StructArray:
        # A marker kernels recognise (a class constant, so part of the key).
        _tack_struct = 1

        def __init__(self, fields):
            self.__dict__.update(fields)

        def _leaves(self):
            for name, ftype in stype.fields:
                v = self.__dict__[name]
                if isinstance(ftype, StructType):
                    yield from v._leaves()
                else:
                    yield v

        @property
        def shape(self):
            return next(self._leaves()).shape

        @property
        def dtype(self):
            return stype

        @property
        def device(self):
            return next(self._leaves()).device

        @property
        def ndim(self):
            return len(self.shape)

        @property
        def size(self):
            n = 1
            for d in self.shape:
                n *= d
            return n

        def __len__(self):
            return self.shape[0]

        def numpy(self):
            """A copy of the records as a NumPy structured array."""
            import numpy as np
            out = np.empty(self.shape, dtype=stype.numpy)
            self._fill(out)
            return out

        def _fill(self, out):
            for name, ftype in stype.fields:
                v = self.__dict__[name]
                if isinstance(ftype, StructType):
                    v._fill(out[name])
                else:
                    out[name] = v.numpy()

        def _assign(self, src):
            for name, ftype in stype.fields:
                v = self.__dict__[name]
                if isinstance(ftype, StructType):
                    v._assign(src[name])
                else:
                    t.copyto(v, src[name])

        def __repr__(self):
            return "tack.Array(%r, dtype=%s)" % (self.numpy(), stype.__name__)

    StructArray.__name__ = StructArray.__qualname__ = stype.__name__ + "Array"
    if by_value:
        # One record passed by value: kernels read `p.f` as `p[0].f`.
        StructArray._tack_struct_value = 1
        StructArray.__name__ = StructArray.__qualname__ = stype.__name__ + "ValueArray"
    return t.device_class(StructArray)


def _class_of_layout(dtype):
    """The one @tack.struct class whose .numpy is dtype; TypeError when
    several classes share that layout (records do not say which)."""
    live = [r() for r in _CLASSES_BY_DTYPE.get(dtype, ())]
    live = [c for c in live if c is not None]
    if len(live) > 1:
        raise TypeError("records of dtype %s have the layout of several @tack.struct classes "
                        "(%s): pass dtype=<the class> to tack.array"
                        % (dtype, ", ".join(c.__qualname__ for c in live)))
    return live[0] if live else None


def value_argument(rec, device=None):
    """A record passed to a kernel (a NumPy void scalar of a struct's
    dtype, as `P(...)` makes): a one-element array of records on `device`
    marked as a value, so the kernel reads its fields as `p.f`.  Called by the
    argument converter (python/tack/_ext/args.c)."""
    t = _tack()
    stype = _BY_DTYPE.get(rec.dtype)
    if stype is None:
        raise TypeError("a NumPy record of dtype %s is not a @tack.struct's (make it with "
                        "P(field=value, ...) of a @tack.struct class P)" % (rec.dtype,))

    def build(st, value):
        fields = {}
        for name, ftype in st.fields:
            if isinstance(ftype, StructType):
                fields[name] = ftype._array_cls(build(ftype, value[name]))
            else:
                fields[name] = t.array(value[name][None], dtype=ftype, device=device)
        return fields

    return stype._value_cls(build(stype, rec))


def _component_classes():
    """NumPy array subclasses marking a field view's last one (vector) or
    two (matrix) dimensions as one element's components; the argument
    converter (python/tack/_ext/args.c) reads the mark."""
    global _COMPONENT_VIEWS
    if _COMPONENT_VIEWS is None:
        import numpy as np

        class VectorField(np.ndarray):
            _tack_component_dims = 1

        class MatrixField(np.ndarray):
            _tack_component_dims = 2

        class QuaternionField(VectorField):
            _tack_quaternion = True

        _COMPONENT_VIEWS = {1: VectorField, 2: MatrixField, "quat": QuaternionField}
    return _COMPONENT_VIEWS


_COMPONENT_VIEWS = None


def _field_views(stype, rec):
    views = _component_classes()
    fields = {}
    for name, ftype in stype.fields:
        v = rec[name]                   # a view: strided by the record size
        if isinstance(ftype, StructType):
            fields[name] = ftype._array_cls(_field_views(ftype, v))
            continue
        dims = len(stype.numpy.fields[name][0].shape)
        if ftype is _tack().quatf or ftype is _tack().quatd:
            dims = "quat"
        fields[name] = v.view(views[dims]) if dims else v
    return fields


def numpy_argument(arr):
    """A NumPy structured array passed to a kernel: when its dtype is a
    @tack.struct's (.numpy), the struct's array of records made of views of
    arr's fields, so the kernel reads and writes arr in place.  Called by
    the argument converter (python/tack/_ext/args.c)."""
    stype = _BY_DTYPE.get(arr.dtype)
    if stype is None:
        raise TypeError("a NumPy structured array of dtype %s is not the layout of any "
                        "@tack.struct; declare one whose .numpy is this dtype (fields in "
                        "order, C-aligned as numpy.dtype(..., align=True)) or copy with "
                        "tack.array(recs, dtype=P)" % (arr.dtype,))
    return stype._array_cls(_field_views(stype, arr))


def _new(stype, shape, device, make):
    fields = {}
    for name, ftype in stype.fields:
        if isinstance(ftype, StructType):
            fields[name] = _new(ftype, shape, device, make)
        else:
            fields[name] = make(shape, dtype=ftype, device=device)
    return stype._array_cls(fields)


def _records(stype, obj):
    """obj as a NumPy array of stype's records (fields matched by name)."""
    import numpy as np
    if isinstance(obj, np.ndarray) and obj.dtype.names is not None:
        if set(obj.dtype.names) != set(stype.numpy.names):
            raise ValueError("a struct '%s' array needs the fields %s; this one has %s"
                             % (stype.__name__, stype.numpy.names, obj.dtype.names))
        return obj
    return np.asarray(obj, dtype=stype.numpy)


def is_struct_array(x):
    return type(x).__dict__.get("_tack_struct") == 1 and hasattr(type(x), "_fill")


_NO_DATA = object()


def wrap_creators(ns):
    """Wraps tack.zeros/empty/array/asarray/copyto in namespace ns so that
    a struct dtype (or a struct array) takes the path above."""
    t = _tack()

    def keep(orig, f):
        f = functools.wraps(orig)(f)
        f.__text_signature__ = orig.__text_signature__
        return f

    def creator(orig, make):
        def f(shape, dtype=None, device=None, **kw):
            if isinstance(dtype, StructType):
                if isinstance(shape, int):
                    shape = (shape,)
                return _new(dtype, tuple(shape), device, make)
            if dtype is None:
                return orig(shape, device=device, **kw)
            return orig(shape, dtype=dtype, device=device, **kw)
        return keep(orig, f)

    def from_data(orig, annotates=False):
        def f(obj=_NO_DATA, dtype=None, device=None, **kw):
            if obj is _NO_DATA and annotates:  # Warp's annotation x: tack.array(dtype=...)
                from ._annotations import ArrayAnnotation
                if device is not None or set(kw) - {"ndim"}:
                    raise TypeError("tack.array() without data is an annotation: it takes "
                                    "dtype= and ndim= only")
                return ArrayAnnotation(dtype, **kw)
            if obj is _NO_DATA:
                return orig(dtype=dtype, device=device, **kw)  # its own missing-argument error
            if (isinstance(dtype, StructType) or is_struct_array(obj) or
                    (dtype is None and getattr(getattr(obj, "dtype", None), "names", None)
                     and obj.dtype in _BY_DTYPE)):
                if is_struct_array(obj):
                    obj = obj.numpy()
                st = dtype if isinstance(dtype, StructType) else None
                if st is None and not is_struct_array(obj):
                    st = _class_of_layout(obj.dtype)   # a structured array of a struct's layout
                if st is None:
                    raise TypeError("tack.array of records needs dtype=<a @tack.struct class>")
                rec = _records(st, obj)
                out = _new(st, rec.shape, device, t.empty)
                out._assign(rec)
                return out
            return orig(obj, dtype=dtype, device=device, **kw)
        return keep(orig, f)

    def copyto(dst, src):
        if is_struct_array(dst):
            if is_struct_array(src):
                src = src.numpy()
            rec = _records(dst.dtype, src)
            if rec.shape != dst.shape:
                raise ValueError("copyto: shapes %s and %s differ" % (dst.shape, rec.shape))
            dst._assign(rec)
            return None
        return orig_copyto(dst, src)

    orig_copyto = ns["copyto"]
    ns["zeros"] = creator(ns["zeros"], t.zeros)
    ns["empty"] = creator(ns["empty"], t.empty)
    ns["array"] = from_data(ns["array"], annotates=True)
    ns["asarray"] = from_data(ns["asarray"])
    ns["copyto"] = keep(orig_copyto, copyto)
