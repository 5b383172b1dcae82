"""Where the workflows install rubricgate from: PEP 610's direct_url.json mapped to a pin."""

from __future__ import annotations

import json

import pytest

from rubricgate.adopt.install_origin import check_requirement, detect, from_direct_url
from rubricgate.errors import GateInputError


def test_a_git_install_is_pinned_to_its_commit():
    data = {"url": "https://github.com/acme/rubricgate", "vcs_info": {"vcs": "git", "commit_id": "a" * 40,
                                                                       "requested_revision": "main"}}
    got = from_direct_url("0.1.0", json.dumps(data))
    assert got.requirement == f"rubricgate @ git+https://github.com/acme/rubricgate@{'a' * 40}"
    assert "aaaaaaaaaaaa" in got.origin


def test_a_subdirectory_is_kept():
    data = {"url": "https://github.com/acme/mono", "subdirectory": "py",
            "vcs_info": {"vcs": "git", "commit_id": "b" * 40}}
    assert from_direct_url("1.2.3", json.dumps(data)).requirement.endswith(f"@{'b' * 40}#subdirectory=py")


def test_an_index_release_is_pinned_to_its_exact_version():
    assert from_direct_url("1.2.3", None).requirement == "rubricgate==1.2.3"


@pytest.mark.parametrize("data", [{"url": "file:///home/me/rubricgate", "dir_info": {"editable": True}},
                                  {"url": "file:///tmp/rubricgate-0.1.0.whl", "archive_info": {}}, "not json"])
def test_a_local_checkout_pins_the_version_and_says_how_to_change_it(data):
    got = from_direct_url("0.4.0", data if isinstance(data, str) else json.dumps(data))
    assert got.requirement == "rubricgate==0.4.0"
    assert "cannot install" in got.origin and "--pip" in got.origin


def test_detect_reads_the_running_distribution():
    got = detect()
    assert got.requirement.startswith(("rubricgate==", "rubricgate @ ")) and got.origin


@pytest.mark.parametrize("value", ["rubricgate", "rubricgate>=1", "rubricgate==1\nx: y", 'rubricgate=="1"',
                                   "numpy==1.0", "rubricgate==1; $(id)", "", "-e ."])
def test_unpinned_or_unsafe_requirements_are_refused(value):
    with pytest.raises(GateInputError, match="--pip"):
        check_requirement(value)


@pytest.mark.parametrize("value", ["rubricgate==0.1.0", "rubricgate[test]==0.1.0", "rubricgate~=0.1.0",
                                   "rubricgate @ git+https://github.com/o/r@abc", "https://example.com/r-0.1.0.tar.gz"])
def test_pinned_requirements_are_kept(value):
    assert check_requirement(value) == value
