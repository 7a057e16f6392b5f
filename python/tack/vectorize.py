"""``@tack.vectorize``: a scalar function made an element-wise kernel over
NumPy broadcasting (Numba's ``@vectorize``).

The function becomes a ``@tack.func``; each call shape (how many dimensions
the result has, which arguments are arrays and along which dimensions each
one broadcasts) gets a generated kernel whose body reads each argument at
the broadcast index and stores ``f(...)`` into the result.  Everything the
kernel bakes in is in that pattern, so the kernel itself follows the usual
variant rules for dtypes and devices.  The result's dtype is the type the
kernel language gives ``f``'s value for the arguments' types, read from the
typed IR once per combination of argument types."""
import re

import numpy as np

from . import _tack

# The last value of the inlined call in a probe's IR: "} -> $ret0:f32)".
_RESULT_TYPE = re.compile(r"\}\s*->\s*[^:\s]+:([a-z0-9_]+)\)\s*$", re.M)
_MAX_DIMS = 3   # tack.ndindex's extents


def _is_array(a):
    return isinstance(a, (np.ndarray, _tack.Array)) or (
        hasattr(a, "shape") and hasattr(a, "dtype") and not np.isscalar(a))


class vectorize:
    """``@tack.vectorize`` over ``def f(a, b): return ...``: ``f(x, y)``
    returns a new array of the broadcast shape of its arguments (scalars
    broadcast) on their device; ``f(x, y, out=o)`` writes into ``o`` (of
    that shape) and returns it.  The result's dtype is the kernel
    language's type of ``f``'s value (``a < b`` gives bool, ``a * 2`` an
    integer array's dtype); ``dtype=`` in the decorator chooses another.
    The body may call ``@tack.func`` functions.  See docs/language.md."""

    def __init__(self, fn=None, *, dtype=None, source=None):
        self._dtype = None if dtype is None else np.dtype(getattr(dtype, "name", dtype))
        self._source = source
        self._kernels = {}       # (ndim, pattern) -> generated kernel
        self._result = {}        # argument types -> result dtype
        self._func = None
        self.__name__ = "vectorize"
        if fn is not None:
            self._wrap(fn)

    def _wrap(self, fn):
        self._fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        kw = {} if self._source is None else {"source": self._source}
        self._func = _tack.func(fn, **kw)
        code = fn.__code__
        if code.co_flags & 0x0C or code.co_kwonlyargcount:
            raise TypeError("tack.vectorize: %s must take positional parameters only"
                            % fn.__name__)
        self._nargs = code.co_argcount
        return self

    def __call__(self, *args, out=None):
        if self._func is None:          # @tack.vectorize(dtype=...) applied to fn
            if len(args) == 1 and callable(args[0]) and out is None:
                return self._wrap(args[0])
            raise TypeError("tack.vectorize(...) must decorate a function")
        if len(args) != self._nargs:
            raise TypeError("%s() takes %d argument%s (%d given)" % (
                self.__name__, self._nargs, "" if self._nargs == 1 else "s", len(args)))
        arrays = [a for a in args if _is_array(a)]
        shapes = [tuple(a.shape) for a in arrays]
        try:
            shape = np.broadcast_shapes(*shapes) if shapes else ()
        except ValueError:
            raise ValueError("%s(): the arguments' shapes %s do not broadcast together"
                             % (self.__name__, ", ".join(str(s) for s in shapes))) from None
        device = None
        for a in arrays:
            if isinstance(a, _tack.Array):
                if device is not None and a.device is not device:
                    raise ValueError("%s(): the arrays are on different devices (%s, %s)"
                                     % (self.__name__, device.name, a.device.name))
                device = a.device
        if out is not None:
            if not _is_array(out):
                raise TypeError("%s(): out must be an array, not %s"
                                % (self.__name__, type(out).__name__))
            if tuple(out.shape) != shape:
                raise ValueError("%s(): out has shape %s, the broadcast shape is %s"
                                 % (self.__name__, tuple(out.shape), shape))
        else:
            dtype = self._dtype or self._result_dtype(args)
            if device is None:
                out = np.empty(shape, dtype=dtype)
            else:
                out = _tack.empty(shape, dtype=dtype, device=device)
        if 0 in shape:
            return out
        if len(shape) > _MAX_DIMS:
            return self._call_flat(args, shape, out)
        target = out if shape else _as_1d(out)
        kernel = self._kernel(len(shape) or 1, _pattern(args, shape))
        kernel(*args, target)
        return out[()] if not shape and isinstance(out, np.ndarray) else out

    def _call_flat(self, args, shape, out):
        """More dimensions than a launch has: NumPy operands broadcast and
        flattened to one dimension (a copy for the inputs, read only)."""
        if not isinstance(out, np.ndarray) or not out.flags.c_contiguous or any(
                isinstance(a, _tack.Array) for a in args):
            raise ValueError("%s(): %d dimensions need NumPy arrays and a C-contiguous "
                             "out (device arrays: at most %d)" % (self.__name__, len(shape), _MAX_DIMS))
        flat = [np.ascontiguousarray(np.broadcast_to(a, shape)).reshape(-1) if _is_array(a) else a
                for a in args]
        kernel = self._kernel(1, _pattern(flat, (out.size,)))
        kernel(*flat, out.reshape(-1))
        return out

    def _kernel(self, ndim, pattern):
        key = (ndim, pattern)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = self._generate(ndim, pattern)
        return k

    def _generate(self, ndim, pattern, probe=False):
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
        kname = "%s_%s" % (self.__name__, "probe" if probe else "vectorized")
        if probe:
            head = "    for i0 in range(out.shape[0]):\n"
            store = "        out[i0] = f(%s)\n" % ", ".join(reads)
        elif ndim == 1:
            head = "    for i0 in range(out.shape[0]):\n"
            store = "        out[i0] = f(%s)\n" % ", ".join(reads)
        else:
            head = "    for %s in tack.ndindex(%s):\n" % (
                ", ".join(loop), ", ".join("out.shape[%d]" % d for d in range(ndim)))
            store = "        out[%s] = f(%s)\n" % (", ".join(loop), ", ".join(reads))
        src = "def %s(%s, out):\n%s%s" % (kname, ", ".join(names), head, store)
        from . import kernel as make_kernel
        import tack
        scope = {"tack": tack, "f": self._func}
        exec(compile(src, "<tack.vectorize %s>" % self.__name__, "exec"), scope)
        return make_kernel(scope[kname], source=src)

    def _result_dtype(self, args):
        """The kernel language's type of f's value for these argument types:
        a probe kernel's typed IR (compiled for nothing, never run)."""
        key = tuple(_type_key(a) for a in args)
        dt = self._result.get(key)
        if dt is None:
            probe = self._generate(1, _pattern(args, (1,)), probe=True)
            sample = [_sample(a) for a in args]
            ir = probe.inspect_ir(*sample, np.empty(1, np.float64))
            m = _RESULT_TYPE.search(ir)
            if m is None:
                raise TypeError("%s(): f must return one scalar (its value's type could not "
                                "be read:\n%s)" % (self.__name__, ir))
            dt = self._result[key] = np.dtype(_IR_TYPES.get(m.group(1), m.group(1)))
        return dt

    def __repr__(self):
        return "<tack.vectorize %s>" % self.__name__


_IR_TYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "bool": "bool",
             "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
             "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}


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
    return ("scalar", type(a).__name__, str(getattr(a, "dtype", "")))


def _sample(a):
    """An argument of a's type for the probe (one element, on the CPU)."""
    if _is_array(a):
        return np.zeros((1,) * max(len(a.shape), 1), dtype=np.dtype(str(a.dtype)))
    return a


def _as_1d(out):
    """A 0-d result as the one element a launch writes."""
    return out.reshape(1)
