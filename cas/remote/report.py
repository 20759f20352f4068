"""What every remote report carries: the remote, its URL, the requests sent and the time taken.

`PushReport`, `PullReport`, `RemoteVerifyReport` and `RemoteGcReport` extend `RemoteReport`
with their own counts; `cas.report.report_json` gives the JSON of each (the common fields,
then theirs, then ``request_count``). `cas.remote.s3.session` fills ``requests`` and ``seconds``
on the way out of a run, whatever happened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar


@dataclass
class RemoteReport:
    JSON_EXTRA: ClassVar[tuple[str, ...]] = ("request_count",)

    remote: str
    url: str
    # HTTP requests sent, per S3 operation (retries included), and the run's seconds. Keyword
    # only, so each report's own fields follow the remote and its URL in order.
    requests: dict[str, int] = field(default_factory=dict, kw_only=True)
    seconds: float = field(default=0.0, kw_only=True)

    @property
    def request_count(self) -> int:
        return sum(self.requests.values())
