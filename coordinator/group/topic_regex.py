"""Regular-expression subscriptions of consumer groups (KIP-848): compiling a member's
SubscribedTopicRegex and resolving regexes against the topics of the metadata image.

After Kafka 4.x: ``Utils.throwIfRegularExpressionIsInvalid`` (in ``GroupMetadataManager`` in 4.0)
and ``TopicRegexResolver.resolveRegularExpressions`` (``refreshRegularExpressions`` in 4.0).
Kafka compiles with RE2J (``com.google.re2j.Pattern``) and matches a topic name with
``matcher(name).matches()``: the whole name must match (``^t`` does not match ``t0``). Here RE2
itself (the ``google-re2`` package) compiles with its default, Perl-like options, and
``fullmatch`` matches; RE2J is a port of Go's RE2, so the syntax is the same. Known differences:
RE2's error texts are not RE2J's (they are mapped to RE2J's, :data:`RE2J_ERRORS`, as Kafka's
message quotes RE2J's ``getDescription()``); RE2 accepts ``\\C`` and a repeated group name, which
RE2J refuses; RE2 refuses patterns whose program exceeds its memory budget, RE2J has none.

The metadata image of groupcoord holds no ``__consumer_offsets`` topic, so ``.*`` does not match
it (on Kafka it does: Kafka resolves against every topic of its image, internal ones included).
"""
from __future__ import annotations

import functools
from typing import Callable, Iterable

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False          # (RE2 logs every syntax error to stderr otherwise)

#: RE2's error code texts -> RE2J's (``Parser.ERR_*``): what Kafka's message quotes.
RE2J_ERRORS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "missing closing )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid character class": "invalid character class range",
    "invalid named capture group": "invalid named capture",
}


class InvalidRegex(ValueError):
    """A regular expression that does not compile; ``description`` is RE2J's text of the error."""

    def __init__(self, regex: str, description: str):
        super().__init__(description)
        self.regex = regex
        self.description = description


def _description(error: re2.error) -> str:
    text = error.args[0] if error.args else ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    code = str(text).split(": ", 1)[0]          # RE2: "<code text>: <the offending part>"
    return RE2J_ERRORS.get(code, code)


@functools.lru_cache(maxsize=1024)
def compile_regex(regex: str):
    """The compiled regex (cached), or :class:`InvalidRegex`."""
    try:
        return re2.compile(regex, _OPTIONS)
    except re2.error as e:
        raise InvalidRegex(regex, _description(e)) from None


def invalid_regex_message(regex: str) -> str | None:
    """Kafka's INVALID_REGULAR_EXPRESSION message for a regex that does not compile, else None
    (``throwIfRegularExpressionIsInvalid``, Kafka 4.0)."""
    try:
        compile_regex(regex)
    except InvalidRegex as e:
        return f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e.description}."
    return None


def resolve(regexes: Iterable[str], topic_names: Iterable[str],
            describable: Callable[[str], bool] | None = None) -> dict[str, frozenset[str]]:
    """``resolveRegularExpressions``: for each regex, the topic names it matches whole; with
    ``describable`` (the member's principal may DESCRIBE the topic; None without an authorizer)
    the topics it may not describe are dropped from every regex, each topic asked once (Kafka's
    ``filterTopicDescribeAuthorizedTopics``). A regex that does not compile matches nothing (Kafka
    logs it and ignores it: it was checked when a member brought it)."""
    found: dict[str, set[str]] = {}
    compiled = []
    for regex in regexes:
        found[regex] = set()
        try:
            compiled.append((regex, compile_regex(regex)))
        except InvalidRegex:
            pass
    for name in topic_names:
        for regex, pattern in compiled:
            if pattern.fullmatch(name) is not None:
                found[regex].add(name)
    if describable is not None:
        matched = set().union(*found.values())
        denied = {name for name in matched if not describable(name)}
        if denied:
            for topics in found.values():
                topics -= denied
    return {regex: frozenset(topics) for regex, topics in found.items()}
