"""Reverse-mode automatic differentiation (docs/autodiff.md).

The adjoint kernels are made by the compiler (src/passes/adjoint.c); this
module only keeps the bookkeeping: which arrays have gradients, which
launches a tack.Tape recorded, and in what order their adjoints run."""

import ast as _ast
import inspect as _inspect
import math as _math
import textwrap as _textwrap
import types as _types

import numpy as _np

from . import _tack

# the layout of return.grad, the adjoint's last array (include/tack.h):
# the returned numbers' gradients, then the numbers the forward returned
_RETURN_VALUES = 16

__all__ = ["Tape", "Scalar", "array", "empty", "zeros", "ones", "stop_gradient", "kernel_backward"]


array = _tack.array
empty = _tack.empty
zeros = _tack.zeros


def ones(shape, dtype=None, device=None, requires_grad=False):
    """A new array of ones (f32 unless dtype= is given); ``requires_grad=True``
    gives it a zeroed ``.grad``."""
    a = _tack.empty(shape, device=device, requires_grad=requires_grad,
                    **({} if dtype is None else {"dtype": dtype}))
    _fill(a, 1)
    return a


def stop_gradient(v):
    """``v``, with no gradient flowing back through it (inside kernels: the
    adjoint treats it as a constant); outside kernels ``v`` itself."""
    return v


class Scalar(float):
    """A float kernel argument with a gradient: ``dt = tack.Scalar(0.01,
    requires_grad=True)`` passes 0.01 (it is a ``float``), and backward
    passes (``tape.backward``, ``kernel.backward``) add d loss / d dt into
    ``dt.grad`` (a float, 0.0 to start; ``tape.zero()`` resets it).  A float
    cannot change, so a gradient step makes a new one:
    ``dt = tack.Scalar(dt - lr * dt.grad, requires_grad=True)``."""

    def __new__(cls, value, requires_grad=True):
        return super().__new__(cls, value)

    def __init__(self, value, requires_grad=True):
        self.requires_grad = bool(requires_grad)
        self.grad = 0.0


class Returned(float):
    """What a kernel that returns a sum gives inside ``with tape:``: the
    value, which ``tape.backward(loss)`` (or ``grads={loss: g}``) seeds."""

    def __new__(cls, value, tape, launch, number):
        r = super().__new__(cls, value)
        r._tape, r._launch, r._number = tape, launch, number
        return r

    # grads={s: 1.0, t: 2.0} keeps two equal sums apart: keyed by identity
    __hash__ = object.__hash__


class ReturnedArray(_np.ndarray):
    """What a kernel that returns a vector or matrix (a sum of vectors)
    gives inside ``with tape:``: the NumPy array of its components, which
    ``tape.backward(grads={v: g})`` seeds (g: an array of v's shape)."""

    def __array_finalize__(self, obj):
        # arithmetic on it makes new arrays, which are not seeds
        self._tape = self._launch = self._number = None

    __hash__ = object.__hash__


class ReturnedComplex(complex):
    """What a kernel that returns a complex sum gives inside ``with tape:``;
    its gradient is a complex g = dL/d(real) + 1j dL/d(imag)."""

    def __new__(cls, value, tape, launch, number):
        r = super().__new__(cls, value)
        r._tape, r._launch, r._number = tape, launch, number
        return r

    __hash__ = object.__hash__


def _numbers(v):
    """v's numbers in return.grad's order: a float is one, a complex its
    real and imaginary parts, a vector or matrix its components (row-major),
    a list or tuple each item's in turn."""
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _numbers(item)]
    a = _np.asarray(v)
    if a.dtype.kind == "c":
        return [x for z in a.reshape(-1) for x in (float(z.real), float(z.imag))]
    return [float(x) for x in a.astype(_np.float64).reshape(-1)]


def _is_returned(v):
    return isinstance(v, (Returned, ReturnedArray, ReturnedComplex))


def _fill(a, value):
    host = _np.full(_np.asarray(a).shape if a.device.name == "cpu" else a.numpy().shape, value,
                    dtype=a.numpy().dtype)
    _tack.copyto(a, host)


def _is_array(v):
    return isinstance(v, (_tack.Array, _np.ndarray))


def _steps(a):
    """a's strides in elements (of a's own dtype), 0 along extents of 1."""
    size = a.itemsize if isinstance(a, _np.ndarray) else (a.nbytes // a.size if a.size else 1)
    return tuple(0 if n == 1 else s // size for n, s in zip(a.shape, a.strides))


def _float_kind(a):
    """a's dtype as NumPy names it ('f8'), vector dtypes by their components."""
    if isinstance(a, _np.ndarray):
        return a.dtype
    name = str(a.dtype).split(".")[-1]
    return {"f32": "f4", "f64": "f8", "f16": "f2"}.get(name, "i8")


def _dtype_name(a):
    return str(a.dtype).split(".")[-1]


def _same_elements(a, g):
    """Whether gradient g has a's shape and element type (a NumPy array and
    a tack.Array compare by their scalar kind and element size)."""
    if tuple(a.shape) != tuple(g.shape):
        return False
    if type(a) is type(g):
        return a.dtype == g.dtype
    size = lambda x: x.itemsize if isinstance(x, _np.ndarray) else (x.nbytes // x.size if x.size else 0)
    return _np.dtype(_float_kind(a)) == _np.dtype(_float_kind(g)) and (
        a.size == 0 or size(a) == size(g))


def _grad_of(v, adj):
    """The gradient array passed for argument v: adj's, v.grad, or a
    scratch one (v is then a constant: what flows into it is dropped)."""
    for key, g in adj:
        if key is v:
            return g
    if isinstance(v, _tack.Array):
        if v.grad is not None:
            return v.grad
        return _tack.zeros(v.shape, dtype=v.dtype, device=v.device)
    if isinstance(v, _np.ndarray):
        return _np.zeros_like(v)
    return v  # a scalar: its gradient parameter is unused


def _device_of(args):
    for a in args:
        if isinstance(a, _tack.Array):
            return a.device
    return None


_extreme_cache = {}


def _returns_extreme(kernel):
    """Whether kernel has a min or max reduction (`s = min(s, v)` in its
    parallel loop, s assigned before it: src/lower/reductions.c's rule),
    whose adjoint needs the value the forward returned."""
    func = getattr(kernel, "func", None)
    if func is None:
        return False
    if func in _extreme_cache:
        return _extreme_cache[func]
    found = False
    try:
        tree = _ast.parse(_textwrap.dedent(_inspect.getsource(func)))
        before = set()
        for st in tree.body[0].body:
            if isinstance(st, _ast.Assign):
                before |= {t.id for t in st.targets if isinstance(t, _ast.Name)}
            if not isinstance(st, _ast.For):
                continue
            for node in _ast.walk(st):
                if not (isinstance(node, _ast.Assign) and len(node.targets) == 1 and
                        isinstance(node.targets[0], _ast.Name) and node.targets[0].id in before and
                        isinstance(node.value, _ast.Call) and node.value.args):
                    continue
                f = node.value.func
                name = f.id if isinstance(f, _ast.Name) else f.attr if isinstance(f, _ast.Attribute) else ""
                first = node.value.args[0]
                if name in ("min", "max") and isinstance(first, _ast.Name) and first.id == node.targets[0].id:
                    found = True
    except (OSError, TypeError, SyntaxError, IndexError, AttributeError):
        found = False
    _extreme_cache[func] = found
    return found


def kernel_backward(kernel, *args, adj=None):
    """kernel.backward(*args, adj={x: gx, ...}): one launch of the adjoint of
    ``kernel(*args)``.  Each array's gradient is the one adj gives (keys are
    the argument objects, or parameter names), else its ``.grad``, else it is
    a constant.  Input gradients are accumulated (+=); outputs' gradients
    are read.  A kernel that returns a sum takes its returned value's
    gradient as ``adj={"return": g}`` (a float, or a list of one per returned
    value: a float, a complex (d/d real + 1j d/d imaginary) or an array of a
    vector's or matrix's shape; 0 when not given); one with a min or max reduction also needs what the
    forward returned, ``adj={"return": g, "returned": value}`` (a tape
    passes it).  A ``tack.Scalar`` argument with ``requires_grad``
    gets its gradient added into its ``.grad``."""
    code = getattr(kernel.func, "__code__", None)
    # the compiled kernel's parameters: its own, the arrays it reads by name
    # or makes (python/tack/_allocations.py), a tack.tid() kernel's extents
    names = list(kernel._param_names())
    nparams = len(names)
    plan = kernel.__dict__.get("_tack_allocations")
    if plan is not None and len(args) == nparams - len(plan.allocs) - len(plan.outside):
        if plan.allocs:
            raise TypeError("kernel '%s' makes arrays before its launch: differentiate the call "
                            "recorded on a tack.Tape, or pass the arrays as arguments"
                            % kernel.__name__)
        args = plan.outside_values(kernel, args)
    epilogue = _epilogue(kernel) if len(args) == nparams else None
    if epilogue is not None:
        # the adjoint of the kernel returning its sums, seeded by the chain rule
        if _returns_extreme(kernel):
            raise _tack.CompileError(
                "kernel '%s': backward of a returned expression of a min or max reduction is "
                "not supported (return the reduction itself)" % kernel.__name__)
        adj = dict(adj or {})
        seed = adj.pop("return", None)
        adj.pop("returned", None)
        seeds = _epilogue_seed(kernel, epilogue, args, [] if seed is None else
                               seed if isinstance(seed, (list, tuple)) else [seed])
        if seed is not None:
            adj["return"] = seeds
        return kernel_backward(epilogue[0], *args, adj=adj)
    if len(args) != nparams:
        raise TypeError("kernel '%s': backward takes the kernel's %d argument%s, %d given"
                        % (kernel.__name__, nparams, "" if nparams == 1 else "s", len(args)))
    if adj is not None and not isinstance(adj, dict):
        raise TypeError("kernel '%s': backward's adj is a dict {argument or parameter name: "
                        "gradient array}, not %s" % (kernel.__name__, type(adj).__name__))
    pairs = []
    seed = returned = None
    if adj and ("return" in adj or "returned" in adj):
        adj = dict(adj)
        seed = adj.pop("return", None)
        returned = adj.pop("returned", None)
    if adj:
        for key, g in adj.items():
            if isinstance(key, str):
                if key not in names:
                    raise ValueError("kernel.backward: adj names '%s', not a parameter" % key)
                key = args[names.index(key)]
            elif not any(key is a for a in args):
                raise ValueError("kernel.backward: an adj key is not one of the arguments")
            pairs.append((key, g))
    grads = [_grad_of(a, pairs) for a in args]
    dev = _device_of(args)
    scalars = []
    for i, (a, g) in enumerate(zip(args, grads)):
        if isinstance(a, Scalar) and a.requires_grad and g is a:
            # its gradient: element 0 of a scratch array, added to a.grad after
            g = grads[i] = _tack.zeros(1, dtype=_tack.f64, device=dev) if dev is not None \
                else _np.zeros(1)
            scalars.append((a, g))
    for i, (a, g) in enumerate(zip(args, grads)):
        if _is_array(a) or g is a:
            continue
        # opt-in: a scalar's gradient goes to element 0 of the array adj gives
        name = names[i]
        if not isinstance(a, float):
            raise ValueError("kernel.backward: '%s' is not a Python float: only float scalars have "
                             "gradients" % name)
        if not _is_array(g) or g.size < 1 or _np.dtype(_float_kind(g)).kind != "f":
            raise ValueError("kernel.backward: the gradient of scalar '%s' is a float array of at "
                             "least one element (its element 0 takes the gradient)" % name)
    for i, (a, g) in enumerate(zip(args, grads)):
        name = names[i]
        if _is_array(a) and not _is_array(g):
            raise TypeError("kernel '%s': the gradient of array '%s' is not an array (got %s)"
                            % (kernel.__name__, name, type(g).__name__))
        if _is_array(a) and not _same_elements(a, g):
            # the adjoint indexes the gradient as the array: a smaller one
            # would be read and written past its end
            raise ValueError("kernel '%s': the gradient of '%s' must have its shape and dtype "
                             "(%s of %s); got %s of %s" % (kernel.__name__, name, tuple(a.shape),
                                                           _dtype_name(a), tuple(g.shape),
                                                           _dtype_name(g)))
        if _is_array(a) and _is_array(g) and _steps(a) != _steps(g):
            raise ValueError("kernel.backward: the gradient of '%s' is laid out differently from it "
                             "(element strides %s and %s): the adjoint indexes both alike; pass "
                             "contiguous arrays (numpy.ascontiguousarray) or a gradient laid out as "
                             "the array" % (name, _steps(a), _steps(g)))
    extra = ()
    if kernel._adjoint_params() > 2 * len(args):
        # the returned numbers' gradients (at most 16 numbers are returned),
        # then the numbers the forward returned (NaN: not known)
        s = _np.zeros(2 * _RETURN_VALUES)
        s[_RETURN_VALUES:] = _np.nan
        if seed is not None:
            v = _numbers(seed)
            s[:len(v)] = v
        if returned is not None:
            v = _numbers(returned)
            s[_RETURN_VALUES:_RETURN_VALUES + len(v)] = v
        elif s[:_RETURN_VALUES].any() and _returns_extreme(kernel):
            raise ValueError("kernel '%s' returns a min or max reduction: its backward sends the "
                             "gradient to the element that attained it, so it needs the value the "
                             "forward returned: adj={'return': g, 'returned': value} (a tack.Tape "
                             "passes it)" % kernel.__name__)
        extra = (_tack.array(s, device=dev) if dev is not None else s,)
    elif seed is not None or returned is not None:
        raise ValueError("kernel.backward: adj gives 'return' but the kernel returns nothing")
    kernel._adjoint(*args, *grads, *extra)
    for a, g in scalars:
        a.grad += float(_np.asarray(g.numpy() if isinstance(g, _tack.Array) else g)[0])


# ---- kernels that return an expression of their sums (`return s / n`) ----
#
# The compiler differentiates a launch whose returned values are its
# reductions.  `return s / n` (or `mean = s / n` then `return mean`) adds a
# stage after the loop, which it does not differentiate; when every
# returned value is affine in the reductions (sums, differences, products
# and quotients by numbers the call fixes: scalar arguments, shapes,
# literals, module constants), its adjoint is the adjoint of the same
# kernel returning the reductions themselves, seeded with the chain rule's
# constant coefficients.  A value not affine in them (s * s, math.sqrt(s),
# s / t) is refused: it would need the forward's sums.

class _NotAffine(Exception):
    pass


class _Affine:
    """value (None where it depends on a reduction) + sum(coef[r] * r)."""

    def __init__(self, value=None, coef=None):
        self.value, self.coef = value, coef or {}

    def number(self, what):
        if self.coef or self.value is None:
            raise _NotAffine(what)
        return self.value


def _affine_add(a, b, sign):
    coef = dict(a.coef)
    for r, c in b.coef.items():
        coef[r] = coef.get(r, 0.0) + sign * c
    value = None if a.value is None or b.value is None else a.value + sign * b.value
    return _Affine(value, coef)


def _affine_scale(a, k):
    return _Affine(None if a.value is None else a.value * k, {r: c * k for r, c in a.coef.items()})


class _EpilogueReader:
    """Reads a returned expression as an _Affine of the reductions."""

    def __init__(self, func, params, args, reductions, definitions):
        self.func, self.params, self.args = func, params, args
        self.reductions, self.definitions = reductions, definitions
        self.busy = set()

    def read(self, e):
        if isinstance(e, _ast.Constant) and type(e.value) in (int, float, bool):
            return _Affine(float(e.value))
        if isinstance(e, _ast.Name):
            return self.name(e.id)
        if isinstance(e, _ast.UnaryOp) and isinstance(e.op, (_ast.USub, _ast.UAdd)):
            return _affine_scale(self.read(e.operand), -1.0 if isinstance(e.op, _ast.USub) else 1.0)
        if isinstance(e, _ast.BinOp):
            a, b = self.read(e.left), self.read(e.right)
            if isinstance(e.op, (_ast.Add, _ast.Sub)):
                return _affine_add(a, b, 1.0 if isinstance(e.op, _ast.Add) else -1.0)
            if isinstance(e.op, _ast.Mult):
                if a.coef and b.coef:
                    raise _NotAffine("a product of two sums")
                return _affine_scale(b, a.number("a product of two sums")) if not a.coef \
                    else _affine_scale(a, b.number("a product of two sums"))
            if isinstance(e.op, _ast.Div):
                with _np.errstate(divide="ignore"):  # s / 0 is inf, as the forward's
                    return _affine_scale(a, float(_np.float64(1.0) / b.number("a division by a sum")))
            if isinstance(e.op, _ast.Pow):
                return _Affine(a.number("a power of a sum") ** b.number("a power of a sum"))
            raise _NotAffine("the operator %s" % type(e.op).__name__)
        if isinstance(e, _ast.Call) and not e.keywords:
            f = e.func
            name = f.id if isinstance(f, _ast.Name) else None
            if name == "float" and len(e.args) == 1:
                return self.read(e.args[0])
            if name == "len" and len(e.args) == 1 and isinstance(e.args[0], _ast.Name):
                return _Affine(float(len(self.array(e.args[0].id))))
            target = self.constant(f)
            if callable(target):
                return _Affine(float(target(*[self.read(a).number(
                    "%s of a sum" % _ast.unparse(f)) for a in e.args])))
        if isinstance(e, _ast.Subscript) and isinstance(e.value, _ast.Attribute) and \
                e.value.attr == "shape" and isinstance(e.value.value, _ast.Name):
            d = self.read(e.slice).number("a shape index that is not a number")
            return _Affine(float(self.array(e.value.value.id).shape[int(d)]))
        if isinstance(e, _ast.Attribute) and e.attr == "size" and isinstance(e.value, _ast.Name) \
                and e.value.id in self.params:
            return _Affine(float(self.array(e.value.id).size))
        value = self.constant(e)
        if type(value) in (int, float):
            return _Affine(float(value))
        raise _NotAffine("'%s' is not a number the call fixes" % _ast.unparse(e))

    def name(self, n):
        if n in self.reductions:
            return _Affine(None, {n: 1.0})
        if n in self.definitions and self.definitions[n] is None:
            raise _NotAffine("'%s' is a vector, matrix or complex sum" % n)
        if n in self.definitions and n not in self.busy:
            self.busy.add(n)
            try:
                return self.read(self.definitions[n])
            finally:
                self.busy.discard(n)
        if n in self.params:
            v = self.args[self.params.index(n)]
            if isinstance(v, Scalar) and v.requires_grad:
                raise _NotAffine("'%s' is a tack.Scalar with a gradient, which the returned "
                                 "value's own arithmetic would add to" % n)
            if type(v) in (int, float, bool) or isinstance(v, (Scalar, _np.number)):
                return _Affine(float(v))
            raise _NotAffine("'%s' is not a number" % n)
        value = self.func.__globals__.get(n)
        if type(value) in (int, float):
            return _Affine(float(value))
        raise _NotAffine("'%s' is not a number the call fixes" % n)

    def array(self, n):
        if n not in self.params:
            raise _NotAffine("'%s' is not a parameter" % n)
        return self.args[self.params.index(n)]

    def constant(self, e):
        """A module-level number, or a function of math or a NumPy ufunc
        (math.pi, np.sqrt), as the kernel's globals name it; else None."""
        path = []
        while isinstance(e, _ast.Attribute):
            path.append(e.attr)
            e = e.value
        if not isinstance(e, _ast.Name) or e.id in self.params or e.id in self.reductions or \
                e.id in self.definitions:
            return None
        value = self.func.__globals__.get(e.id)
        for attr in reversed(path):
            value = getattr(value, attr, None)
        if type(value) in (int, float) or isinstance(value, _np.ufunc) or \
                (callable(value) and getattr(_math, getattr(value, "__name__", ""), None) is value):
            return value
        return None


_epilogues = {}


def _epilogue(kernel):
    """(raw kernel, the sums' names, the returned expressions, the names
    assigned around the loop and their values, the line before the text's
    first) when `kernel` returns an expression of its sums after one loop,
    else None."""
    func = getattr(kernel, "func", None)
    if func is None:
        return None
    if func in _epilogues:
        return _epilogues[func]
    found = None
    try:
        text = getattr(func, "__tack_source__", None)
        # the line of the text's first line in the messages' numbering
        first = 1 if text else func.__code__.co_firstlineno
        text = _textwrap.dedent(text or _inspect.getsource(func))
        tree = _ast.parse(text)
        defs = [d for d in _ast.walk(tree) if isinstance(d, _ast.FunctionDef) and
                d.name == func.__name__]
        found = _epilogue_of(func, text, first, defs[0]) if len(defs) == 1 else None
    except (OSError, TypeError, SyntaxError):
        found = None
    _epilogues[func] = found
    return found


def _epilogue_of(func, text, first, fdef):
    body = fdef.body
    loops = [k for k, st in enumerate(body) if isinstance(st, _ast.For)]
    if len(loops) != 1 or not isinstance(body[-1], _ast.Return) or body[-1].value is None:
        return None
    before, after = body[:loops[0]], body[loops[0] + 1:-1]
    # names assigned in the loop: those assigned a number before it are the
    # scalar sums; others assigned before it are vector, matrix or complex
    # sums (c = tack.vec3d(), z = 0j), marked None
    updated = {t.id for node in _ast.walk(body[loops[0]])
               for t in (node.targets if isinstance(node, _ast.Assign) else
                         [node.target] if isinstance(node, _ast.AugAssign) else [])
               if isinstance(t, _ast.Name)}
    reductions, definitions = set(), {}
    for st in before:
        if isinstance(st, _ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], _ast.Name):
            name = st.targets[0].id
            if name in updated and _is_number(st.value):
                reductions.add(name)
            else:  # n = x.shape[0], eps = 1e-3
                definitions[name] = None if name in updated else st.value
    for st in after:
        if not (isinstance(st, _ast.Assign) and len(st.targets) == 1 and
                isinstance(st.targets[0], _ast.Name)):
            return None  # a statement with effects after the loop: a stage of its own
        definitions[st.targets[0].id] = st.value
    ret = body[-1]
    values = list(ret.value.elts) if isinstance(ret.value, _ast.Tuple) else [ret.value]
    if all(isinstance(v, _ast.Name) and (v.id in reductions or (
            v.id in definitions and definitions[v.id] is None)) for v in values):
        return None  # the compiler differentiates this one itself
    used, pending, seen = [], list(values), set()
    while pending:  # the reductions the values name, through the definitions
        for node in _ast.walk(pending.pop(0)):
            if not isinstance(node, _ast.Name) or node.id in seen:
                continue
            seen.add(node.id)
            if node.id in reductions:
                used.append(node.id)
            elif definitions.get(node.id) is not None:
                pending.append(definitions[node.id])
    if not used:
        return None, used, values, definitions, first - 1  # refused in _epilogue_seed
    # The same text with `return r1, r2`: lines keep their numbers, so the
    # raw kernel's messages name the kernel's own lines.
    lines = text.splitlines(True)
    v = ret.value
    top, bottom = v.lineno - 1, v.end_lineno - 1
    head = lines[top].encode()[:v.col_offset].decode()  # ast's offsets count UTF-8 bytes
    tail = lines[bottom].encode()[v.end_col_offset:].decode()
    raw_lines = lines[:top] + [head + ", ".join(used) + tail] + \
        ["\n"] * (bottom - top) + lines[bottom + 1:]
    raw_text = "\n" * (first - 1) + "".join(raw_lines)
    # a copy of the function: source= is kept on the function it is given
    copy = _types.FunctionType(func.__code__, func.__globals__, func.__name__,
                               func.__defaults__, func.__closure__)
    copy.__qualname__ = func.__qualname__
    raw = _tack.kernel(copy, source=raw_text)
    return raw, used, values, definitions, first - 1


def _is_number(e):
    if isinstance(e, _ast.UnaryOp) and isinstance(e.op, _ast.USub):
        e = e.operand
    return isinstance(e, _ast.Constant) and type(e.value) in (int, float)


def _epilogue_seed(kernel, epilogue, args, seed):
    """The raw kernel's return seeds: seed_r = sum_j seed_j * d value_j / d r."""
    raw, used, values, definitions, line0 = epilogue
    code = kernel.func.__code__
    params = list(code.co_varnames[:code.co_argcount])
    reader = _EpilogueReader(kernel.func, params, args, set(used), definitions)
    seeds = list(seed) if seed is not None else []
    if len(seeds) > len(values):
        raise ValueError("kernel '%s': adj['return'] gives %d numbers for %d returned values"
                         % (kernel.__name__, len(seeds), len(values)))
    out = {r: 0.0 for r in used}
    for j, v in enumerate(values):
        try:
            form = reader.read(v)
        except _NotAffine as why:
            raise _tack.CompileError(
                "kernel '%s', line %d: backward of this returned value: %s; the backward of a "
                "returned expression takes sums added, subtracted, and multiplied or divided by "
                "numbers the call fixes (arguments, shapes, constants); return the sums "
                "(return s, t) and finish on the host"
                % (kernel.__name__, line0 + v.lineno, why))
        g = seeds[j] if j < len(seeds) else 0.0
        for r, c in form.coef.items():
            out[r] += g * c
    if not used:
        raise _tack.CompileError("kernel '%s', line %d: its returned values name no scalar sum, so "
                                 "nothing flows back through them" % (kernel.__name__,
                                                                     line0 + values[0].lineno))
    return [out[r] for r in used]


class Tape:
    """Records kernel launches made inside ``with tape:`` with their
    arguments; ``backward`` runs their adjoints newest first."""

    def __init__(self):
        self.launches = []
        self._returned = []  # per launch: the numbers it returned, or None
        self._outer = None

    def __enter__(self):
        self._outer = _active[0]
        _active[0] = self
        _tack._set_tape(self)
        return self

    def __exit__(self, *exc):
        _active[0] = self._outer
        _tack._set_tape(self._outer)
        self._outer = None
        return False

    def _record(self, kernel, args, result=None):
        self.launches.append((kernel, args, {}))
        n = len(self.launches) - 1
        values = result if isinstance(result, tuple) else (result,)
        if not values or not all(type(v) in (float, complex) or
                                 (type(v) is _np.ndarray and v.dtype.kind == "f") for v in values):
            self._returned.append(None)
            return result
        # each value seeds its own numbers of return.grad, from `first` on
        wrapped, first = [], 0
        for v in values:
            if type(v) is float:
                w = Returned(v, self, n, first)
            elif type(v) is complex:
                w = ReturnedComplex(v, self, n, first)
            else:
                w = v.view(ReturnedArray)
                w._tape, w._launch, w._number = self, n, first
            wrapped.append(w)
            first += len(_numbers(v))
        self._returned.append(tuple(_numbers(list(values))))
        return tuple(wrapped) if isinstance(result, tuple) else wrapped[0]

    def backward(self, loss=None, grads=None):
        """Seeds ``loss.grad`` (its first element 1, the rest 0), or each
        ``grads={array: g}`` into ``array.grad``, then runs every recorded
        launch's adjoint, newest first.  Values kernels returned on the tape
        are seeds too: ``loss`` a returned float, or ``grads={value: g}``
        with g a float, a complex (d/d real + 1j d/d imaginary) or an
        array of a returned vector's or matrix's shape."""
        if loss is None and not grads:
            raise ValueError("Tape.backward: give loss or grads={array: gradient}")
        if grads is not None and not isinstance(grads, dict):
            raise TypeError("Tape.backward: grads is a dict {array: gradient}, not %s"
                            % type(grads).__name__)
        for a in ([loss] if loss is not None else []) + list(grads or ()):
            if not (isinstance(a, _tack.Array) or _is_returned(a)):
                raise TypeError("Tape.backward: the loss and the keys of grads are tack arrays "
                                "made with requires_grad=True or values a kernel returned on "
                                "the tape, not %s" % type(a).__name__)
        for _, _, seeds in self.launches:
            seeds.clear()
        grads = dict(grads or {})
        if isinstance(loss, Returned):
            grads[loss] = 1.0
            loss = None
        elif loss is not None and _is_returned(loss):
            raise ValueError("Tape.backward: a returned vector, matrix or complex number is not a "
                             "loss (one number); seed it with grads={value: gradient}")
        for r in [k for k in grads if _is_returned(k)]:
            if r._tape is None:
                raise ValueError("Tape.backward: an array computed from a returned value, not the "
                                 "value a kernel returned")
            if r._tape is not self:
                raise ValueError("Tape.backward: a returned value from another tape")
            g = grads.pop(r)
            if isinstance(r, ReturnedArray) and _np.shape(g) != r.shape:
                raise ValueError("Tape.backward: the gradient of a returned %s array has its shape, "
                                 "not %s" % (r.shape, _np.shape(g)))
            if isinstance(r, Returned) and isinstance(g, complex):
                raise ValueError("Tape.backward: the gradient of a returned float is a float")
            seeds = self.launches[r._launch][2]
            for k, x in enumerate(_numbers(complex(g) if isinstance(r, ReturnedComplex) else g)):
                seeds[r._number + k] = seeds.get(r._number + k, 0.0) + x
        if loss is not None:
            if loss.grad is None:
                raise ValueError("Tape.backward: loss has no gradient (make it with requires_grad=True)")
            seed = _np.zeros(loss.grad.numpy().shape, dtype=loss.grad.numpy().dtype)
            seed.reshape(-1)[0] = 1
            _tack.copyto(loss.grad, seed)
        for a, g in grads.items():
            if a.grad is None:
                raise ValueError("Tape.backward: an array in grads has no gradient (requires_grad=True)")
            _tack.copyto(a.grad, _np.asarray(g.numpy() if isinstance(g, _tack.Array) else g,
                                             dtype=a.grad.numpy().dtype))
        was = _active[0]
        _tack._set_tape(None)  # the adjoints are not recorded
        try:
            for n in range(len(self.launches) - 1, -1, -1):
                kernel, args, seeds = self.launches[n]
                seed = [seeds.get(j, 0.0) for j in range(max(seeds) + 1)] if seeds else None
                value = self._returned[n] if n < len(self._returned) else None
                kw = {"adj": {"return": seed, "returned": value}} if seed else {}
                kernel_backward(kernel, *args, **kw)
        finally:
            _tack._set_tape(was)

    def zero(self):
        """Every gradient the recorded launches' arrays have back to 0."""
        seen = set()
        for _, args, _ in self.launches:
            for a in args:
                if isinstance(a, _tack.Array) and a.grad is not None and id(a) not in seen:
                    seen.add(id(a))
                    _fill(a.grad, 0)
                elif isinstance(a, Scalar):
                    a.grad = 0.0

    def reset(self):
        """Forgets the recorded launches."""
        self.launches = []
        self._returned = []


_active = [None]
