"""Build the optional C extensions ``kproto._speedups``, ``_entity_reader``,
``_entity_writer`` (see ``kproto.speedups``) and ``_avro`` (see ``kproto.avro``).

Everything else about the package is in pyproject.toml. The extension is optional:
without a C compiler (or with ``KPROTO_NO_EXTENSIONS=1`` set at build time) the build
prints one warning and installs the pure-Python package, which behaves the same.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that warns and goes on when the extension cannot be compiled."""

    def run(self) -> None:
        if os.environ.get("KPROTO_NO_EXTENSIONS"):
            self._warn("KPROTO_NO_EXTENSIONS is set")
            return
        try:
            super().run()
        except Exception as exc:  # no compiler at all (DistutilsPlatformError, ...)
            self._warn(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:  # CompileError, LinkError
            self._warn(exc)

    _warned = False

    def _warn(self, why: object) -> None:
        if self._warned:  # e.g. an editable install then fails to copy the missing .so
            return
        self._warned = True
        print(
            f"WARNING: kproto's C extension was not built ({why}); "
            "installing the pure-Python implementation, which is slower but the same.",
            file=sys.stderr,
        )


setup(
    ext_modules=[
        Extension(
            f"kproto.{name}",
            [f"src/kproto/{name}.c"],
            depends=[
                "src/kproto/_arrow_columns.h",
                "src/kproto/_entity_desc.h",
                "src/kproto/_entity_out.h",
                "src/kproto/_entity_wrapper.h",
                "src/kproto/_grow.h",
                "src/kproto/_record_sequence.h",
            ],
            extra_compile_args=["-O2"] if os.name != "nt" else [],
        )
        for name in ("_speedups", "_entity_reader", "_entity_writer", "_avro")
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
