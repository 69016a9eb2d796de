"""The Guides page's component ids, each built from the page's prefix (:func:`webapp.ids.make`)."""

from webapp.ids import make

__all__ = ["PREFIX", "make"]

PREFIX = "guides"

# the four guides' sections (their anchors: /guides#guides-ring)
GUIDE_RING = make(PREFIX, "ring")
GUIDE_CROSSOVER = make(PREFIX, "crossover")
GUIDE_BROADCAST = make(PREFIX, "broadcast")
GUIDE_BUCKETS = make(PREFIX, "buckets")
# their controls and outputs
GUIDES_RING_RANKS = make(PREFIX, "ring-ranks")
GUIDES_RING_STEP = make(PREFIX, "ring-step")
GUIDES_RING_CELLS = make(PREFIX, "ring-cells")
GUIDES_RING_BYTES = make(PREFIX, "ring-bytes")
GUIDES_RING_TEXT = make(PREFIX, "ring-text")
GUIDES_RING_FORMULA = make(PREFIX, "ring-formula")
GUIDES_CROSS_RANKS = make(PREFIX, "cross-ranks")
GUIDES_CROSS_TREE = make(PREFIX, "cross-tree")
GUIDES_CROSS_ALPHA = make(PREFIX, "cross-alpha")
GUIDES_CROSS_BANDWIDTH = make(PREFIX, "cross-bandwidth")
GUIDES_CROSS_GRAPH = make(PREFIX, "cross-graph")
GUIDES_CROSS_SIZE = make(PREFIX, "cross-size")
GUIDES_CROSS_TEXT = make(PREFIX, "cross-text")
GUIDES_BCAST_STEP = make(PREFIX, "bcast-step")
GUIDES_BCAST_TREE = make(PREFIX, "bcast-tree")
GUIDES_BCAST_BYTES = make(PREFIX, "bcast-bytes")
GUIDES_BCAST_TEXT = make(PREFIX, "bcast-text")
GUIDES_BUCKET_MODEL = make(PREFIX, "bucket-model")
GUIDES_BUCKET_O = make(PREFIX, "bucket-o")
GUIDES_BUCKET_W = make(PREFIX, "bucket-w")
GUIDES_BUCKET_T = make(PREFIX, "bucket-t")
GUIDES_BUCKET_GRAPH = make(PREFIX, "bucket-graph")
GUIDES_BUCKET_TEXT = make(PREFIX, "bucket-text")
