"""Kafka's dynamic group configs (``GroupConfigManager`` and ``GroupConfig``): what ``kafka-configs
--entity-type groups --alter`` sets for one group over the broker's defaults.

Each group type defines its configs (:meth:`GroupConfigs.define`: the name, the broker config's
value as the default, the broker's min/max bounds) and the check of one group's configs taken
together (:meth:`GroupConfigs.add_check`), so a new type adds its own without touching another.
A config is an INT (the default) or, as Kafka's ConfigDef types them, a STRING with a validator
(``share.auto.offset.reset``) or a BOOLEAN (``share.renew.acknowledge.enable``).
"""
from __future__ import annotations

from typing import Callable

#: the types of Kafka's ConfigDef a group config may have
INT, STRING, BOOLEAN = "INT", "STRING", "BOOLEAN"

#: Kafka's ConfigResource.Type of a group's configs (IncrementalAlterConfigs, DescribeConfigs, the log)
GROUP_RESOURCE = 32


class GroupConfigs:
    """Every group's dynamic configs, by group id (see the module)."""

    def __init__(self) -> None:
        #: config name -> (default, min, max, the broker configs of min and max); min and max None
        #: for a config that is not an INT
        self.defined: dict[str, tuple] = {}
        #: config name -> its type (INT, STRING or BOOLEAN)
        self.kinds: dict[str, str] = {}
        #: config name -> the broker config whose value is its default (DescribeConfigs' synonym)
        self.broker_keys: dict[str, str] = {}
        #: group id -> config name -> value, only what was set
        self.values: dict[str, dict[str, int]] = {}
        self._checks: list[Callable[[Callable[[str], int]], None]] = []
        self._validators: dict[str, Callable[[str, str], None]] = {}

    def define(self, name: str, default, lo: int | None = None, hi: int | None = None, lo_key: str | None = None,
               hi_key: str | None = None, default_key: str | None = None, *, kind: str = INT,
               validator: Callable[[str, str], None] | None = None) -> None:
        """A group config: its default (the value of the broker config ``default_key``) and, for an
        INT, the broker's bounds, with the names of the broker configs that set them (Kafka's
        messages name them). A STRING may have a ``validator(name, value)`` that raises ValueError
        in Kafka's words."""
        self.defined[name] = (default, lo, hi, lo_key, hi_key)
        self.kinds[name] = kind
        if default_key is not None:
            self.broker_keys[name] = default_key
        if validator is not None:
            self._validators[name] = validator

    def overridden(self, group_id: str) -> dict[str, int]:
        """The configs set for the group (name -> value)."""
        return dict(self.values.get(group_id, {}))

    def add_check(self, check: Callable[[Callable[[str], int]], None]) -> None:
        """``check(value)`` of one group's configs after a change (``value(name)``: the group's or the
        default); raises ValueError with Kafka's message (GroupConfig.validate's)."""
        self._checks.append(check)

    def default(self, name: str) -> int:
        """The broker's value of a config (what a group that set none has)."""
        return self.defined[name][0]

    def get(self, group_id: str, name: str) -> int:
        """The group's value of a config, else the broker's default."""
        values = self.values.get(group_id)
        if values is not None:
            value = values.get(name)
            if value is not None:
                return value
        return self.defined[name][0]

    def set(self, group_id: str, configs: dict) -> None:
        """Set configs of one group (None drops one): each within the broker's bounds, then all of the
        group's checked together (GroupConfig.validate: its messages). The group need not exist.
        Raises ValueError, nothing changed."""
        current = self.check(group_id, configs)
        if current:
            self.values[group_id] = current
        else:
            self.values.pop(group_id, None)

    def restore(self, group_id: str, name: str, value: str | int | None) -> None:
        """A config as the log kept it (its text, or None: deleted), unchecked (the broker's bounds may
        have moved since; a name the release does not define, or a value not of its type, is
        ignored, as Kafka's replay ignores it)."""
        if name not in self.defined:
            return
        if value is not None:
            kind = self.kinds[name]
            text = str(value).strip()
            if kind == INT:
                try:
                    value = int(text)
                except ValueError:
                    return
            else:
                value = text.lower() == "true" if kind == BOOLEAN else text
        current = self.values.setdefault(group_id, {})
        if value is None:
            current.pop(name, None)
            if not current:
                del self.values[group_id]
        else:
            current[name] = value

    def check(self, group_id: str, configs: dict) -> dict[str, int]:
        """The group's configs once ``configs`` are set, checked as :meth:`set` checks them, nothing
        changed (IncrementalAlterConfigs' validate-only). Raises ValueError."""
        parsed = {}
        for name, value in configs.items():
            if name not in self.defined:
                raise ValueError(f"Unknown group config name: {name}")
            if value is not None:
                value = self._parse(name, value)
            parsed[name] = value
        current = dict(self.values.get(group_id, {}))
        for name, value in parsed.items():
            if value is None:
                current.pop(name, None)
            else:
                current[name] = value

        def value(name: str) -> int:
            return current.get(name, self.defined[name][0])
        for check in self._checks:
            check(value)
        return current

    def _parse(self, name: str, value):
        """A value of a config as Kafka's ConfigDef parses it (then GroupConfig.validateValues checks an
        INT within the broker's bounds), in their words. Raises ValueError."""
        kind = self.kinds[name]
        if kind == BOOLEAN:
            text = str(value).strip().lower() if not isinstance(value, bool) else str(value).lower()
            if text not in ("true", "false"):
                raise ValueError(f"Invalid value {value} for configuration {name}: Expected value to be either true "
                                 "or false")
            return text == "true"
        if kind == STRING:
            text = str(value).strip()
            validator = self._validators.get(name)
            if validator is not None:
                validator(name, text)
            return text
        _, lo, hi, lo_key, hi_key = self.defined[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"Invalid value {value} for configuration {name}: Not a number of type INT")
        # GroupConfig.validateValues, in its words
        if value < lo:
            raise ValueError(f"{name} must be greater than or equal to {lo_key}")
        if value > hi:
            raise ValueError(f"{name} must be less than or equal to {hi_key}")
        return value
