"""Reading a parent record only as far as its children's requests need (:attr:`Endpoint.reads`).

The lookups of a keyword (``GET /v1/locations?code=&search_engine=``, ``GET /v1/languages?search_engine=``)
depend on two of its fields; a day's keywords repeat a few engines and locations. :class:`ParentReads` decodes,
from a :class:`~rank_pipeline.api.listing.RawRecord`'s attributes, only the top-level members those fields'
paths start with (the contract's paths, through its ``named``), as bytes: a record whose bytes there were seen
before asks for requests already asked for, and is skipped; another is handed to the children with
``attributes`` holding those members alone (every path read starts with one of them, so each field reads as
in the whole record).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec.structs import astuple

from rank_pipeline.api.endpoints import Endpoint
from rank_pipeline.api.listing import RawRecord

__all__ = ["ParentReads"]

_JSON = msgspec.json.Decoder()
_ABSENT = msgspec.Raw(b"")
_key = b"\0".join
"""A record's key in ``ParentReads._seen``: its members' bytes (a tuple of ``msgspec.Raw``) joined by NUL. JSON
text never holds a NUL, so two records share a key exactly when their bytes are the same at every member (an
absent member is empty)."""


class ParentReads:
    """The top-level members of ``parent``'s attributes that ``children`` read, and the values seen.

    Build with :meth:`of`, which gives None when a child reads the whole record (``reads`` None) or the
    contract does not locate its fields by path.
    """

    def __init__(self, keys: Sequence[str]):
        self.keys = tuple(keys)
        names = [f"k{i}" for i in range(len(self.keys))]
        # an absent member reads as empty bytes (a present one is JSON, never empty); untracked by the garbage
        # collector, as RawRecord is
        struct = msgspec.defstruct("_Members", [(n, msgspec.Raw, _ABSENT) for n in names],
                                   rename=dict(zip(names, self.keys, strict=True)), gc=False)
        self._decoder = msgspec.json.Decoder(struct)
        self._page_decoder = msgspec.json.Decoder(list[struct])  # type: ignore[valid-type]
        self._seen: set[bytes] = set()

    @classmethod
    def of(cls, parent: str, children: Sequence[Endpoint], fields: Any) -> ParentReads | None:
        """For the records of ``parent`` (an endpoint name) whose ``children`` all declare ``reads``."""
        named = getattr(fields, "named", None)
        if not children or named is None or any(c.reads is None for c in children):
            return None
        keys: dict[str, None] = {}
        for child in children:
            for name in child.reads or ():
                steps = getattr(named(parent, name), "steps", None)
                if not steps:
                    return None
                keys[steps[0].key] = None
        return cls(list(keys))

    def new(self, record: RawRecord) -> dict | None:
        """``record`` as the children read it (its attributes cut to :attr:`keys`), or None when a record
        with the same bytes at those members came before (its requests are already asked for)."""
        try:
            members = self._decoder.decode(record.attributes)
        except msgspec.ValidationError:  # not an object: read whole, never skipped
            return {"id": record.id, "type": record.type, "attributes": _JSON.decode(record.attributes)}
        values = astuple(members)
        return self._unseen(record, values, _key(values))

    def new_page(self, records: Sequence[RawRecord]) -> list[dict]:
        """:meth:`new` of each of ``records`` (a page's ``RawRecord``s), in order, the records seen before left
        out: ``[{"id", "type", "attributes": {member: value}}]``. Their attributes are decoded in one call, or
        one by one when one of them is not an object (read whole, as :meth:`new` does). Raises nothing of its
        own: the attributes are JSON already checked by the page's decode (spec "Pagination")."""
        try:
            # a page's attributes as one JSON array: each is the vendor's JSON text, so the array is valid JSON
            members = self._page_decoder.decode(b"[" + b",".join([r.attributes for r in records]) + b"]")
        except msgspec.ValidationError:
            return [d for d in map(self.new, records) if d is not None]
        values = list(map(astuple, members))
        keys = list(map(_key, values))
        # each distinct key at its first record: zipped backwards, the first record's index is written last
        first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
        return [d for d in (self._unseen(records[i], values[i], keys[i]) for i in sorted(first.values()))
                if d is not None]

    def _unseen(self, record: RawRecord, values: tuple[msgspec.Raw, ...], key: bytes) -> dict | None:
        if key in self._seen:
            return None
        self._seen.add(key)
        attributes = {k: _JSON.decode(v) for k, v in zip(self.keys, values, strict=True) if v}
        return {"id": record.id, "type": record.type, "attributes": attributes}
