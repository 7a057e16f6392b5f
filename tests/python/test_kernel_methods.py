"""Kernels as methods of a @tack.device_class (issue 19, item 8): through
an instance the kernel binds it, as Taichi's data-oriented classes do;
the instance is the kernel's template argument (its arrays and scalars
as for any template), so new values reuse the variant."""
import numpy as np
import pytest

import tack

pytestmark = pytest.mark.every_device


@tack.device_class
class Particles:
    drag = 0.5                      # a class constant, baked in

    def __init__(self, pos, vel, dt):
        self.pos = pos
        self.vel = vel
        self.dt = dt

    @tack.func
    def speed(self, i):
        return self.vel[i] * (1.0 - self.drag)

    @tack.kernel
    def advance(self):
        for i in range(self.pos.shape[0]):
            self.pos[i] += self.speed(i) * self.dt

    @tack.kernel
    def kinetic(self, out):
        for i in range(self.vel.shape[0]):
            out[i] = 0.5 * self.vel[i] * self.vel[i]


class Plain:
    @tack.kernel
    def fill(out, v):
        for i in range(out.shape[0]):
            out[i] = v


def test_kernel_method_binds_its_instance(device):
    pos = tack.array(np.zeros(6), device=device)
    vel = tack.array(np.arange(6.0), device=device)
    p = Particles(pos, vel, 0.1)
    p.advance()
    p.advance()
    np.testing.assert_allclose(pos.numpy(), 2 * np.arange(6.0) * 0.5 * 0.1, rtol=1e-15)
    out = tack.zeros((6,), dtype=tack.f64, device=device)
    p.kinetic(out)
    np.testing.assert_array_equal(out.numpy(), 0.5 * np.arange(6.0) ** 2)
    # the class's own attribute is the kernel, callable with the instance
    Particles.advance(p)
    np.testing.assert_allclose(pos.numpy(), 3 * np.arange(6.0) * 0.05, rtol=1e-15)


def test_new_instance_values_reuse_the_variant(device):
    # Template arrays key their shape (docs/language.md); the scalar dt
    # and the arrays' contents do not.
    vel = tack.array(np.ones(5), device=device)
    counts = []
    for dt in (0.1, 0.2, 0.3):
        pos = tack.array(np.zeros(5), device=device)
        Particles(pos, vel, dt).advance()
        np.testing.assert_allclose(pos.numpy(), dt * 0.5, rtol=1e-15)
        counts.append(len(Particles.advance.variants(device=device)))
    assert counts[0] == counts[1] == counts[2], counts


def test_kernels_on_other_classes_stay_plain_functions(device):
    # Through an instance of a class that is no device_class, the kernel is
    # the kernel itself (nothing is bound), as before.
    assert Plain().fill is Plain.fill
    out = tack.zeros((3,), device=device)
    Plain().fill(out, 2.0)
    np.testing.assert_array_equal(out.numpy(), 2.0)
