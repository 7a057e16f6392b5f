/*
 * generate.c - tack._tack._generate(kernel, target, args, binary=False): the
 * code of the variant `args` select, as text (str) or, with binary, as bytes
 * (tack_kernel_generate_binary), for tack.cuda.compile, tack.hip.compile,
 * tack.opencl.source and the like.  Arguments convert as for a call; arrays may be
 * NumPy arrays or any device's tack.Array (only dtype, shape and vector
 * width matter).  The GIL stays held: lowering may call the resolver.
 * adjoint=True (a fifth argument): the code of the kernel's adjoint, whose
 * args are the call's followed by one gradient per parameter. 
 */
#define NO_IMPORT_ARRAY
#include "ext.h"

PyObject *ext_generate(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 3 || nargs > 5 || !ext_Kernel_Check(args[0]) || !PyUnicode_Check(args[1]) ||
        !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "_generate(kernel, target, args, binary=False): a tack kernel, a target "
                        "string, a tuple of arguments and a flag");
        return NULL;
    }
    int binary = nargs == 4 ? PyObject_IsTrue(args[3]) : 0;
    if (binary < 0)
        return NULL;
    int adjoint = nargs == 5 ? PyObject_IsTrue(args[4]) : 0;
    if (adjoint < 0)
        return NULL;
    ext_KernelObject view = *(ext_KernelObject *)args[0], *kern = &view;
    if (adjoint) {
        tack_error aerr;
        memset(&aerr, 0, sizeof aerr);
        tack_kernel *adj = tack_kernel_adjoint(kern->k, &aerr);
        if (!adj)
            return ext_raise_kernel_error((ext_KernelObject *)args[0], aerr.status, &aerr);
        view.k = adj;
        view.nparams = tack_kernel_num_params(adj); /* 2n, and return.grad if it returns */
    }
    const char *target = PyUnicode_AsUTF8(args[1]);
    if (!target)
        return NULL;
    PyObject *call = args[2];
    Py_ssize_t n = PyTuple_GET_SIZE(call);
    if (n != kern->nparams) {
        PyErr_Format(PyExc_TypeError, "kernel '%U' takes %d argument%s but %zd %s given",
                     kern->name, kern->nparams, kern->nparams == 1 ? "" : "s", n,
                     n == 1 ? "was" : "were");
        return NULL;
    }
    tack_arg targs[TACK_MAX_PARAMS];
    ext_launch_state st;
    ext_launch_init(&st, kern);
    if (ext_convert_args(kern, &PyTuple_GET_ITEM(call, 0), n, targs, &st) < 0)
        return NULL;
    tack_error err;
    memset(&err, 0, sizeof err);
    void *out = NULL;
    size_t size = 0;
    tack_status s;
    if (binary)
        s = tack_kernel_generate_binary(kern->k, target, targs, (int)n, &out, &size, &err);
    else
        s = tack_kernel_generate(kern->k, target, targs, (int)n, (char **)&out, &err);
    ext_release_args(&st);
    if (s != TACK_OK)
        return ext_raise_kernel_error((ext_KernelObject *)args[0], s, &err);
    PyObject *r = binary ? PyBytes_FromStringAndSize(out, (Py_ssize_t)size)
                         : PyUnicode_FromString(out);
    free(out);
    return r;
}
