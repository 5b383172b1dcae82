"""Preflight: before the suite, each agent CLI answers one minimal request, in the sandbox and
environment the trials get.

A missing key, a refused key, an endpoint that is down or unreachable through the sandbox's
network, a proxy that was not allowlisted: each would otherwise surface as every trial erroring
after the CLI's own retries. Here it ends the run in seconds (exit 2) with one line naming the
variable or setting to fix. An endpoint variable or key set in rubricgate's environment but
listed in neither agent.env_allowlist nor agent.secret_env is named before any CLI starts.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rubricgate.agents.base import Agent, AgentRequest
from rubricgate.agents.registry import cli_specs
from rubricgate.agents.spec import Endpoint
from rubricgate.errors import GateInputError

if TYPE_CHECKING:
    from rubricgate.models.transcript import Transcript

PROMPT = "This is a connectivity check. Reply with the single word OK. Use no tools."
DEFAULT_TIMEOUT_S = 45.0


def checked_endpoints() -> dict[str, Endpoint]:
    """Agent name -> its endpoint, for every CLI whose spec asks for a preflight."""
    return {name: spec.endpoint for name, spec in cli_specs().items() if spec.preflight}

_AUTH = re.compile(r"not logged in|\b40[13]\b|unauthori[sz]ed|forbidden|invalid.{0,20}(api|x-api)[- _]?key|"
                   r"authentication|api key|credential", re.I)
_NETWORK = re.compile(r"econnrefused|connection refused|unable to connect|could not connect|enotfound|getaddrinfo|"
                      r"timed? ?out|reconnecting|network|fetch failed|socket|error sending request|"
                      r"stream disconnected|dns|proxy|certificate|ssl|tls", re.I)


def preflight_agents(agents: dict[str, Agent], env: dict[str, str], sandbox, shown: Path,
                     timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """Run each CLI agent once; raise GateInputError with the fix when one cannot reach its model.
    `env` is what reaches the CLIs: rubricgate's environment as agent.env_allowlist and
    agent.secret_env let it through."""
    endpoints = checked_endpoints()
    checked = [name for name, agent in agents.items()
               if name in endpoints and getattr(agent, "name", name) in endpoints]
    for name in checked:  # before any CLI starts: no wait on a request that cannot go where it should
        if (problem := unlisted(name, env, os.environ, _configured_model(agents[name]))) is not None:
            raise problem
    for name in checked:
        check_agent(name, agents[name], env, sandbox, shown, timeout_s)


def unlisted(name: str, env: Mapping[str, str], source: Mapping[str, str],
             model: str | None = None) -> GateInputError | None:
    """Agent `name`'s endpoint variables and key set in `source` but kept from the CLI (`env`): the
    CLI would go to its default endpoint, or ask without a key, and its failure would blame the
    endpoint or say the key is not set, while both are right in the user's shell. A model
    variable (COPILOT_MODEL) matters only without `agent.model`, whose --model the CLI takes."""
    point = cli_specs()[name].endpoint
    variables = [var for var in point.variables if not (model and var.endswith("_MODEL"))]
    lists = {var: "agent.env_allowlist" for var in variables} | {point.key: "agent.secret_env"}
    missing = {var: where for var, where in lists.items() if source.get(var) and var not in env}
    if not missing:
        return None
    said = "; ".join(f"{var} is set in the environment but not listed in {where}" for var, where in missing.items())
    fix = " and ".join(f"add {var} to {where}" for var, where in missing.items())
    which = "it never reaches" if len(missing) == 1 else "none of them reaches"
    return GateInputError("rubricgate.yaml", f"agent {name} (preflight)", f"{said}: {which} {name}",
                          f"{fix} (or unset what {name} should not use)")


def _configured_model(agent: Agent) -> str | None:
    config = getattr(agent, "config", None)  # a `command` reviewer's, or a test's, may have none
    return getattr(config, "model", None)


def check_agent(name: str, agent: Agent, env: dict[str, str], sandbox, shown: Path, timeout_s: float) -> None:
    """One minimal request in a throwaway workspace under `shown` (what the sandbox shows)."""
    root = Path(tempfile.mkdtemp(prefix="preflight-", dir=shown))
    try:
        request = _request(root, env, sandbox, timeout_s)
        transcript = agent.run(request)
        printed = request.raw_stream_file.is_file() and request.raw_stream_file.stat().st_size > 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if transcript.termination in ("completed", "max_turns") or transcript.steps > 0:
        return
    raise network_problem(name, transcript.network, sandbox, env) or \
        diagnose(name, transcript, env, printed=printed, timeout_s=timeout_s)


def _request(root: Path, env: dict[str, str], sandbox, timeout_s: float) -> AgentRequest:
    ws, scratch = root / "workspace", root / "scratch"
    ws.mkdir()
    scratch.mkdir()
    (ws / "PREFLIGHT.md").write_text(PROMPT + "\n", encoding="utf-8")
    (ws / "changed.txt").write_text("", encoding="utf-8")
    return AgentRequest(case_id="preflight", trial=0, workspace=ws, prompt_file=ws / "PREFLIGHT.md",
                        rubric_file=ws / "PREFLIGHT.md", changed_files_file=ws / "changed.txt", scratch=scratch,
                        allowed_tools=[], max_steps=2, timeout_s=timeout_s, env=dict(env), sandbox=sandbox)


def diagnose(name: str, transcript: Transcript, env: dict[str, str], *, printed: bool,
             timeout_s: float = DEFAULT_TIMEOUT_S) -> GateInputError:
    """The failed preflight as one line naming what to set. The time budget is not the endpoint's
    verdict: a CLI still starting when it ran out says so, and only the endpoint's own answer (or
    the CLI's report that it got none) blames the endpoint."""
    point = cli_specs()[name].endpoint
    where = env.get(point.base_url) or point.default
    error, cls = transcript.error or "", transcript.failure
    said = (error.strip().splitlines() or [transcript.termination])[0][:200]
    field = f"agent {name} (preflight)"
    if transcript.exit_code == 127:
        return GateInputError("rubricgate.yaml", field, f"{name} could not start in the sandbox: {said}",
                              f"install {name} where the sandbox shows it (a real folder on the agent's PATH, "
                              "not a symlink into a folder the sandbox hides) or put its folder on PATH")
    # A CLI that checks for its key itself ends before any request, in its own words (Gemini CLI:
    # "Invalid auth method selected."): an unset key is then the cause to name.
    if cls == "auth" or (cls is None and _AUTH.search(error)) or (cls == "start" and not env.get(point.key)):
        missing = "" if env.get(point.key) else f"{point.key} is not set; "
        how = f"stopped before asking {where}" if cls == "start" else f"was not let in by {where}"
        return GateInputError("rubricgate.yaml", field, f"{missing}{name} {how}: {said}",
                              f"set {point.key} in the environment and list it in agent.secret_env "
                              "(a refused key: check its value and the endpoint)")
    if transcript.termination == "timeout":
        return _out_of_time(name, where, timeout_s, printed, field)
    if cls == "unreachable" or (cls is None and _NETWORK.search(error)):
        return GateInputError("rubricgate.yaml", field, f"{name} cannot reach {where}: {said}",
                              f"check {point.base_url} and any HTTPS_PROXY/NO_PROXY or CA bundle, each listed in "
                              "agent.env_allowlist; under agent.sandbox_network: allowlist the CLI reaches only "
                              "its endpoint and agent.network_allow, through rubricgate's proxy (HTTPS_PROXY inside "
                              "the sandbox), and a client that ignores HTTPS_PROXY reaches nothing")
    return GateInputError("rubricgate.yaml", field,
                          f"{name} failed its preflight request ({cls or transcript.termination}): "
                          f"{said}", f"run `{name}` by hand with the same environment; {point.key} and "
                          f"{point.base_url} reach it only when listed in agent.secret_env / agent.env_allowlist")


def _out_of_time(name: str, where: str, timeout_s: float, printed: bool, field: str) -> GateInputError:
    """The preflight's time ran out: before the CLI printed anything (it was still starting: a
    loaded machine, a slow first start), or while it waited on an endpoint that never answered."""
    if not printed:
        return GateInputError("rubricgate.yaml", field,
                              f"{name} did not finish starting in {timeout_s:.0f} s: it printed nothing and "
                              f"reported no error from {where} (still starting, or waiting on an answer)",
                              "raise agent.preflight_timeout_s on a loaded machine, or run "
                              f"`{name} --version` to see that it starts")
    return GateInputError("rubricgate.yaml", field,
                          f"{name} started, but {where} did not answer within {timeout_s:.0f} s",
                          "check that the endpoint answers (it accepted the connection and sent nothing), "
                          "or raise agent.preflight_timeout_s")


def network_problem(name: str, network, sandbox, env: dict[str, str]) -> GateInputError | None:
    """The preflight's failure as the sandbox's proxy saw it: nothing reached an endpoint, and a
    connection could not be made or was refused (not in the allowlist). None when the proxy
    relayed something (the endpoint answered: the CLI's own error says what) or saw nothing."""
    if getattr(getattr(sandbox, "network", None), "mode", None) != "allowlist" or \
            any(c.outcome == "relayed" for c in network):
        return None
    point = cli_specs()[name].endpoint
    where = env.get(point.base_url) or point.default
    field = f"agent {name} (preflight)"
    failed = [c for c in network if c.outcome == "unreachable"]
    if failed:
        return GateInputError("rubricgate.yaml", field,
                              f"{name} cannot reach {where}: the sandbox's proxy could not connect to "
                              f"{_where(failed[0])} ({failed[0].detail})",
                              f"check that the endpoint is up and {point.base_url} names it; behind a proxy, list "
                              "HTTPS_PROXY in agent.env_allowlist (the sandbox's proxy goes through it)")
    refused = [c for c in network if c.outcome == "refused"]
    if refused:
        hosts = ", ".join(dict.fromkeys(_where(c) for c in refused))
        return GateInputError("rubricgate.yaml", field,
                              f"{name} cannot reach {where}: the sandbox's proxy refused {hosts}, which is not in "
                              "its network allowlist",
                              f"point {point.base_url} at the endpoint, or list the host:port the CLI needs in "
                              "agent.network_allow (agent.sandbox_network: allowlist)")
    return None


def _where(connection) -> str:
    return (f"[{connection.host}]:{connection.port}" if ":" in connection.host
            else f"{connection.host}:{connection.port}")
