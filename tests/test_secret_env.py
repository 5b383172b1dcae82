"""secret_env.py: which values of an environment are secrets (declared, or by name or shape)."""

from __future__ import annotations

from rubricgate.secret_env import looks_secret, parent_env_secrets, secret_values


def test_secret_values_skip_short_and_sort_longest_first() -> None:
    env = {"A": "abc", "B": "long-secret-value", "C": "medium1"}
    assert secret_values(env, ["A", "B", "C", "D"]) == ["long-secret-value", "medium1"]


def test_secret_values_take_every_secret_looking_value_the_agent_gets_declared_or_not() -> None:
    # agent.env_allowlist passes MY_TOKEN and GH through: the reviewer can print them, in every mode
    env = {"MY_TOKEN": "plain-words-value", "GH": "ghp_Zq9fault7K2mP7vL4nR8tWx3Yb6Hc1Jd5Ks", "PATH": "/usr/bin:/bin",
           "LANG": "C.UTF-8", "GITHUB_HEAD_REF": "rubric/soften-description", "HOME": "/tmp/Ab3dE5gH7jK9mN1pQ"}
    assert secret_values(env, []) == ["ghp_Zq9fault7K2mP7vL4nR8tWx3Yb6Hc1Jd5Ks", "plain-words-value"]


def test_ids_and_paths_are_not_secrets_by_shape_and_random_tokens_are() -> None:
    assert not looks_secret("0f3c2a9e8b7d6c5b4a392817f6e5d4c3b2a19080")  # a commit SHA
    assert not looks_secret("123e4567-e89b-12d3-a456-426614174000")  # a UUID
    assert not looks_secret("refs/heads/rubric/soften-description")
    assert looks_secret("Zq9fK2mP7vL4nR8tWx3Yb6Hc")


def test_the_parent_environment_gives_configured_secrets_and_secret_shaped_values_only() -> None:
    environ = {"GITHUB_HEAD_REF": "rubric/soften-description", "GITHUB_SHA": "0f3c2a9e8b7d6c5b4a392817f6e5d4c3b2a19080",
               "DEPLOY_TOKEN": "plain-words-value", "RUNNER_NAME": "Zq9fK2mP7vL4nR8tWx3Yb6Hc"}
    found = parent_env_secrets(environ, ["configured-secret"])
    assert set(found) == {"Zq9fK2mP7vL4nR8tWx3Yb6Hc", "configured-secret", "plain-words-value"}
    assert found[0] == "Zq9fK2mP7vL4nR8tWx3Yb6Hc"  # longest first


def test_secret_values_answer_each_environment_and_each_caller_its_own():
    # Remembered per environment (every trial of a run hands the same one): a changed value or
    # name set gets its own answer, and a caller changing its list changes no later answer.
    env = {"GH_TOKEN": "ghp_" + "a1B2" * 9, "PLAIN": "hello world"}
    first = secret_values(env, [])
    first.append("mutated")
    assert secret_values(env, []) == [env["GH_TOKEN"]]
    assert secret_values({**env, "GH_TOKEN": "another-long-token"}, []) == ["another-long-token"]
    assert secret_values(env, ["PLAIN"]) == [env["GH_TOKEN"], "hello world"]
