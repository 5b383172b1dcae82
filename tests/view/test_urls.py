"""Page names: every id becomes a safe, unique file name (docs/viewer.md)."""

from __future__ import annotations

import hashlib
import re

import pytest

from rubricgate.view import urls


@pytest.mark.parametrize("case_id", ["../../etc/passwd", "a/b", "<script>x</script>", 'q"uote\'s', "..", "", "é—ü"])
def test_a_hostile_id_gives_a_name_of_safe_characters_ending_in_its_hash(case_id):
    # docs/viewer.md: the id's letters, digits, - and _, then 10 hex characters of its SHA-256.
    name = urls.slug(case_id)
    digest = hashlib.sha256(case_id.encode("utf-8")).hexdigest()[:10]
    assert re.fullmatch(r"[A-Za-z0-9_-]*", name) and name.endswith(digest)
    assert urls.route(f"case/{name}.html") == ("case", {"case": name})


def test_ids_that_differ_only_in_unsafe_characters_get_different_names():
    assert len({urls.slug(i) for i in ("a/b", "a_b", "a?b", "a b", "a\\b")}) == 5


def test_a_readable_block_of_safe_characters_is_kept():
    assert urls.slug("fixture-data_loader").startswith("fixture-data_loader-")
