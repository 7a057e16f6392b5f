"""``@tack.vectorize``: a scalar function made an element-wise kernel over
NumPy broadcasting (Numba's ``@vectorize``).

The function becomes a ``@tack.func``.  Each call shape (how many
dimensions the result has, which arguments are arrays and along which of
their dimensions each one broadcasts) gets a generated kernel whose body
reads each argument at the broadcast index (a broadcast dimension is read
at 0) and stores ``f(...)`` into the result.  Up to three dimensions the
kernel is a ``range``/``tack.ndindex`` launch; more (up to the 8 an array
has) are one flat launch whose index is split by division.  Everything the
generated source bakes in is in that pattern, so the kernel itself follows
the usual variant rules for dtypes, strides and devices.

The result's dtype is the type the kernel language gives ``f``'s value for
the arguments' types, read from the typed IR of a probe kernel (compiled
once per combination of argument types, never run).  A warm call looks its
plan up by the arguments' types and shapes: one dict probe, an allocation
and the kernel call."""
import re

import numpy as np

from . import _tack

# The value of an inlined call in the probe's IR: "} -> $ret1:f64"; the
# last one closes the outermost, f itself.
_RESULT_TYPE = re.compile(r"\}\s*->\s*\$\w+:([a-z0-9_]+)")
_MAX_LAUNCH_DIMS = 3   # tack.ndindex's extents
_MAX_DIMS = 8          # a Tack array's dimensions
_PLANS_MAX = 256       # call shapes remembered per function

_IR_TYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "bool": "bool",
             "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
             "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}


def _is_array(a):
    return isinstance(a, (np.ndarray, _tack.Array))


class _Plan:
    """What one call shape needs: the result's shape, dtype and device, how
    each argument is passed, and the kernel."""
    __slots__ = ("shape", "dtype", "device", "convert", "kernel", "flat", "size", "empty",
                 "fresh_scalar")


class vectorize:
    """``@tack.vectorize`` over ``def f(a, b): return ...`` (scalars in,
    one scalar out): ``f(x, y)`` returns a new array of the broadcast
    shape of its arguments (NumPy's rules; scalars broadcast) on their
    device, ``f(x, y, out=o)`` writes into ``o`` (of that shape) and
    returns it.  The result's dtype is the kernel language's type of
    ``f``'s value (``a < b`` gives bool, ``a * 2`` keeps an integer
    array's dtype); ``@tack.vectorize(dtype=tack.f64)`` chooses another.
    The body may call ``@tack.func`` functions.  Results have up to 8
    dimensions.  See docs/language.md#element-wise-functions-tackvectorize."""

    def __init__(self, fn=None, *, dtype=None, source=None):
        self._dtype = None if dtype is None else _np_dtype(dtype)
        self._source = source
        self._kernels = {}       # (ndim, pattern) -> generated kernel
        self._result = {}        # argument types -> result dtype
        self._plans = {}         # the arguments' (type, shape, dtype) -> _Plan
        self._func = None
        self.__name__ = "vectorize"
        if fn is not None:
            self._wrap(fn)

    def _wrap(self, fn):
        if not callable(fn) or not hasattr(fn, "__code__"):
            raise TypeError("tack.vectorize must decorate a Python function, not %s"
                            % type(fn).__name__)
        code = fn.__code__
        if code.co_flags & 0x0C or code.co_kwonlyargcount:
            raise TypeError("tack.vectorize: %s must take positional parameters only"
                            % fn.__name__)
        if code.co_argcount == 0:
            raise TypeError("tack.vectorize: %s must take at least one parameter" % fn.__name__)
        kw = {} if self._source is None else {"source": self._source}
        self._func = _tack.func(fn, **kw)
        self._fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self._nargs = code.co_argcount
        return self

    def __call__(self, *args, out=None):
        if self._func is None:          # @tack.vectorize(dtype=...) applied to fn
            if len(args) == 1 and out is None:
                return self._wrap(args[0])
            raise TypeError("tack.vectorize(...) must decorate a function")
        if len(args) != self._nargs:
            raise TypeError("%s() takes %d argument%s (%d given)" % (
                self.__name__, self._nargs, "" if self._nargs == 1 else "s", len(args)))
        key = (*map(_key, args), _out_key(out))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(args, out)
            if len(self._plans) >= _PLANS_MAX:
                self._plans.clear()
            self._plans[key] = plan
        if out is None:
            if plan.device is None:
                out = np.empty(plan.shape, dtype=plan.dtype)
            else:
                out = _tack.empty(plan.shape, dtype=plan.dtype, device=plan.device)
            result = out
        else:
            result = out
        if plan.empty:
            return result
        if plan.convert:
            args = [c(a) if c else a for c, a in zip(plan.convert, args)]
        if plan.flat:
            plan.kernel(*args, out, plan.size)
        elif plan.shape:
            plan.kernel(*args, out)
        else:
            return self._call_0d(plan, args, out, result)
        return result

    def _call_0d(self, plan, args, out, result):
        """A 0-d result: computed into one element on the CPU, which a
        0-d NumPy array is a view of."""
        one = out.reshape(1) if isinstance(out, np.ndarray) else np.empty(1, plan.dtype)
        plan.kernel(*args, one)
        if not isinstance(out, np.ndarray):
            _tack.copyto(out, one.reshape(()))
            return result
        return result[()] if result is out and plan.fresh_scalar else result

    def _plan(self, args, out):
        """The checks of a call shape seen for the first time (a refused call
        writes nothing), and its kernel."""
        name = self.__name__
        device = None
        for a in list(args) + ([out] if _is_array(out) else []):
            if isinstance(a, _tack.Array):
                if device is not None and a.device is not device:
                    raise ValueError("%s(): the arrays are on different devices (%s, %s)"
                                     % (name, device.name, a.device.name))
                device = a.device
        for i, a in enumerate(args):
            if not _is_array(a) and not isinstance(a, (bool, int, float, np.generic)):
                if hasattr(a, "__array__") or hasattr(a, "__len__"):
                    raise TypeError("%s(): argument %d is a %s: pass a NumPy array or a "
                                    "tack.Array" % (name, i + 1, type(a).__name__))
                raise TypeError("%s(): argument %d is a %s, not a number or an array"
                                % (name, i + 1, type(a).__name__))
            if _is_array(a) and a.ndim > _MAX_DIMS:
                raise ValueError("%s(): argument %d has %d dimensions; arrays have at most %d"
                                 % (name, i + 1, a.ndim, _MAX_DIMS))
        shapes = [tuple(a.shape) for a in args if _is_array(a)]
        try:
            shape = np.broadcast_shapes(*shapes) if shapes else ()
        except ValueError:
            raise ValueError("%s(): the arguments' shapes %s do not broadcast together"
                             % (name, ", ".join(str(s) for s in shapes))) from None
        if len(shape) > _MAX_DIMS:
            raise ValueError("%s(): the result would have %d dimensions; arrays have at most %d"
                             % (name, len(shape), _MAX_DIMS))
        if out is not None:
            if not _is_array(out):
                raise TypeError("%s(): out must be a NumPy array or a tack.Array, not %s"
                                % (name, type(out).__name__))
            if tuple(out.shape) != shape:
                raise ValueError("%s(): out has shape %s, the arguments broadcast to %s"
                                 % (name, tuple(out.shape), shape))
            if device is not None and isinstance(out, np.ndarray):
                raise ValueError("%s(): out is a NumPy array but the arguments are on %s; "
                                 "pass a tack.Array on that device" % (name, device.name))
            if isinstance(out, np.ndarray) and not out.flags.writeable:
                raise ValueError("%s(): out is read-only" % name)
        plan = _Plan()
        plan.shape = shape
        plan.device = device
        plan.empty = 0 in shape
        plan.fresh_scalar = out is None
        # 0-d arrays are passed as their one value (typed: a NumPy scalar);
        # NumPy arrays beside device arrays are copied to that device.
        convert = []
        for a in args:
            if _is_array(a) and a.ndim == 0:
                convert.append(_item)
            elif device is not None and isinstance(a, np.ndarray):
                convert.append(lambda a, d=device: _tack.asarray(np.ascontiguousarray(a), device=d))
            else:
                convert.append(None)
        plan.convert = convert if any(convert) else None
        passed = [c(a) if c else a for c, a in zip(convert, args)]
        plan.dtype = self._dtype or self._result_dtype(passed)
        plan.flat = len(shape) > _MAX_LAUNCH_DIMS
        plan.size = int(np.prod(shape)) if shape else 1
        plan.kernel = self._kernel(max(len(shape), 1), _pattern(passed, shape or (1,)), plan.flat)
        return plan

    def _kernel(self, ndim, pattern, flat=False):
        key = (ndim, pattern, flat)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = self._generate(ndim, pattern, flat)
        return k

    def _generate(self, ndim, pattern, flat=False, probe=False):
        names = ["a%d" % i for i in range(len(pattern))]
        loop = ["i%d" % d for d in range(ndim)]
        reads = []
        for name, p in zip(names, pattern):
            if p is None:
                reads.append(name)
            elif probe:
                reads.append("%s[%s]" % (name, ", ".join("0" for _ in p)))
            else:
                # Aligned to the right; a broadcast dimension is read at 0.
                idx = [("0" if b else loop[ndim - len(p) + d]) for d, b in enumerate(p)]
                reads.append("%s[%s]" % (name, ", ".join(idx)))
        call = "f(%s)" % ", ".join(reads)
        kname = "%s_%s" % (self.__name__, "probe" if probe else "vectorized")
        params = names + ["out"]
        if probe or ndim == 1:
            body = ("    for i0 in range(out.shape[0]):\n"
                    "        out[i0] = %s\n" % call)
        elif flat:
            # One launch over every element; the index split by division,
            # the last dimension fastest (the result's C order).
            params.append("n")
            lines = ["    for t in range(n):", "        r = t"]
            for d in range(ndim - 1, 0, -1):
                lines.append("        i%d = r %% out.shape[%d]" % (d, d))
                lines.append("        r = r // out.shape[%d]" % d)
            lines.append("        i0 = r")
            lines.append("        out[%s] = %s" % (", ".join(loop), call))
            body = "\n".join(lines) + "\n"
        else:
            body = ("    for %s in tack.ndindex(%s):\n"
                    "        out[%s] = %s\n" % (
                        ", ".join(loop), ", ".join("out.shape[%d]" % d for d in range(ndim)),
                        ", ".join(loop), call))
        src = "def %s(%s):\n%s" % (kname, ", ".join(params), body)
        from . import kernel as make_kernel
        import tack
        scope = {"tack": tack, "f": self._func}
        exec(compile(src, "<tack.vectorize %s>" % self.__name__, "exec"), scope)
        return make_kernel(scope[kname], source=src)

    def _result_dtype(self, args):
        """The kernel language's type of f's value for these argument types:
        a probe kernel's typed IR (compiled on the CPU, never run)."""
        key = tuple(_type_key(a) for a in args)
        dt = self._result.get(key)
        if dt is None:
            pattern = tuple((False,) * a.ndim if _is_array(a) else None for a in args)
            probe = self._generate(1, pattern, probe=True)
            sample = [_sample(a) for a in args]
            ir = probe.inspect_ir(*sample, np.empty(1, np.float64), device="cpu")
            found = _RESULT_TYPE.findall(ir)
            t = found and _IR_TYPES.get(found[-1])
            if t is None:
                raise TypeError("%s(): f must return one number (its value's type could not "
                                "be read from the kernel's IR:\n%s)" % (self.__name__, ir))
            dt = self._result[key] = np.dtype(t)
        return dt

    def __repr__(self):
        return "<tack.vectorize %s>" % self.__name__


def _key(a):
    """What a call shape depends on, cheap to compute: an array's shape,
    dtype (and device); a scalar's type."""
    t = type(a)
    if t is np.ndarray:
        return (a.shape, a.dtype)
    if t is _Array:
        return (a.shape, a.dtype, a.device)
    if _is_array(a):
        return (t, a.shape, a.dtype, getattr(a, "device", None))
    return t


def _out_key(out):
    if type(out) is np.ndarray:
        return (out.shape, out.dtype, out.flags.writeable)
    return None if out is None else _key(out)


_Array = _tack.Array


def _np_dtype(d):
    """NumPy's dtype for a NumPy or Tack dtype (tack.f32.numpy)."""
    return np.dtype(getattr(d, "numpy", d))


def _item(a):
    """A 0-d array's value, keeping its dtype (a NumPy scalar)."""
    if isinstance(a, np.ndarray):
        return a[()]
    return a.numpy()[()]


def _pattern(args, shape):
    """Per argument: None for a scalar, else for each of its dimensions
    whether it broadcasts (size 1 where the result's is not)."""
    out = []
    for a in args:
        if not _is_array(a):
            out.append(None)
            continue
        s = tuple(a.shape)
        off = len(shape) - len(s)
        out.append(tuple(n == 1 and shape[off + d] != 1 for d, n in enumerate(s)))
    return tuple(out)


def _type_key(a):
    if _is_array(a):
        return ("array", str(a.dtype), len(a.shape))
    return ("scalar", type(a).__name__)


def _sample(a):
    """An argument of a's type for the probe (one element, on the CPU)."""
    if _is_array(a):
        return np.zeros((1,) * max(len(a.shape), 1), dtype=_np_dtype(a.dtype))
    return a
