"""Taking a new assignment, with either protocol: the auto-commit before anything is given up, the
listener's ``onPartitionsRevoked`` with what goes, then the new assignment and
``onPartitionsAssigned`` with what was added. The classic protocol runs these stages after a
SyncGroup (ConsumerCoordinator.onJoinComplete, :class:`~.membership.Membership`), the consumer
protocol for each target it reconciles (AbstractMembershipManager.maybeReconcile,
:class:`~.consumer_protocol.ConsumerMembership`); :class:`Completing` is what both share, and
each says what it commits, what it does as the assignment is taken and once it is done."""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .actions import PartitionsAssigned, PartitionsRevoked


class CompletionStage(enum.Enum):
    COMMIT = "commit"                       # commit the partitions about to be revoked
    REVOKE = "revoke"                       # the listener's onPartitionsRevoked
    ASSIGN = "assign"                       # take the assignment, onPartitionsAssigned


@dataclass
class Completion:
    """A new assignment being taken (a protocol's own fields in a subclass, keyword-only)."""
    assigned: frozenset
    added: frozenset
    revoked: frozenset
    deadline: int                           # the commit is waited for until then
    stage: CompletionStage = CompletionStage.COMMIT
    commit_started: bool = False
    commit: int | None = None               # the commit's handle while it runs
    token: int | None = None                # the listener callback's while it runs


class Completing:
    """The stages of ``completion`` and the listener's callbacks, for a membership that has
    ``member``, ``completion``, ``callbacks_pending`` and ``rebalance_timeout_ms``."""

    def callback(self, cls, partitions) -> int:
        """Hand the rebalance listener a callback; the rebalance waits for its token."""
        net = self.member.net
        token = next(net.ids)
        self.callbacks_pending.add(token)
        net.actions.append(cls(token, frozenset(partitions)))
        return token

    def completion_offsets(self, c: Completion) -> dict:
        """What the auto-commit commits before the revocation (nothing: no commit)."""
        raise NotImplementedError

    def assigning(self, c: Completion, now: int) -> None:
        """Just before the member takes ``c.assigned``."""

    def completed(self, c: Completion, now: int) -> None:
        """Once onPartitionsAssigned has run (``completion`` is None again)."""

    def step_completion(self, now: int) -> None:
        """Commit (auto-commit on; retried until the deadline, a failure does not stop the rest),
        onPartitionsRevoked with what goes (if anything does), the new assignment and
        onPartitionsAssigned with what was added (even if nothing was, as Kafka does)."""
        member = self.member
        c = self.completion
        if c.stage is CompletionStage.COMMIT:
            commits = member.commits
            if not c.commit_started:
                c.commit_started = True
                if commits.auto_commit:
                    offsets = self.completion_offsets(c)
                    if offsets:
                        c.commit = commits.start(offsets, "rebalance", now, retry=True,
                                                 timeout_ms=self.rebalance_timeout_ms)
            if c.commit is not None:
                op = commits.op(c.commit)
                if op is not None and not op.done and now < c.deadline:
                    return
            c.stage = CompletionStage.REVOKE
        if c.stage is CompletionStage.REVOKE:
            if c.token is None and c.revoked:
                member.pending_revocation |= c.revoked
                c.token = self.callback(PartitionsRevoked, c.revoked)
            if c.token in self.callbacks_pending:
                return
            member.set_assignment(member.assignment - c.revoked)
            c.stage, c.token = CompletionStage.ASSIGN, None
        if c.stage is CompletionStage.ASSIGN:
            if c.token is None:
                self.assigning(c, now)
                member.set_assignment(c.assigned)
                member.offsets.need_committed |= set(c.added) - set(member.positions)
                c.token = self.callback(PartitionsAssigned, c.added)
            if c.token in self.callbacks_pending:
                return
            self.completion = None
            self.completed(c, now)
