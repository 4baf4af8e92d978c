"""The HTTP clients of an API model (``models/_clients.py``) and the first attempt outside
tenacity (``HttpModel._attempts``): one client per request in flight, reused afterwards and
closed with the model; retries wait as one ``Retrying`` loop over every attempt."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import pytest

from mmrobust.models._options import parse_options
from mmrobust.models.base import Request
from mmrobust.models.openai_compat import OpenAICompatModel, OpenAIOptions
from mmrobust.status import Status

WAIT_S = 30.0
OK = {"choices": [{"message": {"content": "A"}, "finish_reason": "stop"}]}
REQUEST = Request(sample_id="s1", prompt="Q?\nA. Yes\nB. No", question="Q?", options={"A": "Yes"})


def _model(handler: Callable[[httpx.Request], httpx.Response], **args: str) -> OpenAICompatModel:
    options = parse_options(OpenAIOptions, {"base_url": "http://test.invalid/v1", **args}, "openai")
    return OpenAICompatModel("m", options, transport=httpx.MockTransport(handler))


def test_one_client_per_request_in_flight_reused_afterwards() -> None:
    inside = threading.Barrier(4, timeout=WAIT_S)  # the first 4 requests are in flight at once
    calls: list[int] = []

    def handler(_req: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) <= 4:
            inside.wait()
        return httpx.Response(200, json=OK)

    model = _model(handler)
    statuses: list[Status] = []
    threads = [
        threading.Thread(
            target=lambda: statuses.extend(r.status for r in model.generate([REQUEST]))
        )
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    assert len(model._clients) == 4  # four requests at once: four clients
    statuses += [r.status for r in model.generate([REQUEST] * 6)]  # one after another
    assert len(model._clients) == 4 and len(calls) == 10
    assert statuses == [Status.OK] * 10
    model.close()


def test_close_closes_every_client_and_later_requests_fail() -> None:
    model = _model(lambda _req: httpx.Response(200, json=OK))
    [before] = model.generate([REQUEST])
    [client] = model._clients._clients
    model.close()
    assert before.status is Status.OK and client.is_closed and len(model._clients) == 0
    [after] = model.generate([REQUEST])
    assert after.status is Status.API_ERROR and "closed" in (after.error or "")


@pytest.mark.parametrize(("retries", "waits"), [(3, [0.01, 0.02, 0.04]), (0, [])])
def test_waits_grow_from_the_first_retry_as_one_retry_loop(
    retries: int, waits: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tenacity.wait

    monkeypatch.setattr(tenacity.wait.random, "uniform", lambda _low, high: high)  # no jitter
    replies = [503] * max(retries, 1) + [200]

    def handler(_req: httpx.Request) -> httpx.Response:
        code = replies.pop(0)
        return httpx.Response(code, json=OK if code == 200 else {"error": "busy"})

    model = _model(handler, max_retries=str(retries), backoff_initial="0.01", backoff_max="10")
    sleeps: list[float] = []
    model._sleep = sleeps.append
    [resp] = model.generate([REQUEST])
    assert sleeps == pytest.approx(waits)  # 0.01 * 2**(n-1) after attempt n
    if retries:
        assert resp.status is Status.OK
        assert resp.extra["history"] == ["api_error"] * retries + ["ok"]
    else:  # no retry: the 503 is the answer
        assert resp.status is Status.API_ERROR and resp.extra["history"] == ["api_error"]
