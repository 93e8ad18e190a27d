"""anchorstream: streaming topic mining with rectified anchor-word inference.

The library is pure: functions take arrays and return arrays or new state. The service that
reads Kafka, serves HTTP and exports metrics lives in the separate ``daemon`` package.
"""

from anchorstream.errors import AnchorstreamError

__version__ = "0.1.0"

__all__ = ["AnchorstreamError", "__version__"]
