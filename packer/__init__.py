"""Policy: what goes into a context pack.

The Python API (`packer.packing`): ``make_pack`` builds a project's packs as ``cas pack`` does,
``verify_manifest`` checks one as ``cas verify`` does, and ``PackScope`` gives a scope in Python
rather than in cas.toml. ``python -m packer`` is ``cas pack``. They are loaded when first asked
for: importing one of the packer's modules does not import the pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packer.packing import PackScope, make_pack, verify_manifest

__all__ = ["PackScope", "make_pack", "verify_manifest"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from packer import packing

        return getattr(packing, name)
    raise AttributeError(f"module 'packer' has no attribute {name!r}")
