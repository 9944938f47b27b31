"""One target's startup log and launch receipt, read each round: the receipt again (a
small file the launcher rewrites), the log by its appended bytes only.

As ``vllm-evidence probe --receipt`` does, the receipt is read first (its signature
checked under the launcher's public key, when one is given: an unsigned or unchecked
receipt joins no log) and the log only up to the receipt's ``log_bytes``: the receipt
digests that prefix, and the log keeps growing after it is written.  A receipt that
covers fewer bytes than were read (a new launch's receipt, its log emptied and written
again) reads the log from its start; so does a rotated, truncated or rewritten log
(:mod:`vllm_evidence._capture.follow`).  A log that is missing or unreadable gives no log
this round: the bytes read before are not evidence of what the file holds now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import attrs

from vllm_evidence._adapters.receipt import LaunchReceipt, read_launch_receipt
from vllm_evidence._adapters.startup_log import StartupLog
from vllm_evidence._adapters.startup_log.followed import FollowedStartupLog
from vllm_evidence._capture.follow import MAX_POLL_BYTES, FollowState, LogFollower
from vllm_evidence._capture.log import LogReadFailureReason
from vllm_evidence.errors import InputError
from vllm_evidence.watch._round import LogView, _mint_log_view

if TYPE_CHECKING:
    from vllm_evidence._capture.signing import VerificationKey

__all__ = ["LogRead", "TargetLog"]


@final
@attrs.frozen
class LogRead:
    """What one round read of a target's log and receipt."""

    log: StartupLog | None
    receipt: LaunchReceipt | None
    view: LogView
    problems: tuple[str, ...]


class TargetLog:
    """A target's followed log (and receipt), read once a round by :meth:`read`."""

    def __init__(
        self,
        path: str,
        receipt: str | None,
        *,
        receipt_key: VerificationKey | None = None,
        max_poll_bytes: int = MAX_POLL_BYTES,
    ) -> None:
        self.path = path
        self.receipt_path = receipt
        self._receipt_key = receipt_key
        self._follower = LogFollower(path, max_bytes=max_poll_bytes)
        self._reader = FollowedStartupLog(path)

    def read(self) -> LogRead:
        """The receipt, then the log's appended bytes (see the module).  Never raises for
        what the files hold: each problem is one line of the result."""
        problems: list[str] = []
        receipt = None
        if self.receipt_path is not None:
            try:
                receipt = read_launch_receipt(self.receipt_path, verification_key=self._receipt_key)
            except InputError as exc:
                problems.append(str(exc))
        poll = self._follower.poll(limit=None if receipt is None else receipt.log_bytes)
        if poll.restart:
            self._reader.reset()
        log: StartupLog | None = None
        detail = poll.detail
        if poll.state is FollowState.FOLLOWING:
            self._reader.feed(poll.data)
            read = self._reader.startup_log()
            if isinstance(read, StartupLog):
                log = read
            else:
                detail = read.describe()
                if read.reason is not LogReadFailureReason.EMPTY:  # a launch not begun yet
                    problems.append(detail)
        else:
            self._reader.reset()
            problems.append(f"startup log {self.path}: {poll.state.value} ({poll.detail})")
        if (
            receipt is not None
            and poll.state is FollowState.FOLLOWING
            and poll.offset < receipt.log_bytes
        ):
            behind = f"read {poll.offset:,} of the {receipt.log_bytes:,} bytes the receipt covers"
            detail = behind if detail is None else f"{detail}; {behind}"
        view = _mint_log_view(
            state=poll.state,
            event=poll.event,
            read_bytes=poll.offset,
            file_bytes=poll.file_bytes,
            detail=detail,
        )
        return LogRead(log=log, receipt=receipt, view=view, problems=tuple(problems))
