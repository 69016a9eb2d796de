"""Component ids of the Sim vs measured page (cmp-...), built with :func:`webapp.ids.make`; the
shell's URL ids it writes to come from :mod:`webapp.ids`."""

from webapp.ids import URL, URL_WRITTEN, make

__all__ = ["PATH", "PREFIX", "URL", "URL_WRITTEN", "make"]

PATH = "/compare"  # the page's URL path (its Page spec, and its URL writer writes only there)
PREFIX = "cmp"  # no form fields: its dropdowns are named below

CMP_NOTICE = make(PREFIX, "notice")
CMP_RUNS = make(PREFIX, "runs")
CMP_STAT = make(PREFIX, "stat")
CMP_FIT = make(PREFIX, "fit")
CMP_RESIDUALS = make(PREFIX, "residuals")
CMP_SIM_VS_MEASURED = make(PREFIX, "sim-vs-measured")
CMP_TABLE = make(PREFIX, "table")
CMP_DDP = make(PREFIX, "ddp")
CMP_ALGORITHM = make(PREFIX, "algorithm")
CMP_INTRO = make(PREFIX, "intro")
CMP_CARDS = make(PREFIX, "cards")
CMP_O = make(PREFIX, "o")
CMP_W = make(PREFIX, "w")
CMP_POINTS = make(PREFIX, "points")
CMP_RMS = make(PREFIX, "rms")
CMP_ERROR_TABLE = make(PREFIX, "error-table")
CMP_DDP_CONFIG = make(PREFIX, "ddp-config")
CMP_DDP_NOTE = make(PREFIX, "ddp-note")
CMP_DDP_OVERLAY = make(PREFIX, "ddp-overlay")
CMP_SPLIT = make(PREFIX, "split")  # which part o and w are fitted on (the rest predicted)
CMP_SPLIT_SHOWN = make(PREFIX, "split-shown")  # the split in words: sizes / launches fitted and predicted
CMP_SCOPE = make(PREFIX, "scope")  # what the comparison shows and does not show
CMP_COVERAGE = make(PREFIX, "coverage")  # card: predicted points inside their interval
CMP_HELD_ERROR = make(PREFIX, "held-error")  # card: median |error| of the predicted points
CMP_GPU = make(PREFIX, "gpu")  # dropdown: preset and which of its nccl-tests logs is fitted
CMP_GPU_NOTE = make(PREFIX, "gpu-note")
CMP_GPU_FIG = make(PREFIX, "gpu-fig")
CMP_GPU_TABLE = make(PREFIX, "gpu-table")
CMP_URL_SPEC = make(PREFIX, "url-spec")  # dcc.Store: the URL writer's spec (webapp.urlstate.url_spec)
