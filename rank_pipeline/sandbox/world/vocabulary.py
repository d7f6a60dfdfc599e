"""The word lists the world draws from: keyword words, churn topics, competitor names, tags, top-level
domains, locales and search engines with their weights, and the weighted draw.

Changing any list or its order changes every world of every seed (the draws are positional).
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence

__all__ = [
    "ADJECTIVES", "CHURN_TOPICS", "COMPETITORS", "ENGINES", "LOCALES", "NOUNS", "NYC_CODE", "SUFFIXES",
    "TAGS", "TLDS", "weighted",
]

ADJECTIVES = (
    "best", "cheap", "organic", "wireless", "waterproof", "vintage", "electric", "kids", "mens", "womens",
    "lightweight", "portable", "smart", "eco", "handmade", "premium", "discount", "used", "custom", "mini",
    "large", "outdoor", "indoor", "professional", "budget", "luxury", "compact", "quiet", "fast", "durable",
)
NOUNS = (
    "running shoes", "coffee maker", "headphones", "backpack", "desk chair", "yoga mat", "water bottle",
    "rain jacket", "standing desk", "bike helmet", "air fryer", "phone case", "sunglasses", "tent",
    "sleeping bag", "blender", "vacuum cleaner", "office lamp", "kettle", "watch", "sneakers", "laptop bag",
    "espresso machine", "hiking boots", "winter coat", "dog bed", "garden hose", "toaster", "mattress",
    "notebook", "bookshelf", "pillow", "rug", "bluetooth speaker", "tablet stand", "keyboard", "monitor",
    "mouse pad", "wallet", "umbrella",
)
SUFFIXES = ("", "", "", " online", " near me", " reviews", " sale", " 2026", " deals", " for sale")
# churn keywords (short-lived) carry one of these topics, so they never repeat a base combination
CHURN_TOPICS = ("gift ideas", "how to choose", "comparison", "black friday", "trends", "vs", "guide", "tips")
COMPETITORS = (
    "rivalgoods", "shopzilla", "bestbuyz", "megamart", "trendhub", "dealfinder", "outfitco", "gearpoint",
    "homeessentials", "urbanstore", "pricewise", "buyrite", "nordshop", "zenmarket", "brightcart",
)
TAGS = (
    ("brand", "#e4572e"), ("non-brand", "#29335c"), ("product", "#f3a712"), ("blog", "#a8c686"),
    ("local", "#669bbc"), ("high-intent", "#8e44ad"), ("seasonal", "#16a085"), ("competitor-gap", "#c0392b"),
)
TLDS = ("com", "co.uk", "de", "fr", "io", "net")

# (location key, language code, weight): "US" etc. resolve to the engine's country row; "NYC" is the
# city row New York City (geo-target id 6128581 in the catalogues)
LOCALES = (("US", "en", 34), ("US", "es", 6), ("GB", "en", 20), ("DE", "de", 15), ("FR", "fr", 15), ("NYC", "en", 10))
NYC_CODE = "6128581"
ENGINES = (("google", 60), ("bing", 25), ("yahoo", 15))


_CUMULATIVE: dict[int, tuple[list[float], float]] = {}


def weighted(rng: random.Random, options: Sequence[tuple]) -> tuple:
    """One of ``options`` (tuples whose last item is a weight), drawn with one ``rng.random()``."""
    cached = _CUMULATIVE.get(id(options))
    if cached is None:
        cumulative, total = [], 0.0
        for o in options:
            total += o[-1]
            cumulative.append(total)
        cached = _CUMULATIVE[id(options)] = (cumulative, total)
    cumulative, total = cached
    return options[min(bisect.bisect_right(cumulative, rng.random() * total), len(options) - 1)]
