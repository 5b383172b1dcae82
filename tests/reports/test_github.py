"""publish against a local GitHub REST server: upsert, label sync, and loud failures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
import reports_fixtures as rf  # noqa: E402
from fake_github import TOKEN, FakeGitHub  # noqa: E402

from rubricgate.errors import GateInputError  # noqa: E402
from rubricgate.reports.comment import MARKER, render_comment  # noqa: E402
from rubricgate.reports.github import (  # noqa: E402
    DEFAULT_LABEL, PAGE_SIZE, GitHubError, GitHubTarget, publish,
)


@pytest.fixture
def gh():
    with FakeGitHub() as server:
        yield server


def _publish(gh: FakeGitHub, summary, pr: int = 7):
    return publish(summary, render_comment(summary), pr, GitHubTarget.from_env(gh.env()))


# --- failure answers first: an API failure is never a silent success ---------------------

@pytest.mark.parametrize("method,pattern,status,msg", [
    ("GET", r"/comments$", 403, "Resource not accessible by integration"),
    ("POST", r"/comments$", 422, "Validation Failed"),
    ("POST", r"/labels$", 403, "Resource not accessible by integration"),
    ("GET", r"/labels$", 404, "Not Found"),
])
def test_api_error_answers_raise_with_status_and_message(gh, method, pattern, status, msg):
    gh.fail[(method, pattern)] = (status, msg)
    with pytest.raises(GitHubError) as err:
        _publish(gh, rf.summary())
    assert f"HTTP {status}" in str(err.value) and msg in str(err.value) and method in str(err.value)
    assert TOKEN not in str(err.value)


def test_patch_failure_on_existing_comment_is_loud(gh):
    gh.add_comment(7, MARKER + "\nold")
    gh.fail[("PATCH", r"/issues/comments/")] = (404, "Not Found")
    with pytest.raises(GitHubError, match="PATCH .*HTTP 404"):
        _publish(gh, rf.summary())


def test_label_delete_failure_is_loud(gh):
    gh.labels[7] = {DEFAULT_LABEL}
    gh.fail[("DELETE", r"/labels/")] = (403, "Must have admin rights")
    with pytest.raises(GitHubError, match="DELETE .*HTTP 403 Must have admin rights"):
        _publish(gh, rf.passing_summary())


def test_redirect_is_refused_so_the_token_is_not_resent(gh):
    gh.fail[("GET", r"/comments$")] = (301, "Moved Permanently")
    with pytest.raises(GitHubError, match="HTTP 301"):
        _publish(gh, rf.summary())
    assert not any(path == "/elsewhere" for _, path in gh.requests)


def test_bad_token_is_a_401_error_without_leaking_token(gh):
    env = gh.env(GITHUB_TOKEN="wrong-token-abcdef")
    with pytest.raises(GitHubError, match="HTTP 401 Bad credentials") as err:
        publish(rf.summary(), "x", 7, GitHubTarget.from_env(env))
    assert "wrong-token-abcdef" not in str(err.value)


def test_unreachable_server_is_loud():
    env = {"GITHUB_API_URL": "http://127.0.0.1:9", "GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t"}
    with pytest.raises(GitHubError, match="cannot connect"):
        publish(rf.summary(), "x", 7, GitHubTarget.from_env(env))


@pytest.mark.parametrize("env,field", [
    ({"GITHUB_REPOSITORY": "o/r"}, "GITHUB_TOKEN"),
    ({"GITHUB_REPOSITORY": "noslash", "GITHUB_TOKEN": "t"}, "GITHUB_REPOSITORY"),
    ({"GITHUB_REPOSITORY": "o/r", "GITHUB_TOKEN": "t", "GITHUB_API_URL": "file:///etc"}, "GITHUB_API_URL"),
])
def test_missing_or_bad_environment_names_the_variable(env, field):
    with pytest.raises(GateInputError) as err:
        GitHubTarget.from_env(env)
    assert err.value.field == field and "fix:" in str(err.value)


# --- the happy path: create, edit the same comment, label follows the state --------------

def test_create_then_edit_same_comment_then_label_removed_on_pass(gh):
    gh.add_comment(7, "an unrelated human comment")
    first = _publish(gh, rf.summary())
    assert (first.comment_action, first.label_action) == ("created", "added")
    assert gh.labels[7] == {DEFAULT_LABEL}
    second = _publish(gh, rf.passing_summary())
    assert second.comment_id == first.comment_id and second.comment_action == "updated"
    assert second.label_action == "removed" and gh.labels[7] == set()
    ours = [c for c in gh.issue_comments(7) if MARKER in c["body"]]
    assert len(ours) == 1 and "rubricgate **PASS**" in ours[0]["body"]
    assert len(gh.issue_comments(7)) == 2  # the human comment is untouched


def test_regression_twice_keeps_label_and_does_not_stack(gh):
    _publish(gh, rf.summary())
    again = _publish(gh, rf.summary())
    assert again.label_action == "kept"
    assert len(gh.issue_comments(7)) == 1


def test_pass_without_label_does_not_call_delete(gh):
    result = _publish(gh, rf.passing_summary())
    assert result.label_action == "absent"
    assert not any(m == "DELETE" for m, _ in gh.requests)


def test_error_decision_leaves_label_untouched(gh):
    gh.labels[7] = {DEFAULT_LABEL}
    errored = rf.summary(decision=rf.Decision(status="error", exit_code=2, reasons=["no tasks"]))
    assert _publish(gh, errored).label_action == "untouched"
    assert gh.labels[7] == {DEFAULT_LABEL}


@pytest.mark.parametrize(("exit_code", "action", "after"), [(2, "untouched", {DEFAULT_LABEL}), (0, "removed", set())])
def test_an_inconclusive_decision_that_could_not_judge_leaves_the_label(gh, exit_code, action, after):
    """INCONCLUSIVE with exit 2 could not judge: removing the label read it as a pass. Passed by
    gate.inconclusive: pass (exit 0), it is one."""
    gh.labels[7] = {DEFAULT_LABEL}
    open_one = rf.summary(decision=rf.Decision(status="inconclusive", exit_code=exit_code, reasons=["too few trials"]))
    assert _publish(gh, open_one).label_action == action
    assert gh.labels[7] == after


def test_marker_found_on_a_later_page(gh):
    for i in range(PAGE_SIZE + 5):
        gh.add_comment(7, f"chatter {i}")
    cid = gh.add_comment(7, MARKER + "\nold report")
    result = _publish(gh, rf.summary())
    assert (result.comment_id, result.comment_action) == (cid, "updated")


def test_a_comment_posted_by_someone_else_with_the_marker_is_never_taken_over(gh):
    """A PR author's comment that starts with the marker, posted before the gate's first: edited
    into the report, it stayed theirs to rewrite as a PASS; the gate posts its own instead."""
    forged = gh.add_comment(7, MARKER + "\n## rubricgate **PASS**", user="pr-author")
    quoted = gh.add_comment(7, f"the gate finds its comment by `{MARKER}`")  # a bot's, marker not first
    result = _publish(gh, rf.summary())
    assert result.comment_action == "created" and result.comment_id not in (forged, quoted)
    assert gh.comments[forged]["body"] == MARKER + "\n## rubricgate **PASS**"
    assert gh.comments[quoted]["body"] == f"the gate finds its comment by `{MARKER}`"
    assert _publish(gh, rf.summary()).comment_id == result.comment_id  # and its own is edited after


def test_another_author_is_named_for_a_token_that_is_not_actions(gh):
    mine = gh.add_comment(7, MARKER + "\nold", user="release-bot")
    target = GitHubTarget.from_env(gh.env())
    result = publish(rf.summary(), render_comment(rf.summary()), 7, target, author="release-bot")
    assert (result.comment_id, result.comment_action) == (mine, "updated")


def test_a_personal_tokens_own_account_is_the_author_without_naming_it(gh):
    """GET /user names a personal token's account: its comment is edited in place run after run
    (with github-actions[bot] as the only author, every run posted a new one)."""
    gh.token_login = "maintainer"
    mine = gh.add_comment(7, MARKER + "\nold", user="maintainer")
    actions = gh.add_comment(7, MARKER + "\nanother workflow's", user="github-actions[bot]")
    assert (_publish(gh, rf.summary()).comment_id, gh.comments[actions]["body"]) == (mine, MARKER + "\nanother workflow's")
    gh.comments.pop(mine)
    posted = _publish(gh, rf.summary())
    assert posted.comment_action == "created" and _publish(gh, rf.summary()).comment_id == posted.comment_id


def test_an_account_github_could_not_name_for_a_moment_is_no_guess(gh):
    """A 5xx from GET /user fell back to github-actions[bot]: a personal token posted a second comment."""
    gh.token_login = "maintainer"
    mine = gh.add_comment(7, MARKER + "\nold", user="maintainer")
    gh.fail[("GET", r"^/user$")] = (502, "Bad Gateway")
    with pytest.raises(GitHubError, match="HTTP 502"):
        _publish(gh, rf.summary())
    assert [c["id"] for c in gh.issue_comments(7)] == [mine]


def test_comments_on_other_prs_are_ignored(gh):
    gh.add_comment(8, MARKER + "\nother pr")
    assert _publish(gh, rf.summary(), pr=7).comment_action == "created"
