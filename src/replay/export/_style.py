"""The page's one stylesheet and the Content-Security-Policy that allows exactly it.

The stylesheet is a constant, so the policy names it by its sha384 hash instead of allowing any
inline style: a ``<style>`` element or ``style`` attribute that came from a rollout would not
apply even if escaping ever failed. Nothing else may load: no script, font, frame, form target or
remote image; images only from ``data:`` URLs, which the page writes only for checked rasters.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Final

__all__ = ["CSP", "CSS"]

CSS: Final = """
:root { color-scheme: light dark; --fg: #1d1f23; --bg: #fdfdfc; --dim: #6a6f78;
  --line: #d9dbe0; --code: #f3f4f6; --user: #2f8a4f; --assistant: #2767b0;
  --system: #8a3fa0; --tool: #4a5a8c; --warn: #a35a00; --error: #b3261e; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e4e6ea; --bg: #17191d; --dim: #9aa0a9; --line: #343841; --code: #22252b;
    --user: #6cc38a; --assistant: #7fb0ee; --system: #c99ae0; --tool: #a2b0de;
    --warn: #e0a45a; --error: #f08a80; }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 72rem; padding: 1.5rem; color: var(--fg);
  background: var(--bg); font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
h1 { font-size: 1.4rem; margin: 0 0 .75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; margin: 2rem 0 .75rem; border-bottom: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 0 0 .4rem; overflow-wrap: anywhere; }
code, pre { font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
code { background: var(--code); padding: 0 .25em; border-radius: 3px; overflow-wrap: anywhere; }
pre { background: var(--code); padding: .6rem .75rem; margin: .3rem 0; border-radius: 4px;
  white-space: pre-wrap; overflow-wrap: anywhere; max-height: 40rem; overflow: auto; }
a { color: var(--assistant); }
.msg > pre { font: inherit; background: none; padding: 0; max-height: none; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0; }
.facts dt { color: var(--dim); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.note { border-left: 3px solid var(--warn); padding: .4rem .75rem; background: var(--code); }
.warn { color: var(--warn); font-weight: 600; }
.label { color: var(--dim); margin: .4rem 0 0; font-size: .9em; }
.msg { border-left: 4px solid var(--line); padding: .5rem 0 .5rem 1rem; margin: 1.25rem 0; }
.msg.role-user { border-color: var(--user); }
.msg.role-assistant { border-color: var(--assistant); }
.msg.role-system, .msg.role-developer { border-color: var(--system); }
.msg.role-tool { border-color: var(--tool); }
.num { color: var(--dim); text-decoration: none; font-weight: 400; }
.role { text-transform: uppercase; letter-spacing: .04em; font-size: .85em; }
.notes { color: var(--dim); margin: 0 0 .4rem; }
details.reasoning { margin: .4rem 0; color: var(--dim); }
details.reasoning > summary { cursor: pointer; font-style: italic; }
details.traceback > summary { cursor: pointer; color: var(--error); }
.call { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem;
  margin: .6rem 0; }
.call-head { margin: 0; font-weight: 600; }
.io { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: .75rem; }
@media (max-width: 50rem) { .io { grid-template-columns: minmax(0, 1fr); } }
.output.superseded { opacity: .65; }
.output.error .label { color: var(--error); font-weight: 600; }
.child { margin: .25rem 0; }
figure.media { margin: .4rem 0; }
figure.media img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--dim); font-style: italic; overflow-wrap: anywhere; }
footer { margin-top: 2.5rem; color: var(--dim); font-size: .85em; }
"""

# sha384: CSP accepts it as well as sha256, and sha256 stays the checkpoint digest's alone.
_CSS_HASH: Final = base64.b64encode(hashlib.sha384(CSS.encode("utf-8")).digest()).decode("ascii")

CSP: Final = (
    "default-src 'none'; "
    f"style-src 'sha384-{_CSS_HASH}'; "
    "img-src data:; "
    "base-uri 'none'; "
    "form-action 'none'"
)
"""The page's Content-Security-Policy, set in a ``<meta http-equiv>`` before anything else."""
