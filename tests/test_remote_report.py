"""cas.remote.report: what every remote report carries, the same way in each."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cas.remote.gc import RemoteGcReport
from cas.remote.pull import PullReport
from cas.remote.push import PushReport
from cas.remote.report import RemoteReport
from cas.remote.verify import RemoteVerifyReport
from cas.report import report_json


@given(
    seconds=st.floats(0, 1e9, allow_nan=False),
    requests=st.dictionaries(st.sampled_from(["GetObject", "PutObject", "ListObjectsV2"]),
                             st.integers(0, 10**6)),
)  # fmt: skip
def test_remote_reports_share_their_common_fields(seconds: float, requests: dict[str, int]) -> None:
    for cls, args in (
        (PushReport, ()),
        (PullReport, ()),
        (RemoteVerifyReport, (False,)),
        (RemoteGcReport, (True, 60.0)),
    ):
        out = report_json(cls("o", "s3://b", *args, requests=requests, seconds=seconds))
        assert out["seconds"] == round(seconds, 3)
        assert out["requests"] == requests and out["request_count"] == sum(requests.values())
        assert isinstance(cls("o", "s3://b", *args), RemoteReport)
        assert list(out)[:4] == ["remote", "url", "requests", "seconds"]
