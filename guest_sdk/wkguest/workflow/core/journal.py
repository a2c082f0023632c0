"""The journal of one run: its recorded positions, decoded, kept while the instance is warm.

Each position is one entry of `_wk_wf_step`, whose one-letter kind (kinds.py) says what
happened. The journal holds the final entries; the pending one, only ever at the last
position, is never cached (it is `Store.load`'s `pending`).

Final entries never change, so a warm instance keeps them and asks the database only for
positions it has not seen. Caching decoded values has one trap: a run that mutates a
list or dict it got from a step would hand the mutated object to the next run. So the
journal keeps a *pristine* copy of every value that no run has been given, and each run
gets copies of it: a shallow `.copy()` of each list or dict (C speed), and a deep copy
for the rare result that nests lists or dicts. A position handed out straight from a
decode (the cold load, or a value just recorded) gets its pristine copy by decoding its
JSON text once more, at the next run. Scalars (str, int, ...) are shared: nothing can
mutate them. The copies cost a fraction of decoding again every time (docs/performance.md).
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import JournalError
from .instance import Loaded
from .kinds import STEP_RETURNED
from .values import decode

_MUT = (dict, list)


class Journal:
    __slots__ = ("run_id", "kinds", "keys", "results", "_pristine", "_nested", "_texts",
                 "_containers", "_runs", "_input", "_input_tagged", "made")

    def __init__(self, run_id: str, input_text: str, input_tagged: bool) -> None:
        self.run_id = run_id
        self.kinds: list[str] = []
        # the name for STEP_RETURNED, else U+0001 + the name (store.py's _LOAD)
        self.keys: list[str] = []
        self.results: list[Any] = []  # what the current run is given
        self._pristine: list[Any] = []  # never given to a run: the source of its copies
        self._nested: list[int] = []  # positions whose value nests lists or dicts
        self._texts: list[str] = []  # JSON of the positions past the pristine ones
        self._containers = False  # is any pristine value a list or dict?
        self._runs = 0
        self._input = input_text
        self._input_tagged = input_tagged
        # The tx steps' Tables (tx.py) made in the database since this cache began: made
        # again, idempotently, by the first tx step of a fresh cache.
        self.made: set[Any] = set()

    def __len__(self) -> int:
        return len(self.kinds)

    def name(self, pos: int) -> str:
        """The name recorded at `pos`."""
        key = self.keys[pos]
        return key[1:] if key[:1] == "\x01" else key

    def begin_run(self, loaded: Loaded) -> Any:
        """Ready the journal for one run: copies of what earlier runs saw, then the
        positions recorded since. Returns the run's input, freshly decoded.

        Raises JournalError if the delta does not fit (a gap, or mismatched lengths).
        """
        if self._runs:
            self._snapshot()
            self.results = self._copies()
        self._runs += 1
        if loaded.count:
            self._extend(loaded)
        try:
            return decode(self._input, self._input_tagged)
        except ValueError as e:
            raise JournalError(f"the stored input does not decode: {e}") from None

    def _snapshot(self) -> None:
        """Pristine copies of the positions that runs were handed straight from a decode."""
        if self._texts:
            start = len(self._pristine)
            fresh = json.loads("[" + ",".join(self._texts) + "]")
            self._texts = []
            self._pristine.extend(fresh)
            for i, x in enumerate(fresh, start):
                if type(x) in _MUT:
                    self._containers = True
                    if any(type(v) in _MUT for v in (x.values() if type(x) is dict else x)):
                        self._nested.append(i)
        if len(self._pristine) != len(self.kinds):
            raise JournalError(f"{len(self._pristine)} cached values for {len(self.kinds)} "
                               "positions")

    def _copies(self) -> list[Any]:
        p = self._pristine
        if not self._containers:
            return p.copy()
        out = [x.copy() if type(x) in _MUT else x for x in p]
        for i in self._nested:
            out[i] = _deep_copy(p[i])
        return out

    def _extend(self, loaded: Loaded) -> None:
        try:
            new = json.loads(loaded.results)
        except ValueError as e:
            raise JournalError(f"the journal's results do not decode: {e}") from None
        keys = loaded.keys.split("\x1e")
        n = loaded.count
        if loaded.since != len(self.kinds) or not len(new) == len(keys) == len(loaded.kinds) == n:
            raise JournalError(
                f"journal delta from position {loaded.since} does not fit a journal of "
                f"{len(self.kinds)} entries ({n} rows, {len(new)} results)"
            )
        self.kinds.extend(loaded.kinds)
        self.keys.extend(keys)
        self.results.extend(new)
        self._texts.append(loaded.results[1:-1])

    def append(self, kind: str, name: str, text: str, raw: Any) -> None:
        """Add the entry just recorded at the next position; `raw` is `json.loads(text)`."""
        self.kinds.append(kind)
        self.keys.append(name if kind == STEP_RETURNED else "\x01" + name)
        self.results.append(raw)
        self._texts.append(text)


def _deep_copy(v: Any) -> Any:
    t = type(v)
    if t is dict:
        return {k: _deep_copy(x) for k, x in v.items()}
    if t is list:
        return [_deep_copy(x) for x in v]
    return v


class Cache:
    """An instance's warm journal, kept across its events while its guest instance lives:
    a run asks the database only for the positions recorded since."""

    __slots__ = ("journal", "warm")

    def __init__(self) -> None:
        self.journal: Journal | None = None
        self.warm = False  # the last run's journal came from this cache, not a fresh load

    def forget(self) -> None:
        """Drop the cache (the actor is being deleted, storage failed, a move)."""
        self.journal = None

    def for_run(self, loaded: Loaded) -> Journal:
        """The journal of `loaded`'s run: the cache, or a new one. Raises JournalError."""
        j = self.journal
        self.warm = j is not None and j.run_id == loaded.run_id and len(j) > 0
        if j is None or j.run_id != loaded.run_id:
            if loaded.input is None:
                raise JournalError("the instance's input was not loaded")
            j = self.journal = Journal(loaded.run_id, loaded.input, loaded.input_tagged)
        return j
