"""Arrays a kernel has without being passed them: the arrays it makes
before its launch, as Numba's functions do,

    @tack.kernel
    def double(x):
        n = x.shape[0]
        out = np.empty(n)              # np.zeros, ones, full, empty_like, ...
        for i in range(n):
            out[i] = 2.0 * x[i]
        return out                     # returned with the kernel's own values

The kernel's text is rewritten before it is compiled (plan): each such
assignment at the body's top level becomes a parameter of the same name
(its line a `pass`), and the names of those arrays leave the `return`.  A
call (call) evaluates each allocation in Python, NumPy's own call on the
call's arguments and the names assigned before the loops, so its shape and
dtype are NumPy's, then launches with the arrays (on the call's device)
and gives them back where the `return` named them.

The arrays its body reads from the module (or an enclosing function) by
name, as Numba's and Taichi's kernels read global arrays and fields, are
parameters too; a call passes each name's array at the time of the call."""
import ast as _ast

import numpy as _np

from . import _tack

_MAKERS = ("empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
           "full_like")


class Plan:
    """What plan() found: the function, its own parameters' count, the
    arrays it makes (name, source, code), the names assigned before the
    loops (name: source), where the `return` names the arrays, and the
    arrays it reads by name (name, index of its closure cell or None)."""

    def __init__(self, func, nvisible, allocs, prologue, layout, filename, outside):
        self.func, self.nvisible, self.layout, self.filename = func, nvisible, layout, filename
        self.outside = outside
        self.params = func.__code__.co_varnames[:nvisible]
        self.allocs = [(name, src, compile(src, filename, "eval")) for name, src in allocs]
        self.prologue = {name: compile(src, filename, "eval") for name, src in prologue.items()}

    def read(self, kernel):
        """The arrays the names the kernel reads hold now."""
        values = []
        for name, cell in self.outside:
            try:
                values.append(self.func.__closure__[cell].cell_contents if cell is not None
                              else self.func.__globals__[name])
            except (KeyError, ValueError):
                raise NameError("kernel '%s' reads the array '%s' by name, and '%s' is gone"
                                % (kernel.__name__, name, name)) from None
        return values

    def outside_values(self, kernel, args):
        """args of a kernel that makes no arrays, with those it reads put in."""
        return (*args[:self.nvisible], *self.read(kernel), *args[self.nvisible:])


def _is_maker(func, value):
    if not (isinstance(value, _ast.Call) and isinstance(value.func, _ast.Attribute) and
            value.func.attr in _MAKERS and isinstance(value.func.value, _ast.Name)):
        return False
    return func.__globals__.get(value.func.value.id) is _np


def _segment(lines, node):
    """node's text (ast's offsets count UTF-8 bytes)."""
    if node.lineno == node.end_lineno:
        return lines[node.lineno - 1].encode()[node.col_offset:node.end_col_offset].decode()
    first = lines[node.lineno - 1].encode()[node.col_offset:].decode()
    middle = lines[node.lineno:node.end_lineno - 1]
    last = lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode()
    return "\n".join([first, *middle, last])


def _replace(lines, node, text):
    """lines with node's text replaced by `text` (one line), the lines it
    spanned kept as blank lines so that every later line keeps its number."""
    head = lines[node.lineno - 1].encode()[:node.col_offset].decode()
    tail = lines[node.end_lineno - 1].encode()[node.end_col_offset:].decode()
    lines[node.lineno - 1] = head + text + tail
    for k in range(node.lineno, node.end_lineno):
        lines[k] = ""


def plan(func, text, filename):
    """(the text to compile, a Plan) when func's body makes arrays before its
    launch, else None."""
    try:
        tree = _ast.parse(text)
    except SyntaxError:
        return None  # the compiler says what is wrong
    defs = [d for d in tree.body if isinstance(d, _ast.FunctionDef)]
    if len(defs) != 1:
        return None
    fdef = defs[0]
    allocs = [st for st in fdef.body if isinstance(st, _ast.Assign) and len(st.targets) == 1 and
              isinstance(st.targets[0], _ast.Name) and _is_maker(func, st.value)]
    outside = _outside_arrays(func, {a.arg for a in fdef.args.posonlyargs + fdef.args.args} |
                              {st.targets[0].id for st in allocs})
    if (not allocs and not outside) or fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs:
        return None
    lines = text.split("\n")
    names = [st.targets[0].id for st in allocs]
    first_loop = next((k for k, st in enumerate(fdef.body) if isinstance(st, _ast.For)),
                      len(fdef.body))
    prologue = {}
    for st in fdef.body[:first_loop]:
        if not (isinstance(st, _ast.Assign) and len(st.targets) == 1):
            continue
        t = st.targets[0]
        if isinstance(t, _ast.Name) and t.id not in names:
            prologue[t.id] = _segment(lines, st.value)
        elif isinstance(t, _ast.Tuple) and all(isinstance(e, _ast.Name) for e in t.elts):
            # n, m = x.shape[0], x.shape[1]; n, m = x.shape
            same = isinstance(st.value, _ast.Tuple) and len(st.value.elts) == len(t.elts)
            for k, e in enumerate(t.elts):
                prologue[e.id] = (_segment(lines, st.value.elts[k]) if same else
                                  "(%s)[%d]" % (_segment(lines, st.value), k))
    allocated = [(st.targets[0].id, _segment(lines, st.value)) for st in allocs]
    edits = [(st, "pass") for st in allocs]
    # The return: the made arrays leave it, the kernel's own values stay.
    layout = None
    ret = fdef.body[-1]
    if isinstance(ret, _ast.Return) and ret.value is not None:
        values = ret.value.elts if isinstance(ret.value, _ast.Tuple) else [ret.value]
        made = [isinstance(v, _ast.Name) and v.id in names for v in values]
        if any(made):
            own = [_segment(lines, v) for v, m in zip(values, made) if not m]
            layout = (isinstance(ret.value, _ast.Tuple),
                      [("made", v.id) if m else ("own", None) for v, m in zip(values, made)],
                      len(own))
            edits.append((ret, "return " + ", ".join(own) if own else "return"))
    # last first, so that an edit never moves the text of one still to come
    for node, new_text in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
        _replace(lines, node, new_text)
    # The arrays become parameters after the function's own.
    args = fdef.args.posonlyargs + fdef.args.args
    extra = ", ".join(names + [name for name, _ in outside])
    if args:
        last = args[-1]
        line = lines[last.end_lineno - 1].encode()
        lines[last.end_lineno - 1] = (line[:last.end_col_offset].decode() + ", " + extra +
                                      line[last.end_col_offset:].decode())
    else:
        line = lines[fdef.lineno - 1]
        at = line.index("(", line.index("def"))
        lines[fdef.lineno - 1] = line[:at + 1] + extra + line[at + 1:]
    return "\n".join(lines), Plan(func, len(args), allocated, prologue, layout, filename, outside)


def _is_array(v):
    return isinstance(v, (_np.ndarray, _tack.Array))


def _outside_arrays(func, own):
    """(name, closure cell index or None) of each array func reads by name
    from its module or an enclosing function, now."""
    code, found = func.__code__, []
    for name in code.co_names:  # globals (and attribute names, which hold no array)
        if name not in own and _is_array(func.__globals__.get(name)):
            found.append((name, None))
    for k, name in enumerate(code.co_freevars):
        try:
            value = func.__closure__[k].cell_contents
        except ValueError:  # not assigned yet
            continue
        if name not in own and _is_array(value):
            found.append((name, k))
    return found


class _Names(dict):
    """The names an allocation reads: the call's arguments, then the names
    assigned before the loops, each evaluated (in Python) when first read."""

    def __init__(self, plan, bound):
        super().__init__(bound)
        self.plan, self.busy = plan, set()

    def __missing__(self, name):
        code = self.plan.prologue.get(name)
        if code is None or name in self.busy:
            raise KeyError(name)
        self.busy.add(name)
        try:
            value = eval(code, self.plan.func.__globals__, self)
        finally:
            self.busy.discard(name)
        self[name] = value
        return value


def _device_of(args):
    for a in args:
        if isinstance(a, _tack.Array) and a.device.name != "cpu":
            return a.device
    return None


def call(kernel, args, kwargs):
    """kernel(*args, **kwargs) of a kernel with a Plan: the arrays made, the
    launch, and the values its `return` names."""
    p = kernel._tack_allocations
    params = p.params
    visible = list(args[:p.nvisible])
    rest = list(args[p.nvisible:])  # a tack.tid() kernel's extents
    for name in params[len(visible):]:
        if name not in (kwargs or {}):
            raise TypeError("kernel '%s' missing required argument '%s'" % (kernel.__name__, name))
        visible.append(kwargs[name])
    unknown = set(kwargs or ()) - set(params)
    if unknown:
        raise TypeError("kernel '%s' got an unexpected keyword argument '%s'"
                        % (kernel.__name__, sorted(unknown)[0]))
    # NumPy's makers see a tack.Array as a NumPy array of its shape and
    # dtype (an untouched np.empty: no memory is written)
    names = _Names(p, {k: _np.empty(v.shape, v.dtype.numpy) if isinstance(v, _tack.Array) else v
                       for k, v in zip(params, visible)})
    dev = _device_of(visible)
    made = {}
    for name, src, code in p.allocs:
        try:
            a = eval(code, p.func.__globals__, names)
        except Exception as e:
            raise TypeError("kernel '%s': the array '%s' = %s is made before the launch, from the "
                            "arguments and the names assigned before the loops, and it failed: "
                            "%s: %s" % (kernel.__name__, name, src, type(e).__name__, e)) from e
        made[name] = _tack.array(a, device=dev) if dev is not None else a
        names[name] = made[name]
    result = kernel(*visible, *[made[n] for n, _, _ in p.allocs], *p.read(kernel), *rest)
    if p.layout is None:
        return result
    is_tuple, slots, nown = p.layout
    own = list(result) if nown > 1 else [result]
    out = [made[name] if kind == "made" else own.pop(0) for kind, name in slots]
    return tuple(out) if is_tuple else out[0]
