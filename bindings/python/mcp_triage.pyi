"""Type stubs for mcp_triage, the mcp-triage classifier and retry policy (a PyO3 extension)."""

from datetime import datetime
from typing import Any, Dict, Iterable, Literal, Mapping, Optional, Tuple, TypedDict, Union

__version__: str

Bytes = Union[bytes, bytearray, memoryview]
HeaderText = Union[str, bytes]
Headers = Union[Mapping[str, HeaderText], Iterable[Tuple[HeaderText, HeaderText]], None]
Now = Union[int, float, datetime, None]

class VerdictWarning(TypedDict):
    code: str
    detail: str

class Verdict(TypedDict, total=False):
    """The verdict JSON (docs/verdict.schema.json) as a dict; `layer` and `outcome` are always there."""

    layer: Literal["transport", "protocol", "interaction", "application"]
    outcome: str
    status: int
    code: int
    message: str
    resultType: str
    isError: bool
    retryAfterMs: int
    authChallenge: dict[str, str]
    stream: dict[str, Any]
    taskId: str
    limit: dict[str, Any]
    warnings: list[VerdictWarning]
    detail: str

class RetryDecision(TypedDict, total=False):
    action: Literal["done", "resend", "resume", "reinitialize", "relist_tools", "give_up"]
    delayMs: int
    reason: str
    lastEventId: str

class OutputSchema:
    """A tool's outputSchema compiled once; ValueError when it does not compile."""

    def __init__(self, schema: Union[Mapping[str, Any], bool]) -> None: ...

def classify(
    status: int,
    headers: Headers,
    body: Bytes,
    *,
    expect_id: Union[int, str] = 1,
    protocol_version: str = "unknown",
    output_schema: Union[Mapping[str, Any], bool, OutputSchema, None] = None,
    now: Now = None,
    limits: Optional[Mapping[str, int]] = None,
    method: str = "tools/call",
) -> Verdict:
    """Classifies one complete response to a tools/call; any bytes give a verdict. `method`
    "tasks/get" judges a task poll's answer (the task's state) instead of a tool result."""

def classify_exchange_line(
    line: Union[Bytes, str],
    *,
    now: Now = None,
    limits: Optional[Mapping[str, int]] = None,
) -> Verdict:
    """One line of an exchange or capture file, read and classified as `classify --batch` does;
    ValueError naming what is wrong when the line is not an exchange."""

def count_exchange_line(
    line: Union[Bytes, str],
    *,
    now: Now = None,
    limits: Optional[Mapping[str, int]] = None,
) -> Dict[str, Any]:
    """classify_exchange_line, and what classify --batch counts the line as:
    {"kind": method or "(not JSON-RPC)", "counted": outcome or RESULT/ACCEPTED/FORWARDED,
    "verdict": {...}}."""

class StreamClassifier:
    """The incremental classifier: feed chunks, stop once is_decided, then finish() or interrupted()."""

    def __init__(
        self,
        status: int,
        headers: Headers,
        *,
        expect_id: Union[int, str] = 1,
        protocol_version: str = "unknown",
        output_schema: Union[Mapping[str, Any], bool, OutputSchema, None] = None,
        now: Now = None,
        limits: Optional[Mapping[str, int]] = None,
        method: str = "tools/call",
    ) -> None: ...
    def feed(self, chunk: Bytes) -> None: ...
    @property
    def is_decided(self) -> bool: ...
    def finish(self) -> Verdict: ...
    def interrupted(self, reason: str, *, timed_out: bool = False) -> Verdict: ...

def decide_retry(
    verdict: Mapping[str, Any],
    hints: Optional[Mapping[str, Any]] = None,
    delivery: Literal["never_sent", "sent", "maybe_executed"] = "sent",
    attempt: int = 1,
    options: Optional[Mapping[str, Any]] = None,
    *,
    tool: str = "",
    resumes: int = 0,
    local_server: bool = False,
    legacy_session: bool = False,
    legacy_stream: bool = False,
    reinitialized: bool = False,
    relisted: bool = False,
    jitter: Optional[float] = None,
) -> RetryDecision:
    """The retry policy after one attempt (`attempt` counts sends so far, 1 after the first)."""
