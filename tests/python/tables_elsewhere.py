"""Tables defined in another module, for test_tables.py: one imported by
name into the kernel's module, one read by a device function of this
module (resolved in this module's globals)."""
import tack

KNIGHT = ((1, 2), (2, 1), (-1, 2), (-2, 1), (1, -2), (2, -1), (-1, -2), (-2, -1))
SCALES = (0.5, 2.0, -3.0)


@tack.func
def scaled(v, k):
    return v * SCALES[k]
