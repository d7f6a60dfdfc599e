"""The sandbox's seeded world: accounts, domains, keywords, competitors, tags, usage and positions.

Everything here is ground truth that the marts are tested against. The world is a pure function of
``(WorldConfig, day)`` plus the writes made through it at runtime (:meth:`World.create_keywords`,
:meth:`World.delete_keyword`); two ``World`` objects built from the same config answer the same.
Records are JSON:API dicts exactly as served (shapes in :mod:`rank_pipeline.sandbox.assumptions`).

Time
----
``day`` is a UTC calendar date. ``t = (day - config.start_date).days`` is the day index used by every
formula below. :attr:`World.today` is the simulated "today" (default: the real UTC date), settable
with :meth:`World.set_today` (the control endpoint ``PUT /_sandbox/today``).

Accounts and plans
------------------
One :class:`Account` per :class:`AccountSpec`. The demo world (``WorldConfig()``) has three:
``acme`` and ``globex`` with API access and ``initech`` whose plan lacks it (its requests get 403).
``globex`` has a *limit change*: its plan limits rise on ``start_date + 10`` days. API keys are
derived from the seed (32 hex characters) unless the spec gives one.

Domains
-------
``AccountSpec.domains`` domains per account, existing on every day. Attributes are the spec's:
``domain``, ``host`` (``www.`` + domain), ``matchType`` (from ``assumptions.MATCH_TYPES``),
``projectName``. Listed in a fixed order (creation order).

Keywords
--------
Each domain has ``n`` *base* keywords (``n`` drawn per domain from ``AccountSpec.keywords_per_domain``),
generated lazily from a per-domain seeded RNG the first time the domain is needed, then cached:

* combination: word, engine (google 60 %, bing 25 %, yahoo 15 %), device (desktop/mobile),
  location (country rows US 2840, GB 2826, DE 2276, FR 2250 and the city row New York City 6128581,
  taken from :mod:`~rank_pipeline.sandbox.catalogues`), language (en; es for some US rows; de; fr).
  The combination (word, engine, device, location code, language code) is unique on a domain.
* ``createdAt``: 75 % of base keywords are created in the 365 days before ``start_date``, 25 % in the
  365 days from it. A keyword exists from its creation day on.
* deletion: 8 % of base keywords are deleted 30..700 days after creation; from that day on they no
  longer exist (they leave the list, their position is None).
* *churn* keywords: besides the base set, each domain creates one short-lived keyword about every
  ``CHURN_SPACING_DAYS`` days, for ever (before and after ``start_date``), each living 3..30 days.
  So the keyword count of a domain changes on most days, on any date, with O(1) work per day.
* runtime keywords: created by :meth:`World.create_keywords` (keyword create) and by the
  shifting-records fault; they exist from the simulated day they were created on.

The keyword list of a domain is ordered by (keyword text, engine, device, location code, language
code, id), so a keyword inserted between page requests moves the later records to later pages.

Positions (``World.position(keyword_id, day)``): 1..100, or None when the keyword does not rank in
the top 100 or does not exist on ``day``. A pure O(1) function of (seed, keyword, day)::

    level(t) = base                                  (most keywords, base 1..130, skewed to the top)
             | out -> in after pivot (ramp of 14 days)   "entering" keywords (7 %)
             | in -> out after pivot (ramp of 14 days)   "dropping" keywords (7 %)
    raw(t)   = level(t) + amp * sin(2 pi (t + phase) / period) + noise(t)
    noise(t) = integer in -2..2 from a hash of (seed, keyword, t)
    position = max(1, round(raw)); None if position > 100

Keywords whose base lies near 100 enter and leave the top 100 from day to day; "entering" and
"dropping" keywords cross it once, on their pivot day (t in 0..365 for base keywords).

Ranking URL (``World.ranking_url(keyword_id, day)``): None exactly when the position is None, else
one of: the keyword's single URL (80 %); the homepage ``https://<host>/`` (8 %, shared by many
keywords); two URLs that flip by a hash of (keyword, day) (6 %, *cannibalisation*); a URL that
changes once, on a hashed day (6 %). Keyword records show ``results.organic.position`` and ``url``
of the day asked for, ``capturedAt`` at 06:00 UTC that day (regardless of ``frequency``).

Competitors
-----------
2-4 *base* competitors per domain exist from before ``start_date``; one more is added on day index
``t_add`` in 1..60 (so the set grows on that day), and on half the domains one base competitor is
removed on day index 61..180. Ordered by creation, then id.

Tags
----
3-6 account-level tags, all created before ``start_date``; every keyword carries 0-2 ``tagIds`` of
its account's tags.

Usage (``World.usage(account_id, day)``, the ``data`` of GET /v1/account/usage)
-------------------------------------------------------------------------------
* ``keywords.usage`` = number of the account's keywords existing on ``day``;
* ``dataRows.usage`` = the sum of the daily keyword counts from the first day of ``day``'s cycle to
  ``day`` inclusive (keyword-days), so it drops back when a cycle starts (a *usage reset*): on the 1st of
  each month, or on the days ``AccountSpec.data_row_resets`` lists (irregular, changed or never-seen
  cycles; before the first of them the cycle runs from ``start_date``); :meth:`World.data_row_cycle_start`
  tells the cycle's first day;
* ``limit`` = the plan's limit on that day (an :class:`LimitChange` switches it from its day on);
* ``remaining`` = ``max(0, limit - usage)``; ``apiEnabled`` = the plan's API access.

Keyword create (:meth:`World.create_keywords`) checks one keyword and one data row per new
combination against ``usage(account_id, today)``; over quota it raises :class:`QuotaExceeded` and
creates nothing. Combinations the domain already tracks are returned as they are and cost nothing.

Identifiers are UUID strings (version 4 layout) whose low bits encode what they name, and whose high
bits are a hash of the seed: ids of another seed or random UUIDs name nothing here.

Modules
-------
:mod:`.config` (what a world is made of, the values it hands out), :mod:`.errors`, :mod:`.ids` (hashing
and identifiers), :mod:`.vocabulary` (word lists), :mod:`.state` (what exists and what was written),
:mod:`.generation` (accounts, domains, keywords, churn, competitors), :mod:`.queries` (which keywords
exist on a day), :mod:`.positions` (positions and ranking URLs), :mod:`.quota` (usage and the create's
allowance check), :mod:`.rendering` (JSON:API records), :mod:`.writes` (keyword create and the
shifting-records fault's writes), :mod:`.ground_truth` (:class:`World`, which holds the clock and the
keys and delegates the rest).
"""

from rank_pipeline.sandbox.world.config import Account, AccountSpec, KeywordSpec, LimitChange, WorldConfig
from rank_pipeline.sandbox.world.errors import QuotaExceeded, UnknownDomain
from rank_pipeline.sandbox.world.ground_truth import World
from rank_pipeline.sandbox.world.state import WriteEvent

__all__ = [
    "Account",
    "AccountSpec",
    "KeywordSpec",
    "LimitChange",
    "QuotaExceeded",
    "UnknownDomain",
    "World",
    "WriteEvent",
    "WorldConfig",
]
