"""The store's references: what keeps blobs alive besides the packs' manifests.

Pins (a name for a blob: `cas.roots` checks the names and lists them), the folders recorded as
holding root manifests (`cas.roots`), and the leases of packs in progress (`cas.lease`). A
`Store` has one `References` (``store.refs``); each call is its own transaction. Work that must
see them and delete blobs in one transaction (gc) reads them through `cas.store.Update`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from cas.digest import Digest

if TYPE_CHECKING:
    from cas.store_tables import Faces


class References:
    """Pins, recorded root folders and leases of one store (see the module docstring)."""

    __slots__ = ("_faces",)

    def __init__(self, faces: Faces) -> None:
        self._faces = faces

    # --- pins and recorded root folders (`cas.roots`) -------------------------------------------

    def pins(self) -> dict[str, Digest]:
        """Every pin: name -> digest (a record that does not hold a digest is left out)."""
        with self._faces.read() as t:
            return t.pins()

    def pin(self, name: str, digest: Digest) -> Digest | None:
        """Pin ``digest`` under ``name``; returns the digest it replaced. The blob must be
        present (`BlobNotFound`): checked in the transaction that pins, so a gc deleting it
        cannot slip in between."""
        return self._faces.change(lambda t: t.pin(name, digest))

    def swap_pin(self, name: str, expected: Digest | None, digest: Digest) -> bool:
        """Move pin ``name`` to ``digest`` only if it holds ``expected`` now (None: no such pin),
        in one transaction: two writers that read the same pin cannot both move it, so neither
        loses the other's change. False (nothing changed) when it holds anything else; the blob
        must be present (`BlobNotFound`)."""
        swapped: bool = self._faces.change(lambda t: t.swap_pin(name, expected, digest))
        return swapped

    def unpin(self, name: str) -> Digest | None:
        """Remove a pin; returns the digest it held, or None if there was no such pin."""
        old = self._faces.change(lambda t: t.unpin(name))
        return None if old is None else Digest(old)

    def recorded_dirs(self) -> list[str]:
        """The folders recorded as holding root manifests, besides the default one."""
        with self._faces.read() as t:
            return t.recorded_dirs()

    def record_dir(self, folder: str) -> bool:
        """Record a folder as holding root manifests; False if it was recorded already."""
        return self._faces.change(lambda t: t.edit_recorded_dirs(folder, add=True))

    def forget_dir(self, folder: str) -> bool:
        """Forget a recorded folder; False if it was not recorded (under exactly this name)."""
        return self._faces.change(lambda t: t.edit_recorded_dirs(folder, add=False))

    # --- leases (`cas.lease`) -------------------------------------------------------------------

    def leases(self) -> list[tuple[str, bytes]]:
        """Every lease: (id, its holder's record, as `cas.lease` encoded it)."""
        with self._faces.read() as t:
            return t.leases()

    def put_lease(self, lease_id: str, record: bytes) -> bool:
        """Write a lease's record; returns whether it was there before (a heartbeat that finds
        its lease gone learns that a gc judged it stale)."""
        return self._faces.change(lambda t: t.put_lease(lease_id, record))

    def delete_leases(self, lease_ids: Iterable[str]) -> int:
        """Delete these leases: a cleanup, which may use the reserve on a full disk (`_write`),
        so a pack that failed for a full disk still takes its lease back."""
        wanted = list(lease_ids)
        return self._faces.change(lambda t: t.delete_leases(wanted), cleanup=True)
