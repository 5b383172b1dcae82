"""Retrying an agent run that failed for infrastructure reasons.

Exponential backoff with jitter (half the delay fixed, half random, so parallel trials hitting
the same outage do not retry in lockstep), never shorter than a retry-after the CLI reported,
capped so a bogus retry-after cannot stall a run. Every attempt is recorded on the transcript.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from rubricgate.graders.failures import failure_class, is_infra_failure, retry_after
from rubricgate.models.config import AgentConfig
from rubricgate.models.transcript import Attempt, Transcript

MAX_WAIT_S = 300.0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently infrastructure failures are retried."""

    retries: int = 2
    backoff_s: float = 2.0
    max_wait_s: float = MAX_WAIT_S

    @classmethod
    def from_config(cls, agent: AgentConfig) -> RetryPolicy:
        """agent.retries and agent.retry_backoff_s."""
        return cls(retries=agent.retries, backoff_s=agent.retry_backoff_s)


def backoff_delay(retry: int, policy: RetryPolicy, rng: random.Random, asked: float | None = None) -> float:
    """Seconds before retry number `retry` (1-based): jittered exponential, at least `asked`."""
    base = policy.backoff_s * 2 ** (retry - 1)
    delay = base / 2 + rng.random() * base / 2
    if asked is not None:
        delay = max(delay, asked)
    return min(delay, policy.max_wait_s)


def run_with_retries(run_once: Callable[[], Transcript], policy: RetryPolicy, *,
                     sleep: Callable[[float], object] = time.sleep, rng: random.Random | None = None,
                     before_retry: Callable[[], None] | None = None,
                     stop: Callable[[], bool] = lambda: False) -> Transcript:
    """Run until the run is not an infrastructure failure, the retries are spent, or `stop()`.

    The last attempt's transcript is returned with every attempt recorded in `attempts`.
    """
    attempts: list[Attempt] = []
    waited = 0.0
    while True:
        transcript = run_once()
        infra = is_infra_failure(transcript)
        attempts.append(_attempt(transcript, waited, infra))
        if not infra or len(attempts) > policy.retries or stop():
            return transcript.model_copy(update={"attempts": attempts})
        # Seeded only when a retry is due: a fresh Random reads 2.5 KB from the OS, on every trial.
        rng = rng or random.Random()
        waited = backoff_delay(len(attempts), policy, rng, retry_after(transcript))
        sleep(waited)
        if stop():  # interrupted during the backoff: the run is winding down
            return transcript.model_copy(update={"attempts": attempts})
        if before_retry is not None:
            before_retry()


def _attempt(transcript: Transcript, waited: float, infra: bool) -> Attempt:
    return Attempt(termination=transcript.termination, error=transcript.error, exit_code=transcript.exit_code,
                   duration_s=round(transcript.duration_s, 3), waited_s=round(waited, 3), infra=infra,
                   failure=failure_class(transcript))
