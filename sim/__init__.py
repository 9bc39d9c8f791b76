"""Simulated fleets of consumer-group members.

- :mod:`.scenario`: the TOML scenario format (``load``, ``from_dict``, ``apply_overrides``).
- :mod:`.simulate`: a scenario in virtual time, deterministic for a seed (``run``).
- :mod:`.fleet`: a scenario in real time against a coordinator (``run``, asyncio).
- :mod:`.events`: the members' events (schema v1, ``check_event``).
- :mod:`.cli`: ``groupcoord fleet`` and ``groupcoord simulate``.
"""
