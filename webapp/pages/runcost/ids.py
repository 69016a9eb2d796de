"""Component ids of the Failures and checkpoints page (runcost-...), built with
:func:`webapp.ids.make`; the shell's URL ids it writes to come from :mod:`webapp.ids`."""

from webapp.ids import URL, URL_WRITTEN, field_ids, make

__all__ = ["PATH", "PREFIX", "URL", "URL_WRITTEN", "error_id", "field_box_id", "field_id", "make"]

PATH = "/runcost"  # the page's URL path (its Page spec, and its URL writer writes only there)
PREFIX = "runcost"
field_id, error_id, field_box_id = field_ids(PREFIX)  # a form field's input, its message slot, its box

RATES = make(PREFIX, "rates")  # html.Datalist: the named published failure rates
NOTICE = make(PREFIX, "notice")
CARDS = make(PREFIX, "cards")  # the optimal intervals, goodput, wall time
CURVE = make(PREFIX, "curve")  # goodput against the checkpoint interval
ELASTIC = make(PREFIX, "elastic")  # wait for a spare node, or continue on fewer
DETAILS = make(PREFIX, "details")  # checkpoint, restart parts, notes, sources
LINK_KEYS = make(PREFIX, "link-keys")  # the keys of a link this page does not read, named
URL_SPEC = make(PREFIX, "url-spec")  # dcc.Store: the URL writer's spec (webapp.urlstate.url_spec)
