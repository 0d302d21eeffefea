"""Old home of the byte formatter; it now lives in ``course_utils.display`` (kept while modules move over)."""

from course_utils.display import format_bytes

__all__ = ["format_bytes"]
