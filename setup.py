"""Builds libtack with CMake, then the extension tack._tack linked against
its static archive and LLVM (the flags CMake wrote to build/link_flags.txt).

TACK_BUILD_DIR names another CMake build directory (default build/).  The
extension is compiled with the flags that directory's library was built with
(its ext_flags.txt: the sanitizers when TACK_SANITIZE=ON), and setuptools
keeps its own products there too, so an instrumented and a plain build never
share an object file."""
import glob
import os
import shlex
import subprocess

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("TACK_BUILD_DIR") or os.path.join(ROOT, "build"))


class CMakeBuildExt(build_ext):
    def run(self):
        if not os.path.exists(os.path.join(BUILD, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", BUILD, "-G", "Ninja",
                                   "-DCMAKE_BUILD_TYPE=Release"])
        subprocess.check_call(["cmake", "--build", BUILD, "--target", "tack_static"])
        with open(os.path.join(BUILD, "link_flags.txt")) as f:
            llvm_flags = shlex.split(f.read())
        with open(os.path.join(BUILD, "ext_flags.txt")) as f:
            ext_flags = shlex.split(f.read())
        for ext in self.extensions:
            ext.extra_objects = [os.path.join(BUILD, "libtack_static.a")]
            # Relink whenever the library changed, not only the extension's sources.
            ext.depends = list(ext.depends) + ext.extra_objects
            ext.extra_compile_args = list(ext.extra_compile_args) + ext_flags
            ext.extra_link_args = llvm_flags + ext_flags + ["-lpthread", "-lm"]
        super().run()


ext_dir = os.path.join("python", "tack", "_ext")
setup(
    package_dir={"": "python"},
    packages=["tack"],
    include_package_data=False,  # the C sources stay out of the wheel
    package_data={"tack": ["py.typed", "_tack.pyi"]},
    ext_modules=[Extension(
        "tack._tack",
        sources=sorted(glob.glob(os.path.join(ext_dir, "*.c"))),
        depends=[os.path.join(ext_dir, "ext.h"), os.path.join("include", "tack.h")],
        include_dirs=[os.path.join(ROOT, "include"), numpy.get_include()],
        extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra"],
    )],
    cmdclass={"build_ext": CMakeBuildExt},
    options={"build": {"build_base": BUILD}},
)
