"""A world of your own, in Python: a thermostat whose outside temperature drifts.

    python python/examples/custom_world.py --steps 6000 --trace runs/thermostat.jsonl
"""
import argparse

import gymnasium as gym
import numpy as np

import perennial


class Thermostat(gym.Env):
    """Keep the room at 21 °C: heat off, low or high; the outside temperature is a regime."""

    observation_space = gym.spaces.Box(-50.0, 80.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, outside: float = 10.0):
        self.outside, self.room = outside, 21.0

    def parameters(self):  # what a regime may set, with the range it may take
        return {"outside": (-30.0, 40.0)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.room = 21.0 + self.np_random.normal(0.0, 1.0)
        return self._obs(), {}

    def step(self, action):
        heat = (0.0, 0.8, 1.6)[action]
        self.room += 0.1 * (self.outside - self.room) + heat + self.np_random.normal(0.0, 0.1)
        return self._obs(), -abs(self.room - 21.0), False, False, {}

    def _obs(self):
        return np.array([self.room, self.outside], dtype=np.float32)


if __name__ == "__main__":
    cli = argparse.ArgumentParser()
    cli.add_argument("--steps", type=int, default=6000)
    cli.add_argument("--trace", default="runs/thermostat.jsonl")
    args = cli.parse_args()
    env = perennial.wrap(
        Thermostat(),
        regimes={"mild": {"outside": 10.0}, "cold": {"outside": -10.0}},
        schedule={"plan": "cycle", "labels": ["mild", "cold"], "every": 1000},
        seed=0,
        trace=args.trace,
    )
    obs, _ = env.reset()
    for _ in range(args.steps):  # heat harder the colder the room: a fixed rule, not learnt
        obs, *_ = env.step(int(np.clip((21.0 - obs[0]) * 2.0 + 1.0, 0, 2)))
    env.close()
    for row in perennial.evaluate(args.trace)["runs"][0]["intervals"]:
        print(f"{row['regime']:>5}  steps {row['start']:>5}..{row['end']:<5}  "
              f"mean reward {row['mean_reward']:.3f}")
