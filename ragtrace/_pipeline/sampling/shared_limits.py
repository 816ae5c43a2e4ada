"""Rate limits and the judge budget shared by a fleet of workers through Redis.

With N ``ragtrace worker`` processes, per-process limits would let the fleet run N times the
configured evaluations per second and spend N hourly budgets. ``RedisLimits`` keeps one token
bucket per evaluator and one spend counter per hour in Redis, checked and taken in one Lua
script on the server's clock (``TIME``), so every worker draws on the same allowance.

Keys (all under ``<prefix>``, default the queue's stream name): ``<prefix>:bucket:<evaluator>``
(a hash of tokens and last refill, expiring after an idle hour) and ``<prefix>:spend:<hour>``
(a float, expiring after two hours). The hour key is computed on the server, so these limits
need one Redis node (or a primary), not a Cluster.

An evaluator with no rate limit and no charge never reaches Redis. When Redis cannot be reached
``admit`` raises and the sampler drops the run as ``sampler_error``: the fleet fails closed on
spend rather than open.
"""

from __future__ import annotations

from typing import Any

from ragtrace._pipeline.sampling.limits import (
    ADMITTED,
    BUDGET_EXHAUSTED,
    RATE_LIMITED,
    LimitSettings,
    is_charged,
)
from ragtrace.evaluators._base import Evaluator

# KEYS[1] bucket (or ""), KEYS[2] spend prefix. ARGV: rate, capacity, cost, reserve, budget
# (budget < 0: none). Returns 1 admitted, 0 rate limited, -1 budget exhausted.
_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
local cost, reserve, budget = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local tokens
if KEYS[1] ~= '' then
  local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
  tokens = tonumber(b[1]) or cap
  local ts = tonumber(b[2]) or now
  tokens = math.min(cap, tokens + math.max(0, now - ts) * rate)
  if tokens < 1 then
    redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
    redis.call('EXPIRE', KEYS[1], 3600)
    return 0
  end
end
local spend_key = KEYS[2] .. math.floor(now / 3600)
if budget >= 0 then
  local spent = tonumber(redis.call('GET', spend_key)) or 0
  if spent + cost > budget * (1 + 1e-12) then return -1 end
end
if KEYS[1] ~= '' then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'ts', tostring(now))
  redis.call('EXPIRE', KEYS[1], 3600)
end
if reserve > 0 then
  redis.call('INCRBYFLOAT', spend_key, tostring(reserve))
  redis.call('EXPIRE', spend_key, 7200)
end
return 1
"""

_CHARGE = """
local t = redis.call('TIME')
local key = KEYS[1] .. math.floor(tonumber(t[1]) / 3600)
redis.call('INCRBYFLOAT', key, ARGV[1])
redis.call('EXPIRE', key, 7200)
return 1
"""

_SPENT = """
local t = redis.call('TIME')
return redis.call('GET', KEYS[1] .. math.floor(tonumber(t[1]) / 3600)) or '0'
"""


class RedisLimits:
    """``AdmissionLimits`` kept in Redis, the same for every worker of a fleet.

    Args:
        client: A ``redis.Redis`` client.
        settings: What the limits allow (``Sampler.limit_settings``).
        prefix: Key prefix (use the queue's stream name, so fleets on one server stay apart).
    """

    def __init__(self, client: Any, settings: LimitSettings, prefix: str) -> None:
        self.settings = settings
        self._client = client
        self._prefix = prefix
        self._admit = client.register_script(_ADMIT)
        self._charge = client.register_script(_CHARGE)
        self._spent = client.register_script(_SPENT)

    @property
    def _spend_prefix(self) -> str:
        return f"{self._prefix}:spend:"

    def admit(self, evaluator: Evaluator) -> tuple[bool, str]:
        """Take a shared token and reserve shared budget for one run of ``evaluator``."""
        name = evaluator.name
        rate = self.settings.rate_limits.get(name)
        charged, cost, reserve = is_charged(self.settings, evaluator)
        budget = self.settings.hourly_budget_usd
        if rate is None and not charged:
            return True, ADMITTED
        bucket = f"{self._prefix}:bucket:{name}" if rate is not None else ""
        args = [
            rate or 0.0,
            self.settings.capacity(name) if rate is not None else 0.0,
            cost,
            reserve,
            budget if charged and budget is not None else -1.0,
        ]
        verdict = int(self._admit(keys=[bucket, self._spend_prefix], args=args))
        if verdict == 1:
            return True, ADMITTED
        return False, RATE_LIMITED if verdict == 0 else BUDGET_EXHAUSTED

    def charge(self, usd: float | None) -> None:
        """Add real judge spend to the fleet's current hour."""
        if self.settings.hourly_budget_usd is None or usd is None or not 0 < usd < float("inf"):
            return
        self._charge(keys=[self._spend_prefix], args=[f"{float(usd):.12f}"])

    def budget_left_usd(self) -> float | None:
        """What the fleet's budget still allows this hour (None: no budget)."""
        budget = self.settings.hourly_budget_usd
        if budget is None:
            return None
        spent = float(self._spent(keys=[self._spend_prefix]))
        return max(0.0, budget - spent)
