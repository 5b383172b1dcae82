"""credentials.py: credential-shaped text found, redacted to a marked placeholder of the same
shape (`record`), and masked (the reports)."""

from __future__ import annotations

import pytest

from rubricgate.credentials import find_credentials, mask_credentials, redact_credentials

GH_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123"
AWS_ID = "AKIA" + "ABCDEFGHIJKLMNOP"


def test_find_credentials_names_the_line_and_the_kind() -> None:
    text = f"# Setup\n\nUse $API_KEY from the environment.\n    token: {GH_TOKEN}\naws {AWS_ID}\n"
    assert find_credentials(text) == [(4, "GitHub token"), (5, "AWS access key id")]
    assert find_credentials("password: <your password>\napi_key: ${KEY}\n") == []  # placeholders are not credentials


@pytest.mark.parametrize("line", ["DB_PASSWORD=Tr0ub4dor-and-3", "export SNOWFLAKE_PASSWORD='Abc123Def456!'",
                                  "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                  "client-secret: abc123def456", "MY_API_KEY: 0f1e2d3c4b5a6978"])
def test_a_credential_under_a_prefixed_name_is_found_and_redacted(line: str) -> None:
    # A word boundary before the keyword missed DB_PASSWORD and the like: record committed them.
    assert find_credentials(line) == [(1, "credential assignment")]
    assert "REDACTED_BY_RUBRICGATE" in redact_credentials(line)


@pytest.mark.parametrize("line", ["token_budget: 4000000000", "password_file: /etc/app/pw.txt", "MAX_TOKEN=4096",
                                  "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}", "DB_PASSWORD=<your password>"])
def test_a_name_that_only_contains_a_keyword_or_a_placeholder_value_is_no_credential(line: str) -> None:
    assert find_credentials(line) == []


def test_redaction_leaves_a_marked_placeholder_of_the_same_shape() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----"
    text = f"token: {GH_TOKEN}\nkey = sk-{'x' * 20}\npassword: hunter2-and-more\n{key}\ncut: {AWS_ID}\n"
    out = redact_credentials(text)
    assert GH_TOKEN not in out and "sk-xxxx" not in out and "hunter2" not in out and "MIIE" not in out
    assert out.splitlines() == ["token: ghp_REDACTEDbyRUBRICGATE", "key = sk-REDACTED-BY-RUBRICGATE",
                                "password: REDACTED_BY_RUBRICGATE",  # the key name stays, the value goes
                                "-----BEGIN RSA PRIVATE KEY-----", "REDACTED-BY-RUBRICGATE",
                                "-----END RSA PRIVATE KEY-----", "cut: AKIAREDACTED00000000"]
    # Still credential-shaped, so a task about a leaked key still shows the reviewer one.
    assert [kind for _, kind in find_credentials(out)][:2] == ["GitHub token", "OpenAI-style API key"]
    assert redact_credentials(out) == out


def test_a_private_key_whose_end_was_cut_off_is_redacted_to_the_end() -> None:
    out = redact_credentials("intro\n-----BEGIN PRIVATE KEY-----\nMIIEow\nIBAAK")
    assert out == "intro\n-----BEGIN PRIVATE KEY-----\nREDACTED-BY-RUBRICGATE\n-----END PRIVATE KEY-----"


def test_masking_keeps_the_text_around_a_credential() -> None:
    masked = mask_credentials(f"line 4: token: {GH_TOKEN} (in clear)")
    assert masked == "line 4: token: <masked:github-token> (in clear)"
    assert mask_credentials("-----BEGIN RSA PRIVATE KEY-----") == "<masked:private-key>"
    assert mask_credentials("nothing here") == "nothing here"


@pytest.mark.parametrize("text, kind", [
    ("key sk-" + "a1" * 10, "api-key"), ("id " + AWS_ID, "aws-access-key-id"), ("t " + GH_TOKEN, "github-token"),
    ("s xoxb-" + "1234567890ab", "slack-token"), ("-----BEGIN EC PRIVATE KEY-----", "private-key"),
    ("PASSWORD = 'Hunter2-long'", "credential"), ("Api-Key: abc123def456", "credential")])
def test_every_kind_is_masked(text: str, kind: str) -> None:
    assert f"<masked:{kind}>" in mask_credentials(text)
