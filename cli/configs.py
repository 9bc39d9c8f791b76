"""``groupcoord configs``: Kafka's kafka-configs.sh for the entity types a group coordinator has
(groups, topics, brokers), with its options, output and messages, over the client library's
:class:`~groupcoord.client.admin.AdminClient`, so it works against any Kafka cluster; alone, the broker
configs of :mod:`groupcoord.coordinator.config` (hence here, above both).

    groupcoord configs --group G                                   # its dynamic configs
    groupcoord configs --group G --alter --add-config consumer.session.timeout.ms=60000
    groupcoord configs --entity-type brokers --entity-name 0 --describe --all

A named entity without ``--alter`` is described (kafka-configs.sh asks for ``--describe``); with no
entity at all, the command lists the broker configs groupcoord knows and their defaults, without a
server. Options that do not go together are refused with Kafka's message and exit code 2; a broker's
refusal prints as kafka-configs.sh prints it, exit code 1.
"""
from __future__ import annotations

import asyncio
import re
import sys

from groupcoord.client.admin import RESOURCE_TYPES, AdminClient, AdminError, ConfigEntry
from groupcoord.coordinator import config as coordinator_config
from groupcoord.coordinator.config import PROFILES, SETTINGS
from groupcoord.protocol.errors import ErrorCode, KafkaError, ProtocolError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
#: the entity types served here, in kafka-configs.sh's names
ENTITY_TYPES = ("topics", "brokers", "groups")
#: per entity type, the config source kafka-configs.sh shows without --all (the broker default: "")
_DYNAMIC = {"topics": "DYNAMIC_TOPIC_CONFIG", "groups": "DYNAMIC_GROUP_CONFIG", "brokers": "DYNAMIC_BROKER_CONFIG"}
_BROKER_DEFAULT_SOURCE = "DYNAMIC_DEFAULT_BROKER_CONFIG"
# ConfigCommand's split of --add-config: commas and '=' outside square brackets
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
_KEY = re.compile(r"[$a-zA-Z0-9._-]*")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


class UsageError(Exception):
    """Options that do not go together (exit code 2)."""


class ConfigCommandError(Exception):
    """What kafka-configs.sh prints as the exception's message alone (exit code 1)."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "configs", help="describe and alter the configs of groups, topics and brokers (kafka-configs.sh); "
                        "alone: the broker configs groupcoord knows and their defaults",
        description="Describe and alter the dynamic configs of groups, topics and brokers as Kafka's "
                    "kafka-configs.sh does (same options, output and messages). A named entity without "
                    "--alter is described. With no entity, list the broker configs groupcoord knows and their "
                    "defaults (no server needed).")
    p.add_argument("--bootstrap-server", default=None, metavar="HOST:PORT[,...]",
                   help=f"the server(s) to connect to (default {DEFAULT_BOOTSTRAP})")
    actions = p.add_argument_group("actions (one; --describe when an entity is named)")
    actions.add_argument("--describe", action="store_true", help="list the configs of the given entity")
    actions.add_argument("--alter", action="store_true", help="alter the configs of the entity")
    actions.add_argument("--all", action="store_true",
                         help="with --describe: every config of the entity, not only its dynamic ones")
    entity = p.add_argument_group("the entity")
    entity.add_argument("--group", metavar="GROUP", help="the group's id (--entity-type groups --entity-name GROUP)")
    entity.add_argument("--topic", metavar="TOPIC", help="the topic's name")
    entity.add_argument("--broker", metavar="ID", help="the broker's id")
    entity.add_argument("--broker-defaults", action="store_true", help="the config defaults of all brokers")
    entity.add_argument("--entity-type", action="append", default=[], metavar="TYPE",
                        help=f"the type of entity ({'/'.join(ENTITY_TYPES)})")
    entity.add_argument("--entity-name", action="append", default=[], metavar="NAME",
                        help="the entity's name (group id, topic name, broker id)")
    entity.add_argument("--entity-default", action="store_true", help="the default entity (brokers)")
    alter = p.add_argument_group("with --alter")
    alter.add_argument("--add-config", metavar="K=V[,K=V]",
                       help="configs to set, comma-separated; square brackets group values with commas: "
                            "'k1=v1,k2=[v1,v2],k3=v3'")
    alter.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to set")
    alter.add_argument("--delete-config", action="append", default=[], metavar="K[,K]",
                       help="config names to remove, comma-separated (repeatable)")
    p.add_argument("--timeout", type=int, default=30000, metavar="MS",
                   help="how long each request may take, retries included (default 30000)")
    p.add_argument("--profile", default=None, metavar="PROFILE",
                   help="with no entity: the broker configs as that profile of `groupcoord serve` sets them "
                        "(default, test)")
    p.set_defaults(func=run_configs)


# ------------------------------------------------------------------------------- options
def _entities(args) -> tuple[list[str], list[str]]:
    """(entity types, entity names) as ConfigCommandOptions gathers them: --entity-type and
    --entity-name/--entity-default first, then the specific flags; "" names a default entity."""
    types = list(args.entity_type)
    names = list(args.entity_name) + ([""] if args.entity_default else [])
    for flag, kind in ((args.topic, "topics"), (args.broker, "brokers"), (args.group, "groups")):
        if flag is not None:
            types.append(kind)
            names.append(flag)
    if args.broker_defaults:
        types.append("brokers")
        names.append("")
    return types, names


def _named(args) -> bool:
    return bool(args.entity_type or args.entity_name or args.entity_default or args.group is not None
                or args.topic is not None or args.broker is not None or args.broker_defaults)


def check_options(args) -> None:
    """ConfigCommandOptions.checkArgs, in its order and words."""
    if args.describe and args.alter:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if not (args.alter or args.describe) and (args.add_config is not None or args.add_config_file is not None
                                              or args.delete_config):
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if not args.alter:
        args.describe = True
        for given, option in ((args.add_config, "add-config"), (args.delete_config, "delete-config")):
            if given:
                raise UsageError(f'Option "[describe]" can\'t be used with option "[{option}]"')
    types, names = _entities(args)
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    for kind in types:
        if kind not in ENTITY_TYPES:
            raise UsageError(f"Invalid entity type {kind}, the entity type must be one of "
                             f"{', '.join(ENTITY_TYPES)} with a --bootstrap-server argument")
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1:
        raise UsageError("Only 'users' and 'clients' entity types may be specified together")
    if (args.entity_name or args.entity_type or args.entity_default) and (
            args.group is not None or args.topic is not None or args.broker is not None or args.broker_defaults):
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    kind = types[0]
    if kind == "brokers":
        for broker_id in [*args.entity_name, *([args.broker] if args.broker is not None else [])]:
            if not _is_int(broker_id):
                raise UsageError(f"The entity name for brokers must be a valid integer broker id, but it is: "
                                 f"{broker_id}")
    if args.describe and args.entity_default and kind != "brokers":
        raise UsageError(f"--entity-default must not be specified with --describe of {kind}")
    if args.alter:
        has_name = any(names)
        if kind == "brokers":
            if not has_name and "" not in names:
                raise UsageError("An entity-name or default entity must be specified with --alter of users, "
                                 "clients, brokers or ips")
        elif not has_name:
            raise UsageError(f"An entity name must be specified with --alter of {kind}")
        if args.add_config is not None and args.add_config_file is not None:
            raise UsageError("Only one of --add-config or --add-config-file must be specified")
        if args.add_config is None and args.add_config_file is None and not args.delete_config:
            raise UsageError("At least one of --add-config, --add-config-file, or --delete-config must be "
                             "specified with --alter")
        if len(types) != len(names):
            raise UsageError("An entity name must be specified for every entity type")


def _is_int(text: str) -> bool:
    """Java's Integer.parseInt: ASCII digits with an optional sign, within 32 bits."""
    return re.fullmatch(r"[+-]?[0-9]+", text) is not None and -2**31 <= int(text) < 2**31


def parse_add_config(text: str) -> dict[str, str]:
    """--add-config as ConfigCommand.parseConfigsToBeAdded reads it: 'k1=v1,k2=[v1,v2]' -> {k1: v1, k2: 'v1,v2'}."""
    out = {}
    for item in re.split("," + _OUTSIDE_BRACKETS, text):
        pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item)
        if len(pair) != 2:
            raise ConfigCommandError('Invalid entity config: all configs to be added must be in the format '
                                     '"key=val" or  "key=[val1,val2]" to group values which contain commas.')
        out[pair[0].strip()] = re.sub(r"\[?\]?", "", pair[1]).strip()
    return out


def read_properties(path: str) -> dict[str, str]:
    """--add-config-file: a properties file, read as ``groupcoord serve --config`` reads one."""
    try:
        return coordinator_config.read_properties(path)
    except (coordinator_config.ConfigError, OSError, UnicodeDecodeError) as exc:
        raise ConfigCommandError(f"--add-config-file {path}: {exc}") from None


def configs_to_add(args) -> dict[str, str]:
    configs = read_properties(args.add_config_file) if args.add_config_file is not None else {}
    if args.add_config is not None:
        configs.update(parse_add_config(args.add_config))
    for key in configs:
        if not _KEY.fullmatch(key):
            raise ConfigCommandError(f"Invalid character found for config key: {key}")
    return configs


def configs_to_delete(args) -> list[str]:
    return [name.strip() for item in args.delete_config for name in item.split(",")]


def topic_problem(name: str) -> str | None:
    """Kafka's Topic.validate, in its words (an InvalidTopicException)."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > 249:
        return f"Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
    if not _LEGAL_TOPIC.fullmatch(name):
        return (f'Topic name "{name}" is illegal, it contains a character other than ASCII alphanumerics, '
                f"'.', '_' and '-'")
    return None


# ------------------------------------------------------------------------------- the command
def run_configs(args) -> int:
    if not _named(args) and not (args.describe or args.alter or args.add_config or args.delete_config
                                 or args.add_config_file or args.bootstrap_server):
        return list_broker_configs(args.profile)
    if args.profile is not None:
        _err("--profile lists the broker configs without a server: it takes no entity or action")
        _err("See 'groupcoord configs --help'.")
        return 2
    argv = " ".join(getattr(args, "argv", [])[1:])      # the tool's arguments, its name left out
    try:
        check_options(args)
        return asyncio.run(_configs(args))
    except UsageError as exc:
        _err(str(exc))
        _err("See 'groupcoord configs --help'.")
        return 2
    except ConfigCommandError as exc:
        _err(str(exc))
        return 1
    except KafkaError as exc:
        if exc.code in (ErrorCode.INVALID_CONFIG, ErrorCode.UNSUPPORTED_VERSION):
            _err(exc.message)       # InvalidConfigurationException, UnsupportedVersionException: the message
        else:
            _err(f"Error while executing config command with args '{argv}'")
            _err(f"java.util.concurrent.ExecutionException: {_java(exc)}")
        return 1
    except (AdminError, ProtocolError) as exc:
        _err(f"Error while executing config command with args '{argv}'")
        _err(str(exc))
        return 1


def list_broker_configs(profile: str | None) -> int:
    """Every broker config groupcoord knows, with its value under the profile (Kafka's spelling of
    values: true/false) and what it does; no server, no client."""
    if profile is not None and profile not in PROFILES:
        _err(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
        return 2
    values = PROFILES[profile or "default"]
    for key, setting in sorted(SETTINGS.items()):
        value = values.get(key, setting.default)
        print(f"{key} = {str(value).lower() if isinstance(value, bool) else value}    # {setting.doc}")
    return 0


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _java(exc: KafkaError) -> str:
    code = exc.code
    name = code.exception_name if isinstance(code, ErrorCode) else "UnknownServerException"
    return f"org.apache.kafka.common.errors.{name}: {exc.message}"


async def _configs(args) -> int:
    types, names = _entities(args)
    kind, name = types[0], (names[0] if names else None)
    async with AdminClient(args.bootstrap_server or DEFAULT_BOOTSTRAP, client_id="groupcoord-configs",
                           timeout_ms=args.timeout) as admin:
        if args.alter:
            return await _alter(admin, args, kind, name)
        return await _describe(admin, kind, name, args.all)


async def _alter(admin: AdminClient, args, kind: str, name: str) -> int:
    add, delete = configs_to_add(args), configs_to_delete(args)
    if kind == "topics" and topic_problem(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, topic_problem(name))
    await admin.incremental_alter_configs(RESOURCE_TYPES[kind], name, add, delete)
    if name:
        print(f"Completed updating config for {kind[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {kind} in the cluster.")
    return 0


async def _describe(admin: AdminClient, kind: str, name: str | None, describe_all: bool) -> int:
    """ConfigCommand.describeResourceConfig: one entity, or every one of its type."""
    if name is not None and kind == "topics" and topic_problem(name):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, topic_problem(name))
    if name is not None and not describe_all and not await _exists(admin, kind, name):
        print(f"The {kind[:-1]} '{name}' doesn't exist and doesn't have dynamic config.")
        return 0
    entities = [name] if name is not None else await _every(admin, kind)
    for entity in entities:
        if kind == "brokers" and entity == "":
            print(f"Default configs for {kind} in the cluster are:")
        else:
            print(f"{'All' if describe_all else 'Dynamic'} configs for {kind[:-1]} {entity} are:")
        source = _BROKER_DEFAULT_SOURCE if kind == "brokers" and entity == "" else _DYNAMIC[kind]
        entries = await admin.describe_configs(RESOURCE_TYPES[kind], entity)
        for entry in sorted(entries, key=lambda e: e.name):
            if describe_all or entry.source == source:
                print(f"  {_line(entry)}")
    return 0


def _line(entry: ConfigEntry) -> str:
    synonyms = ", ".join(f"{s}:{n}={_java_str(v)}" for n, v, s in entry.synonyms)
    return f"{entry.name}={_java_str(entry.value)} sensitive={str(entry.sensitive).lower()} synonyms={{{synonyms}}}"


def _java_str(value: str | None) -> str:
    return "null" if value is None else value


async def _group_config_resources(admin: AdminClient) -> set[str] | None:
    """The groups with dynamic configs (ListConfigResources v1); None where the cluster cannot say
    (before Kafka 4.1), as ConfigCommand.listGroupConfigResources treats it."""
    try:
        listed = await admin.list_config_resources([RESOURCE_TYPES["groups"]])
    except KafkaError as exc:
        if exc.code in (ErrorCode.UNSUPPORTED_VERSION, ErrorCode.CLUSTER_AUTHORIZATION_FAILED):
            return None
        raise
    return {n for n, t in listed if t == RESOURCE_TYPES["groups"]}


async def _exists(admin: AdminClient, kind: str, name: str) -> bool:
    if kind == "topics":
        return name in await admin.describe_topics()
    if kind == "brokers":
        return name == "" or name in {str(node_id) for node_id in await admin.brokers()}
    if any(g.group_id == name for g in await admin.list_groups(protocol_types=None)):
        return True
    with_configs = await _group_config_resources(admin)
    return with_configs is None or name in with_configs


async def _every(admin: AdminClient, kind: str) -> list[str]:
    if kind == "topics":
        return sorted(await admin.describe_topics())
    if kind == "brokers":
        return [str(i) for i in sorted(await admin.brokers())] + [""]
    groups = {g.group_id for g in await admin.list_groups(protocol_types=None)}
    return sorted(groups | (await _group_config_resources(admin) or set()))
