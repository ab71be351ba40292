"""mitm-inject.py -- the secret injection of bench/agent-workload.sh as a
mitmproxy addon: a request to INJECT_HOST whose Authorization header holds
INJECT_PLACEHOLDER gets the key in INJECT_KEY_FILE instead; SSE answers are
streamed, not buffered, as an agent needs them.

  mitmdump -s bench/mitm-inject.py   (with the three variables set)
"""
import os

HOST = os.environ["INJECT_HOST"]
PLACEHOLDER = os.environ["INJECT_PLACEHOLDER"]
with open(os.environ["INJECT_KEY_FILE"]) as f:
    KEY = f.readline().strip()


def request(flow):
    auth = flow.request.headers.get("authorization", "")
    if flow.request.pretty_host == HOST and PLACEHOLDER in auth:
        flow.request.headers["authorization"] = auth.replace(PLACEHOLDER, KEY)


def responseheaders(flow):
    if flow.response.headers.get("content-type", "").startswith("text/event-stream"):
        flow.response.stream = True
