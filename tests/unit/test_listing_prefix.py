"""The listing's id prefix (storage/listing.py): a range of the index's primary key, with
every other filter and order, counted too; bounded by an id's bound; and the route's
reading of it and of a time counted back from the host's clock (net/listing.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from multidict import MultiDict
from wkhost.net.listing import query_from
from wkhost.storage.attributes import Attributes
from wkhost.storage.index import Index
from wkhost.storage.listing import ListQuery, _past, page_sql
from wkhost.types import ActorRef

IDS = ["a", "ab", "abc", "abd", "ac", "b", "order-1", "order-10", "order-2", "orders",
       "é1", "éz", "\U0010ffff", "\U0010ffffx"]


@pytest.fixture
def index(tmp_path: Path) -> Index:
    index = Index(tmp_path / "_host")
    for i, actor_id in enumerate(IDS):
        ref = ActorRef("wf", actor_id)
        index.add_actor(ref)
        if actor_id != "abd":  # published nothing
            index.set_attrs(ref, Attributes("waiting" if i % 2 else "failed", 1000 + i,
                                            (("region", "eu"),)))
    return index


def ids(index: Index, q: ListQuery) -> tuple[list[str], int | None]:
    rows, count = index.list_page(q, count=True)
    return [r.id for r in rows], count


@pytest.mark.parametrize("prefix, want", [
    ("ab", ["ab", "abc", "abd"]), ("a", ["a", "ab", "abc", "abd", "ac"]),
    ("order-1", ["order-1", "order-10"]), ("order", ["order-1", "order-10", "order-2", "orders"]),
    ("é", ["é1", "éz"]), ("\U0010ffff", ["\U0010ffff", "\U0010ffffx"]), ("zz", []),
])
def test_a_prefix_lists_the_ids_that_begin_with_it_and_counts_them(
        index: Index, prefix: str, want: list[str]) -> None:
    try:
        assert ids(index, ListQuery("wf", prefix=prefix)) == (want, len(want))
        published = [i for i in want if i != "abd"]
        assert ids(index, ListQuery("wf", prefix=prefix, labels=(("region", "eu"),))) == (
            published, len(published))
    finally:
        index.close()


def test_a_prefix_goes_with_the_other_filters_orders_and_pages(index: Index) -> None:
    try:
        q = ListQuery("wf", ("waiting", "failed"), prefix="order", order="-updated", limit=3)
        assert ids(index, q) == (["orders", "order-2", "order-10"], 4)
        assert ids(index, ListQuery("wf", prefix="order", order="-updated", limit=3,
                                    after="1008/order-2")) == (["order-10", "order-1"], 4)
        assert ids(index, ListQuery("wf", ("failed",), prefix="a")) == (["a", "abc", "ac"], 3)
    finally:
        index.close()


def test_the_prefix_is_a_range_of_the_key_and_bounded() -> None:
    sql, params = page_sql(ListQuery("wf", prefix="ab"))
    assert "ac.id >= ? AND ac.id < ?" in sql and params[2:4] == ["ab", "ac"]
    assert _past("a\U0010ffff") == "b" and _past("\U0010ffff") is None
    assert _past("\ud7ff") == "\ue000"  # no surrogate in between
    ListQuery("wf", prefix="x" * 256)
    with pytest.raises(ValueError, match="prefix: at most 256"):
        ListQuery("wf", prefix="x" * 257)
    with pytest.raises(ValueError, match="prefix: valid Unicode"):
        ListQuery("wf", prefix="\ud800")


def test_the_route_reads_the_prefix_and_counts_a_negative_time_back_from_now() -> None:
    q = query_from("wf", MultiDict([("prefix", "o-"), ("since", "-7200000"),
                                    ("until", "5000"), ("label", "a=b"), ("label", "c=")]),
                   now_ms=10_000_000)
    assert (q.prefix, q.since, q.until, q.labels) == ("o-", 2_800_000, 5000,
                                                      (("a", "b"), ("c", "")))
    with pytest.raises(ValueError, match="since"):
        query_from("wf", MultiDict([("since", "2h")]))
