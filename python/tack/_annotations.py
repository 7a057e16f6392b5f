"""Warp's parameter annotations, accepted as written: ``def k(x:
tack.array(dtype=tack.vec3f), a: float)``.  Python evaluates a kernel's
annotations when the ``def`` runs, so ``tack.array(dtype=...)`` without data
(and ``tack.array2d(dtype=...)``, as Warp's ``wp.array2d``) must give a
value; it is this description, which Tack does not read: a kernel's types
come from each call's arguments (docs/variants.md)."""


class ArrayAnnotation:
    """The type ``tack.array(dtype=d, ndim=n)`` names in an annotation."""

    def __init__(self, dtype=None, ndim=1):
        if not isinstance(ndim, int) or not 1 <= ndim <= 4:
            raise ValueError("tack.array(dtype=..., ndim=n) in an annotation: ndim is 1 to 4, "
                             "not %r" % (ndim,))
        self.dtype, self.ndim = dtype, ndim

    def __repr__(self):
        name = getattr(self.dtype, "__name__", None) or str(self.dtype)
        return "tack.array(dtype=%s, ndim=%d)" % (name, self.ndim)

    def __eq__(self, other):
        return isinstance(other, ArrayAnnotation) and (self.dtype, self.ndim) == (other.dtype,
                                                                                 other.ndim)

    def __hash__(self):
        return hash((ArrayAnnotation, repr(self.dtype), self.ndim))


def _of_ndim(ndim):
    def annotation(dtype=None):
        return ArrayAnnotation(dtype, ndim)
    annotation.__name__ = annotation.__qualname__ = "array%dd" % ndim
    annotation.__doc__ = ("The annotation of a %d-D array, Warp's wp.array%dd(dtype=...): "
                          "``def k(x: tack.array%dd(dtype=tack.f32))``; Tack reads the types "
                          "from the arguments." % (ndim, ndim, ndim))
    return annotation


array1d, array2d, array3d, array4d = (_of_ndim(n) for n in range(1, 5))
