"""Component ids of the Hangs page (hang-...), built with :func:`webapp.ids.make`; the shell's URL
ids it writes to come from :mod:`webapp.ids`."""

from webapp.ids import URL, URL_WRITTEN, field_ids, make

__all__ = ["PATH", "PREFIX", "URL", "URL_WRITTEN", "error_id", "field_box_id", "field_id", "make"]

PATH = "/hangs"  # the page's URL path (its Page spec, and its URL writer writes only there)
PREFIX = "hang"
field_id, error_id, field_box_id = field_ids(PREFIX)  # a form field's input, its message slot, its box

UPLOAD = make(PREFIX, "upload")
DUMPS = make(PREFIX, "dumps")  # dcc.Upload: flight-recorder dumps, one file per rank
LINKED = make(PREFIX, "linked")  # dcc.Store: the program as the link carries it ("" when it is the case's)
LINK_NOTE = make(PREFIX, "link-note")  # why an edited program is not in the link (too long)
ABOUT = make(PREFIX, "about")  # the picked case's one line
VERDICT = make(PREFIX, "verdict")
NOTICE = make(PREFIX, "notice")  # why nothing was explained (a message naming what to fix)
RANKS = make(PREFIX, "ranks")  # per rank: state, where it blocks, whom it waits for, its first divergent call
GRAPH = make(PREFIX, "graph")  # the wait-for graph
TOOLS = make(PREFIX, "tools")  # dcc.Tabs: what each tool would print
LINK_KEYS = make(PREFIX, "link-keys")  # the keys of a link this page does not read, named
URL_SPEC = make(PREFIX, "url-spec")  # dcc.Store: the URL writer's spec (webapp.urlstate.url_spec)


def tool_id(tool: str) -> str:
    """The text of one tool's tab (nccl, nccl_detail, gloo, gloo_detail, flight)."""
    return make(PREFIX, f"tool-{tool.replace('_', '-')}")
