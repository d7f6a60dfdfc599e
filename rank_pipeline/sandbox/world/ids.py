"""Seeded hashing and the world's identifiers: UUID strings (version 4 layout) whose low 64 bits hold the
variant, kind (6 bits), account (8), domain (16) and index (32); the high bits hash the seed and those, so
another seed's id or a random UUID parses to None.
"""

from __future__ import annotations

import hashlib
import uuid

__all__ = [
    "K_ACCOUNT", "K_BASE_KW", "K_CHURN_KW", "K_COMPETITOR", "K_DOMAIN", "K_RUNTIME_KW", "K_TAG",
    "hash64", "make_id", "parse_id",
]

# id kinds (6 bits in the UUID)
K_ACCOUNT, K_DOMAIN, K_BASE_KW, K_CHURN_KW, K_RUNTIME_KW, K_COMPETITOR, K_TAG = 1, 2, 3, 4, 5, 6, 7
_INDEX_OFFSET = 1 << 31  # churn indexes may be negative


def hash64(*parts: object) -> int:
    """A 64-bit unsigned hash of ``parts`` (their ``str``, joined by a unit separator); blake2b."""
    data = "\x1f".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def make_id(seed: int, kind: int, account: int, domain: int, index: int) -> str:
    """The id of the thing of ``kind`` at (``account``, ``domain``, ``index``) in the world of ``seed``."""
    stored = index + _INDEX_OFFSET
    h = hash64("id", seed, kind, account, domain, stored)
    high = ((h >> 16) << 16) | (0x4 << 12) | (h & 0x0FFF)  # 48 hash bits | version 4 | 12 hash bits
    low = (0b10 << 62) | (kind << 56) | (account << 48) | (domain << 32) | stored
    text = f"{(high << 64) | low:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def parse_id(seed: int, text: str) -> tuple[int, int, int, int] | None:
    """(kind, account, domain, index) of an id this world made, else None."""
    try:
        value = uuid.UUID(str(text)).int
    except (ValueError, TypeError, AttributeError):
        return None
    low = value & ((1 << 64) - 1)
    if low >> 62 != 0b10:
        return None
    kind, account, domain = (low >> 56) & 0x3F, (low >> 48) & 0xFF, (low >> 32) & 0xFFFF
    index = (low & 0xFFFFFFFF) - _INDEX_OFFSET
    if make_id(seed, kind, account, domain, index) != str(uuid.UUID(int=value)):
        return None
    return kind, account, domain, index
