"""SASL/PLAIN authentication and ACL authorization, as a Kafka broker does them.

Authentication (``sasl.enabled.mechanisms=PLAIN``): the users come from Kafka's
PlainLoginModule JAAS line (``listener.name.sasl_plaintext.plain.sasl.jaas.config``,
``user_<name>="<password>"`` options) and from ``groupcoord.sasl.users`` (``name:password,...``).
Each connection goes through the state machine of Kafka's ``SaslServerAuthenticator``:
an optional ApiVersions, SaslHandshake v1, then SaslAuthenticate; any other request before
that closes the connection (:meth:`Security.gate`, a ``Service.before_request`` hook). A failed
authentication is answered SASL_AUTHENTICATION_FAILED after
``connection.failed.authentication.delay.ms`` and the connection is closed. The principal of
an authenticated connection is ``User:<name>``; without SASL it is ``User:ANONYMOUS``.
SaslHandshake v0 (raw SASL tokens after it) is not spoken.

Authorization (``authorizer.class.name`` non-empty or ``groupcoord.acls.enabled=true``):
ACL bindings with the semantics of Kafka's ``StandardAuthorizer``: super users may do
anything; a matching DENY wins over any ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER
implies DESCRIBE (ALTER_CONFIGS implies DESCRIBE_CONFIGS); ``User:*`` matches every principal,
host ``*`` every host, LITERAL ``*`` every resource name, PREFIXED a name prefix; a resource
no ACL matches (for any principal) is allowed only with ``allow.everyone.if.no.acl.found``.
"""
from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass, fields
from typing import Iterable, Mapping

import structlog
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.errors import ErrorCode
from groupcoord.protocol.messages import APIS

from .config import ConfigError
from .context import Verdict

log = structlog.get_logger("groupcoord.security")

ANONYMOUS = "User:ANONYMOUS"
CLUSTER_NAME = "kafka-cluster"
MECHANISMS = ("PLAIN",)
API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = (int(ApiKey.API_VERSIONS), int(ApiKey.SASL_HANDSHAKE),
                                                    int(ApiKey.SASL_AUTHENTICATE))

# ---- Kafka's ACL enums (AclOperation, ResourceType, PatternType, AclPermissionType) -----------------
OPERATIONS = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8,
              "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
PERMISSION_TYPES = ("ALLOW", "DENY")
READ, WRITE, DELETE, ALTER, DESCRIBE = "READ", "WRITE", "DELETE", "ALTER", "DESCRIBE"
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = RESOURCE_TYPES
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"

#: ``AclEntry.supportedOperations``: what DescribeGroups' AuthorizedOperations ranges over
SUPPORTED_OPERATIONS = {
    TOPIC: ("READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"),
    GROUP: ("READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"),
    CLUSTER: ("CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER",
              "DESCRIBE"),
    TRANSACTIONAL_ID: ("DESCRIBE", "WRITE"),
}
_IMPLIES = {"DESCRIBE": {"DESCRIBE", "READ", "WRITE", "DELETE", "ALTER"},
            "DESCRIBE_CONFIGS": {"DESCRIBE_CONFIGS", "ALTER_CONFIGS"}}


# ---- users --------------------------------------------------------------------------------------------
class SaslAuthenticationError(Exception):
    """A SASL/PLAIN exchange failed; the message is what the client is told (as Kafka words it)."""


def parse_plain_token(token: bytes) -> tuple[str, str, str]:
    """RFC 4616 ``[authzid] NUL authcid NUL passwd`` -> (authzid, authcid, passwd), as
    Kafka's ``PlainSaslServer`` splits it."""
    try:
        text = bytes(token).decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
    tokens = text.split("\0", 3)
    if len(tokens) != 3:
        raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(tokens)}")
    return tokens[0], tokens[1], tokens[2]


_JAAS_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'|([=;])|([^\s=;"\']+))', re.S)
_PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")


def _jaas_tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _JAAS_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ConfigError(f"JAAS config: unexpected text at {text[pos:pos + 20]!r}")
        pos = m.end()
        quoted = m.group(1) if m.group(1) is not None else m.group(2)
        if quoted is not None:
            out.append(("value", re.sub(r"\\(.)", r"\1", quoted)))
        elif m.group(3):
            out.append((m.group(3), m.group(3)))
        elif m.group(4):
            out.append(("word", m.group(4)))
    return out


def parse_jaas_users(text: str) -> dict[str, str]:
    """The ``user_<name>="<password>"`` options of one PlainLoginModule JAAS entry
    (``<module> <flag> key="value" ... ;``)."""
    tokens = _jaas_tokens(text)
    if len(tokens) < 3 or tokens[0][0] != "word" or tokens[1][0] != "word" or tokens[-1][0] != ";":
        raise ConfigError("JAAS config: expected '<LoginModule> required key=\"value\" ... ;'")
    module, flag = tokens[0][1], tokens[1][1]
    if module != _PLAIN_LOGIN_MODULE:
        raise ConfigError(f"JAAS config: login module {module!r} is not supported; use {_PLAIN_LOGIN_MODULE}")
    if flag.lower() not in _FLAGS:
        raise ConfigError(f"JAAS config: bad control flag {flag!r}; expected one of {', '.join(_FLAGS)}")
    users: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise ConfigError("JAAS config: options must be key=value pairs")
    for i in range(0, len(body), 3):
        (kk, key), (ek, _), (vk, value) = body[i:i + 3]
        if kk != "word" or ek != "=" or vk not in ("value", "word"):
            raise ConfigError(f"JAAS config: bad option near {key!r}")
        if key.startswith("user_") and len(key) > 5:
            users[key[5:]] = value
    return users


def parse_users(text: str) -> dict[str, str]:
    """``name:password,name:password`` -> {name: password}."""
    users: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, password = item.partition(":")
        if not sep or not name or not password:
            raise ConfigError(f"groupcoord.sasl.users: expected name:password, got {item!r}")
        users[name] = password
    return users


class UserDatabase:
    """SASL/PLAIN users and the check of ``PlainSaslServer.evaluateResponse``."""

    def __init__(self, users: Mapping[str, str] | None = None):
        self.users = dict(users or {})

    def authenticate(self, token: bytes) -> str:
        """The authenticated user name, or SaslAuthenticationError with Kafka's message."""
        authzid, username, password = parse_plain_token(token)
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        if self.users.get(username) != password:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        return username


# ---- ACLs -----------------------------------------------------------------------------------------------
def _enum(name: str, value, allowed: Iterable[str], strict: bool = False) -> str:
    """An enum value by name (any case unless strict)."""
    allowed = tuple(allowed)
    if not isinstance(value, str) or (value if strict else value.upper()) not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value.upper()


def check_principal(value) -> str:
    if not isinstance(value, str) or ":" not in value or not value.split(":", 1)[0] or not value.split(":", 1)[1]:
        raise ValueError(f"principal must be 'Type:name' (e.g. User:alice or User:*), got {value!r}")
    return value


@dataclass(frozen=True)
class Acl:
    """One ACL binding, by Kafka's field names."""
    principal: str
    resource_type: str
    resource_name: str
    operation: str
    permission_type: str = "ALLOW"
    pattern_type: str = "LITERAL"
    host: str = WILDCARD

    @classmethod
    def from_dict(cls, d, *, strict: bool = False) -> "Acl":
        """Validate a JSON object; ValueError names the bad field. Enum values in any case
        unless strict (the admin API documents them upper-case)."""
        if not isinstance(d, Mapping):
            raise ValueError("an ACL must be a JSON object")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown ACL field(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        for key in ("principal", "resource_type", "resource_name", "operation"):
            if key not in d:
                raise ValueError(f"an ACL needs {key!r}")
        name = d["resource_name"]
        if not isinstance(name, str) or not name:
            raise ValueError("resource_name must be a non-empty string ('*' for every resource)")
        host = d.get("host", WILDCARD)
        if not isinstance(host, str) or not host:
            raise ValueError("host must be '*' or an IP address")
        acl = cls(principal=check_principal(d["principal"]),
                  resource_type=_enum("resource_type", d["resource_type"], RESOURCE_TYPES, strict),
                  resource_name=name,
                  operation=_enum("operation", d["operation"], OPERATIONS, strict),
                  permission_type=_enum("permission_type", d.get("permission_type", "ALLOW"), PERMISSION_TYPES,
                                        strict),
                  pattern_type=_enum("pattern_type", d.get("pattern_type", "LITERAL"), PATTERN_TYPES, strict),
                  host=host)
        if acl.resource_type == CLUSTER and acl.resource_name != CLUSTER_NAME:
            raise ValueError(f"the only valid name of the CLUSTER resource is {CLUSTER_NAME}")
        if acl.operation != "ALL" and acl.operation not in SUPPORTED_OPERATIONS[acl.resource_type]:
            raise ValueError(f"operation {acl.operation} does not apply to a {acl.resource_type}; "
                             f"valid: ALL, {', '.join(SUPPORTED_OPERATIONS[acl.resource_type])}")
        return acl

    def as_dict(self) -> dict:
        return {"principal": self.principal, "host": self.host, "resource_type": self.resource_type,
                "resource_name": self.resource_name, "pattern_type": self.pattern_type,
                "operation": self.operation, "permission_type": self.permission_type}

    def matches_resource(self, resource_type: str, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == "LITERAL":
            return self.resource_name == name or self.resource_name == WILDCARD
        return name.startswith(self.resource_name)

    def verdict(self, principal: str, host: str, operation: str) -> str | None:
        """ALLOW or DENY if this ACL applies to the principal, host and operation, else None
        (``StandardAuthorizerData.findResult``)."""
        if self.principal != principal and self.principal != WILDCARD_PRINCIPAL:
            return None
        if self.host != WILDCARD and self.host != host:
            return None
        if self.operation != "ALL":
            if self.permission_type == "ALLOW" and operation in _IMPLIES:
                if self.operation not in _IMPLIES[operation]:
                    return None
            elif self.operation != operation:
                return None
        return self.permission_type


FILTER_FIELDS = ("principal", "host", "resource_type", "resource_name", "pattern_type", "operation",
                 "permission_type")
_ENUM_FIELDS = {"resource_type": RESOURCE_TYPES, "pattern_type": PATTERN_TYPES, "operation": tuple(OPERATIONS),
                "permission_type": PERMISSION_TYPES}


def make_filter(spec: Mapping[str, str]) -> dict[str, str]:
    """A filter of exact field values (enums by their upper-case names); ValueError names a bad one."""
    out = {}
    for key, value in spec.items():
        if key not in FILTER_FIELDS:
            raise ValueError(f"unknown filter {key!r}; known: {', '.join(FILTER_FIELDS)}")
        if key in _ENUM_FIELDS:
            out[key] = _enum(key, value, _ENUM_FIELDS[key], strict=True)
        elif not isinstance(value, str) or not value:
            raise ValueError(f"filter {key!r} must be a non-empty string")
        else:
            out[key] = value
    return out


class Authorizer:
    """ACL bindings and the decisions of Kafka's StandardAuthorizer."""

    def __init__(self, acls: Iterable[Acl] = (), *, super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl_found: bool = False):
        self._acls: dict[Acl, None] = {}
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.add(acls)

    # ---- bindings --------------------------------------------------------------------------------------
    def add(self, acls: Iterable[Acl]) -> list[Acl]:
        """Add bindings (an existing one is kept once); returns them."""
        acls = list(acls)
        for acl in acls:
            self._acls[acl] = None
        return acls

    def acls(self, filter: Mapping[str, str] | None = None) -> list[Acl]:
        flt = filter or {}
        return [a for a in self._acls if all(getattr(a, k) == v for k, v in flt.items())]

    def remove(self, filter: Mapping[str, str] | None = None) -> list[Acl]:
        gone = self.acls(filter)
        for acl in gone:
            del self._acls[acl]
        return gone

    # ---- decisions -------------------------------------------------------------------------------------
    def authorize(self, principal: str, host: str, operation: str, resource_type: str, name: str,
                  *, log_denied: bool = True) -> bool:
        if principal in self.super_users:
            return True
        found = allowed = False
        for acl in self._acls:
            if not acl.matches_resource(resource_type, name):
                continue
            found = True
            result = acl.verdict(principal, host, operation)
            if result == "DENY":
                allowed = False
                break
            if result == "ALLOW":
                allowed = True
        else:
            if not found:
                allowed = self.allow_everyone_if_no_acl_found
        if not allowed and log_denied:
            log.info("authorization_denied", principal=principal, host=host, operation=operation,
                     resource_type=resource_type, resource_name=name)
        return allowed

    def authorized_operations(self, principal: str, host: str, resource_type: str, name: str) -> int:
        """The 32-bit field of AclOperation codes allowed (``AuthHelper.authorizedOperations``)."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(principal, host, op, resource_type, name, log_denied=False):
                bits |= 1 << OPERATIONS[op]
        return bits


def load_acls_file(path: str) -> list[Acl]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise ConfigError(f"groupcoord.acls.file: cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"groupcoord.acls.file: {path} is not JSON: {exc}") from None
    if not isinstance(data, list):
        raise ConfigError(f"groupcoord.acls.file: {path} must hold a JSON list of ACL objects")
    acls = []
    for i, item in enumerate(data):
        try:
            acls.append(Acl.from_dict(item))
        except ValueError as exc:
            raise ConfigError(f"groupcoord.acls.file: {path}: ACL #{i}: {exc}") from None
    return acls


# ---- SASL state per connection (SaslServerAuthenticator.SaslState) -----------------------------------------
INITIAL_REQUEST, HANDSHAKE_REQUEST, AUTHENTICATE, COMPLETE, FAILED = (
    "INITIAL_REQUEST", "HANDSHAKE_REQUEST", "AUTHENTICATE", "COMPLETE", "FAILED")


class SaslSession:
    __slots__ = ("state", "mechanism")

    def __init__(self) -> None:
        self.state = INITIAL_REQUEST
        self.mechanism: str | None = None


def _api_name(api_key: int) -> str:
    api = APIS.get(api_key)
    name = api.name if api is not None else str(api_key)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


#: how long a connection that failed authentication stays open after its answer (unless the
#: client closes it first): a FIN right behind the answer can make a client drop the answer
#: (kafka-python 3 discards data read together with the end of the stream)
CLOSE_GRACE_S = 0.2


def close_after_response(connection) -> None:
    """Close a connection shortly after the response being produced now is written."""
    if connection is None:
        return
    close_after = getattr(connection, "close_after", None)     # a driver's connection keeps the time
    if close_after is not None:
        close_after(CLOSE_GRACE_S)
    else:
        connection.close()


class Security:
    """What a Service knows about authentication and authorization (``service.security``)."""

    def __init__(self, *, mechanisms: Iterable[str] = (), users: Mapping[str, str] | None = None,
                 authorizer: Authorizer | None = None, failed_authentication_delay_ms: int = 100):
        self.mechanisms = list(mechanisms)
        self.users = UserDatabase(users)
        self.authorizer = authorizer
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        self._sessions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    @property
    def sasl_enabled(self) -> bool:
        return bool(self.mechanisms)

    @classmethod
    def from_config(cls, config) -> "Security":
        mechanisms = [m.strip() for m in config["sasl.enabled.mechanisms"].split(",") if m.strip()]
        for m in mechanisms:
            if m not in MECHANISMS:
                raise ConfigError(f"sasl.enabled.mechanisms: {m!r} is not supported; groupcoord speaks "
                                  f"{', '.join(MECHANISMS)}")
        users: dict[str, str] = {}
        jaas = config["listener.name.sasl_plaintext.plain.sasl.jaas.config"].strip()
        if jaas:
            users.update(parse_jaas_users(jaas))
        users.update(parse_users(config["groupcoord.sasl.users"]))
        if mechanisms and not users:
            raise ConfigError("sasl.enabled.mechanisms=PLAIN needs users: set groupcoord.sasl.users=name:password,... "
                              "or listener.name.sasl_plaintext.plain.sasl.jaas.config with user_<name>=\"<password>\"")
        super_users = [p.strip() for p in config["super.users"].split(";") if p.strip()]
        for p in super_users:
            try:
                check_principal(p)
            except ValueError as exc:
                raise ConfigError(f"super.users: {exc}") from None
        authorizer = None
        acls_file = config["groupcoord.acls.file"].strip()
        if config["authorizer.class.name"].strip() or config["groupcoord.acls.enabled"]:
            authorizer = Authorizer(load_acls_file(acls_file) if acls_file else (), super_users=super_users,
                                    allow_everyone_if_no_acl_found=config["allow.everyone.if.no.acl.found"])
        elif acls_file:
            raise ConfigError("groupcoord.acls.file needs the authorizer: set groupcoord.acls.enabled=true "
                              "or authorizer.class.name")
        return cls(mechanisms=mechanisms, users=users, authorizer=authorizer,
                   failed_authentication_delay_ms=config["connection.failed.authentication.delay.ms"])

    def install(self, service) -> None:
        service.security = self
        if self.sasl_enabled:
            service.before_request.insert(0, self.gate)

    def session(self, connection) -> SaslSession:
        s = self._sessions.get(connection)
        if s is None:
            s = self._sessions[connection] = SaslSession()
        return s

    # ---- the connection gate ---------------------------------------------------------------------------
    def gate(self, ctx, body) -> Verdict | None:
        """``before_request`` hook: only the SASL exchange is let through an unauthenticated connection."""
        conn = ctx.connection
        if conn is None:
            return None
        s = self.session(conn)
        state = s.state
        if state == COMPLETE:
            return None
        key = ctx.api_key
        if state == FAILED:
            return Verdict(close=True, reason="request after a failed SASL authentication")
        if key == API_VERSIONS:
            if state == INITIAL_REQUEST:
                s.state = HANDSHAKE_REQUEST
                return None
            return Verdict(close=True, reason=f"Unexpected ApiVersions request received during SASL "
                                              f"authentication state {state}")
        if state in (INITIAL_REQUEST, HANDSHAKE_REQUEST):
            if key == SASL_HANDSHAKE:
                return None
            s.state = FAILED
            return Verdict(close=True,
                           reason=f"Unexpected Kafka request of type {_api_name(key)} during SASL handshake.")
        # AUTHENTICATE
        if key != SASL_AUTHENTICATE:
            s.state = FAILED
            return Verdict(close=True,
                           reason=f"Unexpected Kafka request of type {_api_name(key)} during SASL authentication.")
        if self.failed_authentication_delay_ms:
            try:
                self.users.authenticate(body.get("auth_bytes") or b"")
            except SaslAuthenticationError:
                return Verdict(delay_ms=self.failed_authentication_delay_ms)
        return None

    # ---- the exchange, driven by the SaslHandshake and SaslAuthenticate handlers -------------------------------
    def handshake(self, connection, version: int, mechanism: str) -> dict:
        """The SaslHandshake response body; the session moves on (or fails and the connection closes)."""
        if not self.sasl_enabled or connection is None or self.session(connection).state not in (
                INITIAL_REQUEST, HANDSHAKE_REQUEST):
            return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": []}   # as KafkaApis
        s = self.session(connection)
        if mechanism not in self.mechanisms:
            s.state = FAILED
            log.info("sasl_handshake_failed", reason=f"unsupported mechanism {mechanism!r}",
                     connection=getattr(connection, "conn_id", None))
            close_after_response(connection)
            return {"error_code": int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), "mechanisms": list(self.mechanisms)}
        if version == 0:
            # v0 is followed by raw SASL tokens, which the frame reader does not take
            s.state = FAILED
            log.warning("sasl_handshake_failed", reason="SaslHandshake v0 (raw SASL tokens) is not supported; "
                        "use a client with SaslAuthenticate (Kafka 1.0+)",
                        connection=getattr(connection, "conn_id", None))
            close_after_response(connection)
            return {"error_code": int(ErrorCode.UNSUPPORTED_VERSION), "mechanisms": list(self.mechanisms)}
        s.state = AUTHENTICATE
        s.mechanism = mechanism
        return {"error_code": 0, "mechanisms": list(self.mechanisms)}

    def authenticate(self, connection, auth_bytes: bytes) -> dict:
        """The SaslAuthenticate response body; on success the connection's principal is set."""
        if not self.sasl_enabled or connection is None or self.session(connection).state != AUTHENTICATE:
            return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "auth_bytes": b"", "session_lifetime_ms": 0,
                    "error_message": "SaslAuthenticate request received after successful authentication"}
        s = self.session(connection)
        try:
            user = self.users.authenticate(auth_bytes)
        except SaslAuthenticationError as exc:
            s.state = FAILED
            log.info("sasl_authentication_failed", reason=str(exc), connection=getattr(connection, "conn_id", None),
                     peer=getattr(connection, "client_host", None))
            close_after_response(connection)
            return {"error_code": int(ErrorCode.SASL_AUTHENTICATION_FAILED), "error_message": str(exc),
                    "auth_bytes": b"", "session_lifetime_ms": 0}
        s.state = COMPLETE
        connection.principal = f"User:{user}"
        connection.authenticated = True
        log.info("sasl_authenticated", principal=connection.principal, mechanism=s.mechanism,
                 connection=getattr(connection, "conn_id", None))
        return {"error_code": 0, "error_message": None, "auth_bytes": b"", "session_lifetime_ms": 0}


# ---- what handlers call ------------------------------------------------------------------------------------
def _host(ctx) -> str:
    host = ctx.client_host or ""
    return host[1:] if host.startswith("/") else host


def authorizer_of(ctx) -> Authorizer | None:
    security = getattr(ctx.service, "security", None)
    return None if security is None else security.authorizer


def authorize(ctx, operation: str, resource_type: str, name, *, log_denied: bool = True) -> bool:
    """May the request's principal do ``operation`` on the resource? Always, without an authorizer."""
    security = getattr(ctx.service, "security", None)
    if security is None:
        return True
    authorizer = security.authorizer
    if authorizer is None:
        return True
    return authorizer.authorize(ctx.principal, _host(ctx), operation, resource_type, name or "",
                                log_denied=log_denied)


def authorized_operations(ctx, resource_type: str, name: str, default: int) -> int:
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return default
    return authorizer.authorized_operations(ctx.principal, _host(ctx), resource_type, name)
