"""Topic inference from the statistics: rectify, find anchors, recover, correlations; the other
seed methods; the method registry; stable ids (align) and inference on new documents."""
