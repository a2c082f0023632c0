"""kill -9 at random moments while about twenty orders progress, restart, and at the end
every order completed correctly: the same promises as the named crash points.

Bounded: WK_CRASH_ROUNDS rounds (6 by default), each killed 0.3-2 s into it. The seed
is printed; WK_CRASH_SEED=N replays one run's moments (as far as thread timing allows).
"""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from . import reliability_support
from .reliability_support import (
    HOUR,
    Fleet,
    HostDown,
    Launch,
    Order,
    shop,
)

pytestmark = pytest.mark.e2e

# the fixtures, by name (tests/e2e/conftest.py is shared with other suites)
launch = reliability_support.launch
shop_wasm = reliability_support.shop_wasm

ROUNDS = int(os.environ.get("WK_CRASH_ROUNDS", "6"))
ORDERS = 21


def random_orders(rng: random.Random, rounds: int) -> list[Order]:
    out = []
    for i in range(ORDERS):
        knobs = {"cool_off_ms": rng.choice([1000, 5000, HOUR]),
                 "trap_in_pack": rng.random() < 0.3,
                 "charge_failures": rng.choice([0, 0, 1]),
                 "notify_fails": rng.random() < 0.2}
        # Some orders start in each round, so that kills also land on starts, on-inits
        # and first runs, and every round but the last has work left when it is killed.
        out.append(Order(f"r{i:02d}", knobs, batch=i % rounds))
    return out


def test_kill_9_at_random_moments_loses_nothing(launch: Launch, shop_wasm: dict[str, Path],
                                                tmp_path: Path) -> None:
    seed = int(os.environ.get("WK_CRASH_SEED", random.randrange(1 << 30)))
    print(f"WK_CRASH_SEED={seed}")
    rng = random.Random(seed)
    data = tmp_path / "data"
    fleet = Fleet(random_orders(rng, ROUNDS))
    for round_no in range(ROUNDS):
        host = launch(shop(shop_wasm), data)
        fleet.attach(host)
        fleet.batch = round_no
        timer = threading.Timer(rng.uniform(0.3, 2.0), host.kill_now)
        timer.start()
        try:
            fleet.pump(timeout=60)
        except HostDown as down:
            fleet.record_kill(down, data)
        else:
            timer.cancel()
            rc = host.wait_exit(0.5)  # the timer may have fired as the pump returned
            if rc is not None:
                fleet.record_kill(HostDown(rc), data)
            else:
                host.close()
        finally:
            timer.cancel()
    assert fleet.kills >= ROUNDS - 1, f"only {fleet.kills} kills landed (seed {seed})"

    fleet.attach(launch(shop(shop_wasm), data))
    fleet.batch = 99
    fleet.pump(timeout=90)
    fleet.verify()
